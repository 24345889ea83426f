"""Pre-training throughput on the same instances: the recipe vs 2 peers.

`recipes/create_pretraining_data.py` writes TFRecords once (the first
`--corpus_files` python3.11-doc reST sources as text, MiniLM's 30,522-token
vocabulary, sequence 128, 20 predictions, dupe factor 1); then each
contestant trains a randomly initialised L4/H512/A8/I2048 BERT
(`bert_small`'s architecture) with batch 32 on them:

  recipe         `python recipes/pretrain.py --preset=bert_small ...`: MLM +
                 NSP, BERT's AdamW with warmup and decay, a checkpoint every
                 interval (as a user runs it).
  keras_hub      keras-hub's `BertMaskedLM` on the same batches read with
                 our TFRecord parser, `keras.optimizers.AdamW(1e-4)`: MLM
                 only (keras-hub has no next-sentence head).
  hf_torch       `transformers.BertForPreTraining` (MLM + NSP) on the same
                 batches (converted before timing; labels -100 off the
                 masked positions), `torch.optim.AdamW`, clipping at 1.0.
  keras_hub_xla  `keras_hub` with `jit_compile=True` (keras-hub's "auto"
                 leaves XLA off on a CPU), nothing else changed.

`--precision=mixed_bfloat16` runs every contestant in bfloat16 with float32
weights: the recipe with `--mixed_precision`, keras-hub under the
`mixed_bfloat16` policy, PyTorch under `torch.autocast` (what
transformers' Trainer runs with `bf16=True`); its records and section are
`pretrain_job_mixed_bfloat16`.

    python benchmarks/pretrain_job.py --rounds=3 --steps=60 --interval=20
    python benchmarks/pretrain_job.py --summarize [--precision=...]
"""

import glob
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

CONTESTANTS = ("recipe", "keras_hub", "hf_torch", "keras_hub_xla")
CORPUS_GLOB = "/usr/share/doc/python3.11/html/_sources/**/*.rst.txt"
SEQ, PREDICTIONS, BATCH = 128, 20, 32
# bert_small's architecture (L4/H512/A8/I2048), keras-hub's arguments.
CONFIG = dict(
    vocabulary_size=30522,
    num_layers=4,
    num_heads=8,
    hidden_dim=512,
    intermediate_dim=2048,
    max_sequence_length=512,
)

flags.DEFINE_integer("rounds", 3, "Rounds; each runs every contestant once.")
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_integer("steps", 60, "Training steps per contestant.")
flags.DEFINE_integer("interval", 20, "Steps per interval; the first untimed.")
flags.DEFINE_integer("corpus_files", 100, "python3.11-doc files to use.")
flags.DEFINE_string("data_dir", None, "TFRecords (made if absent).")
flags.DEFINE_enum("worker", None, CONTESTANTS[1:], "Internal: run one job.")
flags.DEFINE_list("contestants", list(CONTESTANTS), "Recipe first.")
flags.DEFINE_enum(
    "precision", "float32", ["float32", "mixed_bfloat16"], "Every contestant's."
)
flags.DEFINE_string("output_dir", None, "Records; default: the precision's.")
flags.DEFINE_bool("summarize", False, "Only write the table from the JSONs.")
FLAGS = flags.FLAGS


def suffix():
    """float32's records and section are named plainly, others suffixed."""
    return "" if FLAGS.precision == "float32" else "_" + FLAGS.precision


def output_dir():
    default = os.path.join(os.path.dirname(__file__), "pretrain_job" + suffix())
    return FLAGS.output_dir or default


def vocab_file():
    return os.path.join(common.minilm_dir(), "vocab.txt")


def make_tfrecords(data_dir):
    records = os.path.join(data_dir, "train.tfrecord")
    if not os.path.exists(records):
        corpus = sorted(glob.glob(CORPUS_GLOB, recursive=True))
        command = recipe.command(
            "create_pretraining_data",
            input_file=",".join(corpus[: FLAGS.corpus_files]),
            input_format="text", output_file=records, vocab_file=vocab_file(),
            max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS,
            dupe_factor=1, progress=False,
        )  # fmt: skip
        common.run_process(command)
    return records


