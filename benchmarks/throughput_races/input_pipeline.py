"""benchmarks/throughput.py --race=input_pipeline: the pre-training
pipelines against the training step that consumes them."""

import glob
import tempfile
import time

from benchmarks import common
from benchmarks.contestants import synthetic
from benchmarks.throughput_races.shared import FLAGS
from benchmarks.throughput_races.shared import PRECISIONS
from benchmarks.throughput_races.shared import run

LIBRARY = "/usr/share/doc/python3.11/html/_sources/library/*.rst.txt"


def pipeline_race():
    from keras_bert import BertTokenizer
    from keras_bert import data

    paths = sorted(glob.glob(LIBRARY))[: FLAGS.files]
    vocabulary = f"{common.minilm_dir()}/vocab.txt"
    tokenizer = BertTokenizer(vocabulary, lowercase=True)

    def creator():
        return data.PretrainingInstanceCreator(
            tokenizer, max_seq_length=synthetic.SEQUENCE,
            max_predictions_per_seq=synthetic.PREDICTIONS, dupe_factor=1,
            random_seed=12345,
        )  # fmt: skip

    def rate(dataset, warmup=20):
        iterator = iter(dataset)
        for _ in range(warmup):
            next(iterator)
        start, sequences = time.perf_counter(), 0
        for _ in range(FLAGS.batches):
            sequences += int(next(iterator)[0]["token_ids"].shape[0])
        return sequences / (time.perf_counter() - start)

    rates = {}
    with tempfile.TemporaryDirectory() as directory:
        shards = data.output_shard_paths(f"{directory}/train.tfrecord", 4)
        start = time.perf_counter()
        stats = data.write_pretraining_tfrecords(
            creator(), paths, shards, input_format="text", progress=False
        )
        creation_seconds = time.perf_counter() - start
        shards = ",".join(shards)
        rates["tfrecords"] = rate(
            data.pretraining_dataset_from_tfrecords(shards, 16, seed=0)
        )
    text = data.pretraining_dataset_from_text(
        ",".join(paths), creator(), 16, input_format="text"
    )
    rates["text, dynamic masking"] = rate(text)
    training = {
        PRECISIONS[p]: run(f"ours_pretrain_{p}", "train") / synthetic.SEQUENCE
        for p in PRECISIONS
    }
    rows = [
        [name, f"{value:,.0f}"]
        + [", ".join(f"{value / t:.0f}× {p}" for p, t in training.items())]
        for name, value in rates.items()
    ] + [
        [f"training step, {p} (consumer)", f"{t:,.1f}", "1×"]
        for p, t in training.items()
    ]
    header = ["source", "sequences/s", "pipeline / training step"]
    S, P = synthetic.SEQUENCE, synthetic.PREDICTIONS
    return (
        "input_pipeline",
        f"""## Pre-training input pipeline

Machine: {common.machine_description()}.
Command: `python benchmarks/throughput.py --race=input_pipeline --files={FLAGS.files} --batches={FLAGS.batches} --steps={FLAGS.steps}`.
Data: {len(paths)} files of the python3.11-doc library reference, read as
text (one document per file); {stats["instances"]:,} instances of sequence {S} with
{P} predictions, MiniLM's uncased vocabulary (30,522), written to 4
TFRecord shards in {creation_seconds:.0f} s. Pipelines: batch 16,
sequences/s drawn from the iterator over {FLAGS.batches} batches after 20
warm-up batches. Consumer: the pre-training step of
`--race=train` (L4/H512/A8/I2048, batch {synthetic.BATCH}, MLM + NSP),
{FLAGS.steps} timed steps, in the same run.

{chr(10).join(common.table(header, rows))}
""",
    )
