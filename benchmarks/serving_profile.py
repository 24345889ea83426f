"""Where the raw-text SavedModel's serving time goes: threads, streams and
int8 kernels.

The MiniLM-L6-H384 `BertClassifier` (real weights, a random 2-class head:
speed does not depend on the head's values), profiled two ways:

--threads  the export as it is, with `streams=2`, without the remapper's
           forms (`plain`: the model rebuilt without
           `"remapper_serving_graph"`, its blocks' own `fast` inference)
           and (on a CPU with AVX512-BF16 or AMX) with
           `precision="bfloat16"` without and with `streams=2`, under each
           `--onednn` setting of the serving process
           (`TF_ENABLE_ONEDNN_OPTS`: which form serves fastest where
           oneDNN is off), `predict_ids` run as
           TF Serving runs it (a C++ Session, one `Session::Run` a
           request) on SST-2-sized requests (`SHAPES`; it prints the mean
           width of SST-2 dev's requests trimmed to their longest row), in
           a fresh process per thread setting (TensorFlow fixes its pools
           at start-up): intra-op and inter-op threads (1, 1), (2, 2) and
           (1, 2); p50 milliseconds. `--trace` also traces `--calls`
           batch-1 requests at each `--trace_at` setting (default 1,2;
           TensorFlow's step stats): op time per op type, the matmuls'
           share, the ops run.
--matmul   MiniLM's dense shapes at 128 and 4096 rows: float32, Keras' own
           int8 (`ops.matmul(int8, int8)` on per-row quantized inputs),
           TensorFlow's oneDNN int8 kernel (`keras_bert.layers.int8_matmul`)
           and int8 weights dequantized before a float32 matmul.

    python benchmarks/serving_profile.py --threads [--trace] [--calls=100] \
        [--trace_at=1,1 --trace_at=1,2] [--onednn=1,0]
    python benchmarks/serving_profile.py --matmul
"""

import collections
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_bool("threads", False, "Time the thread settings and streams.")
flags.DEFINE_bool("trace", False, "With --threads: where the op time goes.")
flags.DEFINE_multi_string(
    "trace_at", ["1,2"], "With --trace: the `intra,inter` settings traced."
)
flags.DEFINE_integer("calls", 100, "Timed batch-1 calls (batch 32: a fifth).")
flags.DEFINE_string("work_dir", "/tmp/keras_bert_serving_profile", "Exports.")
flags.DEFINE_string("worker", None, "Internal: `intra,inter` of a worker.")
flags.DEFINE_bool("matmul", False, "Time the int8 matmul choices.")
flags.DEFINE_list(
    "onednn",
    ["default"],
    "With --threads: TF_ENABLE_ONEDNN_OPTS of the serving processes, each "
    "setting in turn (`default`: as this process has it).",
)
FLAGS = flags.FLAGS
# The requests timed: batch size -> tokens.
SHAPES = {1: 24, 32: 48}


def classifier():
    import keras_bert

    path = common.minilm_dir()
    model = keras_bert.BertClassifier.from_checkpoint(path, num_classes=2)
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(path)
    return model, keras_bert.BertPreprocessor(tokenizer, sequence_length=128)


def trimmed_widths(preprocessor):
    """The mean width of SST-2 dev's requests of 1 and 32 sentences trimmed
    to their longest row."""
    import numpy as np

    from keras_bert.data.trim_batch import trim_batch

    sentences = common.read_sst2("dev")[0]
    return {
        size: round(float(np.mean([
            trim_batch(preprocessor(sentences[i : i + size]), 1)["token_ids"].shape[1]
            for i in range(0, len(sentences), size)
        ])), 1)
        for size in SHAPES
    }  # fmt: skip