def batches(records):
    """The first `--steps` batches, as our parser reads them, unshuffled:
    every contestant gets the same batches."""
    from keras_bert.data import pretraining_dataset_from_tfrecords

    dataset = pretraining_dataset_from_tfrecords(
        records, BATCH, SEQ, PREDICTIONS, shuffle=False, repeat=True
    )
    return dataset.take(FLAGS.steps)


def run_keras_hub(records, jit_compile="auto"):
    import keras
    import keras_hub
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(FLAGS.precision)
    backbone = keras_hub.models.BertBackbone(**CONFIG)
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[], jit_compile=jit_compile,
    )  # fmt: skip

    def to_keras_hub(features, labels):
        weights = tf.cast(features["masked_positions"] > 0, tf.float32)
        inputs = {k: features[k] for k in common.INPUTS}
        inputs["mask_positions"] = features["masked_positions"]
        return inputs, labels["mlm_logits"], weights

    seconds = []

    class IntervalTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    model.fit(
        batches(records).map(to_keras_hub),
        epochs=FLAGS.steps // FLAGS.interval, steps_per_epoch=FLAGS.interval,
        callbacks=[IntervalTimer()], verbose=2,
    )  # fmt: skip
    return seconds


def run_hf_torch(records):
    import numpy as np
    import torch
    import transformers

    from benchmarks.contestants import torch_loop

    torch.manual_seed(0)
    model = transformers.BertForPreTraining(
        transformers.BertConfig(
            vocab_size=CONFIG["vocabulary_size"],
            hidden_size=CONFIG["hidden_dim"],
            num_hidden_layers=CONFIG["num_layers"],
            num_attention_heads=CONFIG["num_heads"],
            intermediate_size=CONFIG["intermediate_dim"],
            max_position_embeddings=CONFIG["max_sequence_length"],
        )
    )
    torch_batches = []
    for features, labels in batches(records):
        positions = features["masked_positions"].numpy().reshape(-1)
        mlm = np.full((BATCH, SEQ), -100, np.int64)
        rows, keep = np.repeat(np.arange(BATCH), PREDICTIONS), positions > 0
        mlm[rows[keep], positions[keep]] = (
            labels["mlm_logits"].numpy().reshape(-1)[keep]
        )

        def long(tensor):
            return torch.tensor(tensor.numpy()).long()

        torch_batches.append(
            dict(
                input_ids=long(features["token_ids"]),
                token_type_ids=long(features["segment_ids"]),
                attention_mask=long(features["padding_mask"]),
                labels=torch.tensor(mlm),
                next_sentence_label=long(labels["nsp_logits"]),
            )
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6)
    seconds, start = [], time.perf_counter()
    training = torch_loop.train_on(
        model, torch_batches, optimizer, FLAGS.precision, clipnorm=1.0
    )
    for step, loss in enumerate(training, 1):
        if step % FLAGS.interval == 0:
            seconds.append(time.perf_counter() - start)
            start = time.perf_counter()
            print(f"step {step}: loss {loss:.4f}", flush=True)
    return seconds


