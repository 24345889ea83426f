"""benchmarks/finetune_job.py --race=raw_text: the raw-text worker and the
table."""

import math
import os
import time

from benchmarks import common
from benchmarks.finetune.jobs import FLAGS
from benchmarks.finetune.jobs import METRICS
from benchmarks.finetune.jobs import PRESET
from benchmarks.finetune.jobs import output_dir


def run_raw_text():
    """`fit`, `evaluate` and `predict` on raw strings: the job's record."""
    import keras

    import keras_bert
    from keras_bert.fine_tuning import glue
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw

    task = glue.get_glue_task(FLAGS.task)
    train = glue.load_glue(task, "train", FLAGS.glue_dir)
    dev = glue.load_glue(task, task.eval_splits[0], FLAGS.glue_dir)

    def texts(examples):
        columns = tuple(examples[name] for name in task.text_features)
        return columns if len(columns) == 2 else columns[0]

    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertClassifier.from_checkpoint(
        PRESET, num_classes=task.num_classes, sequence_length=128
    )
    steps = math.ceil(len(train["label"]) / 32)
    model.compile(
        optimizer=create_adamw(WarmupLinearDecay(2e-5, steps, int(0.1 * steps)))
    )
    seconds = {"start": time.time()}

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seconds["begin"] = time.time()  # after tokenizing and batching

        def on_epoch_end(self, epoch, logs=None):
            seconds["end"] = time.time()

    timer = [EpochTimer()]
    model.fit(
        texts(train), train["label"], 32, seed=FLAGS.seed, callbacks=timer
    )
    start = time.time()
    evaluated = model.evaluate(
        texts(dev), dev["label"], 64, return_dict=True, verbose=0
    )
    outputs = model.predict(texts(dev), batch_size=64, verbose=0)
    metrics = glue.compute_glue_metrics(task, dev["label"], outputs)
    return {
        "num_train_examples": len(train["label"]),
        "train_seconds": round(seconds["end"] - seconds["begin"], 1),
        "fit_seconds": round(start - seconds["start"], 1),
        "prepare_seconds": round(seconds["begin"] - seconds["start"], 1),
        "eval_seconds": round(time.time() - start, 1),
        "metrics": {k: float(v) for k, v in metrics.items()},
        "evaluate": {k: float(v) for k, v in evaluated.items()},
    }


def speed_by_load(speeds, loads, cores):
    """The raw-text speed ratios (`speeds`, per "<task> round <k>") of the
    rounds on a quiet machine and of those that shared it (by `loads`)."""
    groups = {}
    for name, ratio in speeds.items():
        kind = "on a quiet machine"
        if not loads[name]:
            kind = "with no load recorded"
        elif common.shared(loads[name], cores):
            kind = "on a machine shared with other jobs"
        groups.setdefault(kind, []).append((name, ratio, loads[name]))
    sentences = []
    for kind, rounds in sorted(groups.items()):
        names, ratios, spans = zip(*rounds)
        span = sum(spans, [])
        speed = dict.fromkeys(f"{r:.2f}" for r in (min(ratios), max(ratios)))
        sentences.append(
            kind
            + (f" (load average {min(span):g}-{max(span):g})" if span else "")
            + f", {common.listed(names)}: raw-text `fit` at "
            f"{'-'.join(speed)}x the recipe's examples/s"
        )
    trust = len(groups) > 1 and "on a quiet machine" in groups
    return "; ".join(sentences + ["trust the quiet rounds"] * trust)


def raw_text_summary(tasks):
    import numpy as np

    rows = []
    differences, speeds, loads, sources, machines = [], {}, {}, set(), set()
    contestants = ("recipe", "raw_text")
    for task in [t for t in tasks if os.path.isdir(f"{output_dir()}/{t}")]:
        records, values = common.round_values(
            f"{output_dir()}/{task}", contestants
        )
        rounds = sorted({r for _, r in records})
        machines |= {r["machine"] for r in records.values()}
        sources |= {r.get("load_average_source", "") for r in records.values()}
        rate = {c: values(c, "train_examples_per_second") for c in contestants}
        speed = rate["raw_text"] / rate["recipe"]
        for r, ratio in zip(rounds, speed):
            speeds[f"{task} round {r}"], loads[f"{task} round {r}"] = ratio, []
            for job in [records[(c, r)] for c in contestants]:
                # As the job started, or the range read by hand while it ran.
                loads[f"{task} round {r}"] += (
                    [job["load_average"]]
                    if "load_average" in job
                    else job.get("load_average_range", [])
                )
        for name in METRICS[task]:
            ours, theirs = (
                np.array([m[name] for m in values(c, "metrics")])
                for c in ("raw_text", "recipe")
            )
            differences.append(np.abs(ours - theirs).max())
            rows.append(
                [task, name, f"{np.mean(theirs):.4f}", f"{np.mean(ours):.4f}"]
                + [f"{100 * np.mean(ours - theirs):+.2f}"]
                + [f"{np.median(rate[c]):.1f}" for c in contestants]
                + [
                    f"{np.median(speed):.3f} "
                    f"({common.listed(speed, '{:.3f}')})",
                    len(rounds),
                ]
            )
    machines, source = sorted(machines), "; ".join(sorted(sources - {""}))
    same = (
        "Equal metrics to every digit in every round: with the same seed, `fit` "
        "trains on the recipe's very batches."
        if max(differences) == 0
        else f"Metrics differ by up to {100 * max(differences):.2f} points."
    )
    return [
        "`BertClassifier.fit`/`evaluate` on raw strings against `recipes/glue.py` "
        "with the same settings (`python benchmarks/finetune_job.py "
        "--race=raw_text`; see its docstring): all_minilm_l6_v2_en, sequence "
        "128, batch 32, lr 2e-5 with 10% warmup and linear decay, 1 epoch, seed "
        "k in round k, like-length batches cut to their longest row; each job a "
        "fresh process, alternating. Examples/s over the training epoch. "
        f"{same} The recipe runs under `OneDeviceStrategy` with the runner's "
        "callbacks (backup, per-epoch evaluation, progress), which this table "
        "does not ablate. The speed ratio by the machine's load"
        + (f" ({source})" if source else "")
        + f": {speed_by_load(speeds, loads, common.cores(machines[0]))}.",
        *machines,
        "",
        *common.table(
            [
                "task",
                "metric",
                "recipe",
                "raw_text `fit`",
                "difference (points)",
            ]
            + ["recipe examples/s", "raw_text examples/s"]
            + ["speed ratio (raw_text / recipe)", "rounds"],
            rows,
        ),
    ]