def thread_worker(intra, inter, paths):
    """Times each export's `predict_ids` in a Session with these pools."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exports' tokenizer ops)

    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
    )
    for name, path in paths.items():
        session = tf.compat.v1.Session(graph=tf.Graph(), config=config)
        with session.graph.as_default():
            meta_graph = tf.compat.v1.saved_model.load(session, ["serve"], path)
        signature = meta_graph.signature_def["predict_ids"]
        output = signature.outputs["probabilities"].name
        feeds, inputs = {}, signature.inputs
        for batch, width in SHAPES.items():
            feeds[batch] = {
                inputs[name].name: np.full([batch, width], value, np.int32)
                for name, value in (
                    ("token_ids", 1000), ("segment_ids", 0), ("padding_mask", 1)
                )
            }  # fmt: skip
            for _ in range(5):  # warm-up
                session.run(output, feeds[batch])
            times = []
            for _ in range(
                FLAGS.calls if batch == 1 else max(FLAGS.calls // 5, 5)
            ):
                start = time.perf_counter()
                session.run(output, feeds[batch])
                times.append(time.perf_counter() - start)
            print(
                f"intra {intra} inter {inter} {name:9} batch {batch:2} width "
                f"{width}: p50 {np.median(times) * 1e3:.2f} ms",
                flush=True,
            )
        if FLAGS.trace and f"{intra},{inter}" in FLAGS.trace_at:
            print_op_times(session, output, feeds[1], name, SHAPES[1])
        session.close()


def print_op_times(session, output, feed, name, width):
    """Op time per op type over `--calls` traced requests (step stats)."""
    import tensorflow as tf

    micros, counts = collections.Counter(), collections.Counter()
    options = tf.compat.v1.RunOptions(
        trace_level=tf.compat.v1.RunOptions.FULL_TRACE
    )
    for _ in range(FLAGS.calls):
        run_metadata = tf.compat.v1.RunMetadata()
        session.run(output, feed, options=options, run_metadata=run_metadata)
        for device in run_metadata.step_stats.dev_stats:
            for node in device.node_stats:
                label = node.timeline_label.split("(")[0].split("=")
                op = node.node_name
                if len(label) > 1:
                    op = label[-1].strip().split(" ")[0]
                micros[op] += node.op_end_rel_micros
                counts[op] += 1
    total, runs = sum(micros.values()), FLAGS.calls
    matmuls = sum(t for op, t in micros.items() if "MatMul" in op)
    print(
        f"{name}, batch 1 width {width}, traced: {total / runs / 1e3:.2f} ms of op "
        f"time a request over both threads, {sum(counts.values()) // runs} "
        f"ops; matmuls {100 * matmuls / total:.0f}%"
    )
    for op, us in micros.most_common(12):
        print(f"  {op:32} {us / runs:7.0f} us  ({counts[op] // runs} ops)")


def profile_threads():
    import keras_bert
    from keras_bert.layers.optimizations import ALL
    from keras_bert.serving.plan import cpu_problem

    (model, preprocessor), paths = classifier(), {}
    exports = [("as is", {}), ("2 streams", {"streams": 2})]
    plain = model.get_config()
    plain["backbone"]["config"]["optimizations"] = [
        name for name in ALL if name != "remapper_serving_graph"
    ]
    plain_model = type(model).from_config(plain)
    plain_model.set_weights(model.get_weights())
    if cpu_problem("bfloat16") is None:  # AVX512-BF16 or AMX, oneDNN on
        exports.append(("bfloat16", {"precision": "bfloat16"}))
        exports.append(
            ("bf16 2 streams", {"precision": "bfloat16", "streams": 2})
        )
    for name, options in exports + [("plain", {})]:
        directory = os.path.join(FLAGS.work_dir, name.replace(" ", "_"))
        shutil.rmtree(directory, ignore_errors=True)
        paths[name] = keras_bert.serving.export_saved_model(
            plain_model if name == "plain" else model,
            preprocessor,
            directory,
            **options,
        )
    widths = trimmed_widths(preprocessor)
    print(f"SST-2 dev's mean trimmed width at batch 1 and 32: {widths}")
    with open(os.path.join(FLAGS.work_dir, "paths.json"), "w") as f:
        json.dump(paths, f)
    print("load average before:", os.getloadavg()[0])
    for onednn in FLAGS.onednn:
        env = dict(os.environ)
        if onednn != "default":
            env["TF_ENABLE_ONEDNN_OPTS"] = onednn
        print(f"TF_ENABLE_ONEDNN_OPTS={onednn} in the serving processes")
        for intra, inter in ((1, 1), (2, 2), (1, 2)):
            command = common.script_command(
                __file__,
                f"--worker={intra},{inter}",
                *common.flag_values("calls", "work_dir", "trace"),
                *[f"--trace_at={setting}" for setting in FLAGS.trace_at],
            )
            process = common.run_process(command, env=env)[0]
            print(process.stdout, end="", flush=True)
    print("load average after:", os.getloadavg()[0])


def profile_matmul():
    import numpy as np
    import tensorflow as tf
    from keras import ops

    from keras_bert.layers.int8_matmul import column_sums
    from keras_bert.layers.int8_matmul import int8_matmul
    from keras_bert.layers.int8_matmul import int8_matmul_supported
    from keras_bert.serving.cpu import this_cpu

    # Without oneDNN the oneDNN int8 kernel answers nothing: its column is
    # "-", and Keras' own int8 is the int8 that runs (the serving plan
    # weighs it against float32 there).
    onednn_int8 = int8_matmul_supported()
    print(f"{common.machine_description()}; load {os.getloadavg()[0]:.1f}")
    print(f"CPU as the serving plan reads it: {this_cpu().description}")
    print(
        "| (rows, in) @ (in, out) | float32 ms | Keras int8 | oneDNN int8 "
        "| dequantized | float32 time / oneDNN int8 time "
        "| float32 time / Keras int8 time |\n"
        "|---|---:|---:|---:|---:|---:|---:|"
    )
    rng = np.random.default_rng(0)
    for input_dim, units in ((384, 1152), (384, 1536), (1536, 384)):
        weights = rng.normal(0, 0.05, (input_dim, units)).astype("float32")
        scale = (127.0 / np.abs(weights).max(axis=0)).astype("float32")
        kernel = tf.constant(np.round(weights * scale).astype("int8"))
        scale, sums = tf.constant(scale), column_sums(kernel)
        weights = tf.constant(weights)

        def keras_int8(x):
            # What Keras' Dense._int8_call computes at inference.
            x_max = tf.reduce_max(tf.abs(x), axis=-1, keepdims=True)
            x_scale = 127.0 / tf.maximum(x_max, 1e-7)
            product = ops.matmul(
                tf.cast(tf.round(x * x_scale), tf.int8), kernel
            )
            return tf.cast(product, tf.float32) / (x_scale * scale)

        functions = [
            tf.function(lambda x: tf.matmul(x, weights)),
            tf.function(keras_int8),
            tf.function(lambda x: int8_matmul(x, kernel, scale, sums))
            if onednn_int8
            else None,
            tf.function(
                lambda x: tf.matmul(x, tf.cast(kernel, tf.float32) / scale)
            ),
        ]
        for rows in (128, 4096):
            x = tf.constant(rng.normal(size=(rows, input_dim)), tf.float32)
            times = [[] for _ in functions]
            for function in functions:  # traces
                if function is not None:
                    function(x)
            for _ in range(15):
                for function, spent in zip(functions, times):
                    if function is None:
                        continue
                    start = time.perf_counter()
                    function(x).numpy()
                    spent.append(time.perf_counter() - start)
            ms = [1000 * np.median(t) if t else None for t in times]
            cells = ["-" if m is None else f"{m:.2f}" for m in ms]
            onednn = "-" if ms[2] is None else f"{ms[0] / ms[2]:.2f}"
            print(
                f"| ({rows}, {input_dim}) @ ({input_dim}, {units}) | "
                + " | ".join(cells)
                + f" | {onednn} | {ms[0] / ms[1]:.2f} |",
                flush=True,
            )


def main(argv):
    del argv
    if FLAGS.worker:
        with open(os.path.join(FLAGS.work_dir, "paths.json")) as f:
            intra, inter = map(int, FLAGS.worker.split(","))
            return thread_worker(intra, inter, json.load(f))
    if not (FLAGS.threads or FLAGS.matmul):
        raise app.UsageError("Pass --threads or --matmul.")
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    if FLAGS.threads:
        profile_threads()
    if FLAGS.matmul:
        profile_matmul()


if __name__ == "__main__":
    app.run(main)
