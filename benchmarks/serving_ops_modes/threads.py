"""benchmarks/serving_ops.py --threads: p50 times of the exports at each
thread setting (and with --trace, where their op time goes)."""

import collections
import json
import os
import time

from absl import flags

from benchmarks import common
from benchmarks.contestants import serving as contestants
from benchmarks.serving_ops_modes.exports import SCRIPT
from benchmarks.serving_ops_modes.exports import SHAPES
from benchmarks.serving_ops_modes.exports import _classifier
from benchmarks.serving_ops_modes.exports import _export
from benchmarks.serving_ops_modes.exports import _feed
from benchmarks.serving_ops_modes.exports import _step_ops

FLAGS = flags.FLAGS

THREAD_VARIANTS = (
    "serving_graph", "streams_2", "fast", "bfloat16", "bfloat16_streams_2"
)  # fmt: skip


def threads_worker(intra, inter, paths):
    """Prints each export's p50 `predict_ids` time in a Session with these
    pools (and with --trace, where its op time goes)."""
    import numpy as np
    import tensorflow as tf

    for name, path in paths.items():
        session, signatures = contestants.session(path, (intra, inter))
        signature = signatures["predict_ids"]
        output = signature.outputs["probabilities"].name
        feeds = {b: _feed(signature, b, w) for b, w in SHAPES.items()}
        for batch, feed in feeds.items():
            for _ in range(5):  # warm-up
                session.run(output, feed)
            times = []
            for _ in range(
                FLAGS.calls if batch == 1 else max(FLAGS.calls // 5, 5)
            ):
                start = time.perf_counter()
                session.run(output, feed)
                times.append(time.perf_counter() - start)
            print(
                f"intra {intra} inter {inter} {name:18} batch {batch:2} width "
                f"{SHAPES[batch]}: p50 {np.median(times) * 1e3:.2f} ms",
                flush=True,
            )
        if FLAGS.trace and f"{intra},{inter}" in FLAGS.trace_at:
            micros, counts = collections.Counter(), collections.Counter()
            options = tf.compat.v1.RunOptions(
                trace_level=tf.compat.v1.RunOptions.FULL_TRACE
            )
            for _ in range(FLAGS.calls):
                metadata = tf.compat.v1.RunMetadata()
                session.run(output, feeds[1], options, metadata)
                for op, us in _step_ops(metadata, unnamed=None):
                    micros[op] += us
                    counts[op] += 1
            total, calls = sum(micros.values()), FLAGS.calls
            matmuls = sum(t for op, t in micros.items() if "MatMul" in op)
            print(
                f"{name}, batch 1 width {SHAPES[1]}, traced: "
                f"{total / calls / 1e3:.2f} ms of op time a request over "
                f"all threads, {sum(counts.values()) // calls} ops; matmuls "
                f"{100 * matmuls / total:.0f}%"
            )
            for op, us in micros.most_common(12):
                print(
                    f"  {op:32} {us / calls:7.0f} us  ({counts[op] // calls} ops)"
                )
        session.close()


def profile_threads(skipped):
    """--threads: exports `THREAD_VARIANTS` (those this CPU serves), then
    times them in a worker per thread setting and `--onednn` setting."""
    model, preprocessor = _classifier()
    paths = {
        name: _export(name, model, preprocessor, FLAGS.work_dir)
        for name in THREAD_VARIANTS
        if name not in skipped
    }
    with open(os.path.join(FLAGS.work_dir, "paths.json"), "w") as f:
        json.dump(paths, f)
    print(f"{common.machine_description()}; load {os.getloadavg()[0]:.1f}")
    for onednn in FLAGS.onednn:
        env = dict(os.environ)
        if onednn != "default":
            env["TF_ENABLE_ONEDNN_OPTS"] = onednn
        print(f"TF_ENABLE_ONEDNN_OPTS={onednn} in the serving processes")
        for intra, inter in ((1, 1), (2, 2), (1, 2)):
            command = common.script_command(
                SCRIPT, f"--worker=threads,{intra},{inter}",
                *common.flag_values("calls", "work_dir", "trace"),
                *[f"--trace_at={setting}" for setting in FLAGS.trace_at],
            )  # fmt: skip
            print(common.run_process(command, env=env)[0].stdout, end="")
    print("load average after:", os.getloadavg()[0])