def run_job(contestant, records):
    context = common.job_context()
    with tempfile.TemporaryDirectory() as model_dir:
        if contestant == "recipe":
            command = recipe.command(
                "pretrain", input_file=records, vocab_file=vocab_file(),
                preset="bert_small", model_dir=model_dir,
                train_batch_size=BATCH, max_seq_length=SEQ,
                max_predictions_per_seq=PREDICTIONS,
                num_train_steps=FLAGS.steps, num_warmup_steps=FLAGS.steps // 10,
                save_checkpoints_steps=FLAGS.interval, verbose=2,
                mixed_precision=FLAGS.precision != "float32",
            )  # fmt: skip
            process, total = common.run_process(command)
            # The recipe's progress line per interval, from its start to its
            # last step (the checkpoint after it is not counted, as it is
            # not for the peers): "..., 2.41 steps/s".
            rates = re.findall(
                r"([0-9.]+) steps/s", process.stdout + process.stderr
            )
            seconds = [FLAGS.interval / float(rate) for rate in rates]
        else:
            command = common.script_command(
                __file__, f"--worker={contestant}",
                f"--data_dir={os.path.dirname(records)}",
                *common.flag_values("steps", "interval", "precision"),
            )  # fmt: skip
            seconds, total, _ = common.run_worker(command)
    timed = seconds[1:]  # the first interval traces
    rate = FLAGS.interval * len(timed) * BATCH * SEQ / sum(timed)
    return {
        "interval_seconds": [round(s, 2) for s in seconds],
        "tokens_per_second": round(rate, 1),
        "total_seconds": round(total, 1),
        "precision": FLAGS.precision,
        **context,
    }


def summarize():
    import numpy as np

    records = common.by_round(common.read_records(output_dir()))
    paired = common.paired_values(records, "recipe", CONTESTANTS)
    if not paired or paired[0][0] != "recipe":
        raise SystemExit(f"No recipe round in {output_dir()}.")
    rows = []
    for contestant, rounds, values in paired:
        rate, ratio = values(contestant, "tokens_per_second"), "—"
        if contestant != "recipe":
            ratios = values("recipe", "tokens_per_second") / rate
            ratio = (
                f"{np.median(ratios):.2f}; {common.listed(ratios, '{:.2f}')}"
            )
        rows.append(
            [contestant, common.listed(rounds), f"{np.median(rate):.0f}"]
            + [common.listed(rate, "{:.0f}"), ratio]
        )
    commands, *context = common.context_note(records)
    xla = "; keras_hub_xla is keras_hub with `jit_compile=True`"
    markdown = "\n".join(
        [
            "Pre-training throughput on the same TFRecord instances "
            f"({commands}; see the script's docstring): L4/H512/A8 from "
            "random weights, batch 32, sequence 128, 20 predictions, every "
            f"contestant in {FLAGS.precision}; tokens/s after the first "
            "interval; keras-hub trains MLM only (it has no NSP head), and "
            "transformers' `BertForPreTraining` decodes all 128 positions "
            "through its masked-LM head where ours and keras-hub decode only "
            "the 20 masked ones (tokens/s counts 128 tokens per sequence for "
            "everyone). Medians over the rounds each row names, each round "
            "alternating its contestants, each job a fresh process; each "
            "peer is paired with the recipe's job of the same round"
            + xla * ("keras_hub_xla" in [name for name, *_ in paired])
            + ".",
            *context,
            "",
            *common.table(
                ["contestant", "rounds", "tokens/s (median)"]
                + ["tokens/s each round"]
                + ["recipe / contestant (median; each round)"],
                rows,
            ),
        ]
    )
    common.publish("pretrain_job" + suffix(), markdown)


def main(argv):
    del argv
    data_dir = FLAGS.data_dir or os.path.join(
        tempfile.gettempdir(), "keras_bert_pretrain_job"
    )
    if FLAGS.worker:
        records = os.path.join(data_dir, "train.tfrecord")
        run = {
            "keras_hub": run_keras_hub,
            "keras_hub_xla": lambda r: run_keras_hub(r, jit_compile=True),
            "hf_torch": run_hf_torch,
        }[FLAGS.worker]
        return common.print_result(list(run(records)))
    if not FLAGS.summarize:
        records = make_tfrecords(data_dir)
        common.run_rounds(
            lambda contestant, k: run_job(contestant, records),
            tuple(FLAGS.contestants),
            output_dir(),
            FLAGS.first_round,
            FLAGS.rounds,
        )
    summarize()


if __name__ == "__main__":
    app.run(main)
