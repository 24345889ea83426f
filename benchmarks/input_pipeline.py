"""Pre-training input pipelines alone vs the pre-training step they feed.

Measures, in one run: the TFRecord pipeline
(`pretraining_dataset_from_tfrecords`: interleaved reads, parallel
parsing, shuffle, batch, prefetch) over instances that
`create_pretraining_data`'s library code writes from real text (the
python3.11-doc library reference, MiniLM's 30,522-token vocabulary,
sequence 128, 20 predictions); the text pipeline with dynamic masking
(`pretraining_dataset_from_text`: sentence pairs made in Python, masks
drawn in the graph) over the same files; and the step that consumes them,
`train_throughput.py`'s `ours_pretrain_fp32` and `ours_pretrain_bf16`
workers (L4/H512, batch 16) in their own processes. A pipeline's rate is
sequences/s drawn from the iterator on all cores with nothing else
running; prefetching overlaps it with training, and the ratio says how
much room there is.

    python benchmarks/input_pipeline.py [--files=400] [--batches=300]

Writes the "input_pipeline" section of benchmarks/RESULTS.md.
"""

import glob
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import synthetic  # noqa: E402

flags.DEFINE_integer("files", 400, "python3.11-doc files to make data from.")
flags.DEFINE_integer("batches", 300, "Timed batches per pipeline.")
flags.DEFINE_integer("batch_size", 16, "Batch size (the training race's).")
flags.DEFINE_integer("train_steps", 8, "Timed steps of each training worker.")
FLAGS = flags.FLAGS

LIBRARY = "/usr/share/doc/python3.11/html/_sources/library/*.rst.txt"


def rate(dataset, batches, warmup=20):
    """Sequences/s drawn from `dataset` after `warmup` batches."""
    iterator = iter(dataset)
    for _ in range(warmup):
        next(iterator)
    start, sequences = time.perf_counter(), 0
    for _ in range(batches):
        sequences += int(next(iterator)[0]["token_ids"].shape[0])
    return sequences / (time.perf_counter() - start)


def training_rate(worker):
    """Sequences/s of a `train_throughput.py` worker's step."""
    script = os.path.join(os.path.dirname(__file__), "train_throughput.py")
    command = common.script_command(
        script, f"--worker={worker}", f"--steps={FLAGS.train_steps}"
    )
    return common.run_worker(command)[0] / synthetic.SEQUENCE


def main(argv):
    del argv
    from keras_bert import BertTokenizer
    from keras_bert import data

    paths = sorted(glob.glob(LIBRARY))[: FLAGS.files]
    if not paths:
        raise FileNotFoundError("`apt-get install python3.11-doc` first.")
    tokenizer = BertTokenizer(
        os.path.join(common.minilm_dir(), "vocab.txt"), lowercase=True
    )
    def creator():
        return data.PretrainingInstanceCreator(
            tokenizer,
            max_seq_length=synthetic.SEQUENCE,
            max_predictions_per_seq=synthetic.PREDICTIONS,
            dupe_factor=1,
            random_seed=12345,
        )

    rates = {}
    with tempfile.TemporaryDirectory() as directory:
        outputs = data.output_shard_paths(f"{directory}/train.tfrecord", 4)
        start = time.perf_counter()
        stats = data.write_pretraining_tfrecords(
            creator(), paths, outputs, input_format="text", progress=False
        )
        creation_seconds = time.perf_counter() - start
        rates["tfrecords"] = rate(
            data.pretraining_dataset_from_tfrecords(
                ",".join(outputs), FLAGS.batch_size, seed=0
            ),
            FLAGS.batches,
        )
    rates["text, dynamic masking"] = rate(
        data.pretraining_dataset_from_text(
            ",".join(paths), creator(), FLAGS.batch_size, input_format="text"
        ),
        FLAGS.batches,
    )
    training = {
        "float32": training_rate("ours_pretrain_fp32"),
        "mixed_bfloat16": training_rate("ours_pretrain_bf16"),
    }
    rows = [
        f"| {name} | {value:,.0f} | "
        + ", ".join(f"{value / t:.0f}× {p}" for p, t in training.items())
        + " |"
        for name, value in rates.items()
    ] + [
        f"| training step, {precision} (consumer) | {value:,.1f} | 1× |"
        for precision, value in training.items()
    ]
    S, P, B = synthetic.SEQUENCE, synthetic.PREDICTIONS, FLAGS.batch_size
    markdown = f"""## Pre-training input pipeline

Machine: {common.machine_description()}.
Command: `python benchmarks/input_pipeline.py --files={FLAGS.files} --batches={FLAGS.batches}`.
Data: {len(paths)} files of the python3.11-doc library reference, read as
text (one document per file); {stats["instances"]:,} instances of sequence {S} with
{P} predictions, MiniLM's uncased vocabulary (30,522), written to 4
TFRecord shards in {creation_seconds:.0f} s. Pipelines: batch {B},
sequences/s drawn from the iterator over {FLAGS.batches} batches after 20
warm-up batches. Consumer: the pre-training step of
`benchmarks/train_throughput.py` (L4/H512/A8/I2048, batch {synthetic.BATCH}, MLM + NSP),
{FLAGS.train_steps} timed steps, in the same run.

| source | sequences/s | pipeline / training step |
|---|---|---|
{chr(10).join(rows)}
"""
    common.update_results("input_pipeline", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
