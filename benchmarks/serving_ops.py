"""What TensorFlow runs for each serving export: ops after grappler, outputs
against the reference, and time on SST-2 dev, each variant side by side.

The MiniLM-L6-H384 `BertClassifier` (real weights, a random 2-class head)
exported as each serving variant (`VARIANTS`), every export loaded as TF
Serving's loader does (`tf.compat.v1.saved_model.load` into a Session: its
grappler config, TensorFlow's default thread pools unless the variant
documents others), each in a fresh process:

- ops: one batch-1 `predict_ids` request of SST-2 dev's mean trimmed width
  (24 tokens), traced: the ops the executor ran (step stats; `Const`,
  `_Arg`, `_Retval`, `NoOp` counted apart), the op kinds of the graph after
  grappler (partition graphs) with the fused kernels' `fused_ops`, and the
  op types the SavedModel stores (what a server must know);
- outputs: `predict_ids` on SST-2 dev's first 64 sentences, against the
  same classifier computed by the `reference` implementation
  (`optimizations=()`) in Keras: max |probability difference|;
- time (`--rounds`, paired: the variants alternate in each round, a fresh
  process each): `serving_default` on SST-2 dev's sentences as requests of
  1 (the first `--sentences`, sequential) and of 32 (all 872):
  examples/s, and each variant's ratio to `fast` per round.

Variants: `fast` (the export before `serving_graph`: the block's `fast`
implementation, Keras' layers, variables), `streams_2`
(`export_saved_model(streams=2)`: `serving_graph_streams`, served with 1
intra-op and 2 inter-op threads), `streams_2_without_forms` (the same
without `"remapper_serving_graph"`: the block's `streams` implementation,
Keras' layers, what `streams=2` exported before `serving_graph_streams`),
`int8` (`quantize="int8"`), `int8_calibrated` (the same calibrated on
the first `CALIBRATION_SENTENCES` SST-2 train sentences:
`serving_graph_int8_calibrated`), `serving_graph` (the default export:
the `serving_graph` implementation, weights frozen into constants),
`bfloat16` (`precision="bfloat16"`: `serving_graph_bfloat16`, its dense
matmuls in bfloat16; needs a CPU with AVX512-BF16 or AMX),
`bfloat16_streams_2` (`precision="bfloat16", streams=2`:
`serving_graph_streams_bfloat16`, threads as `streams_2`) and
`serving_graph_variables` (the same reading variables), the latter also with
`TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1` (`..._assume_frozen`). Fused kernels
that run in bfloat16 (`T`) are listed as `...[bfloat16]`, and every op
the graph runs in bfloat16 after grappler is counted, with the casts to
and from it: a bfloat16 matmul that grappler cast back to float32 would
show as a float32 kernel.

A variant whose option this CPU does not serve (int8 or bfloat16, where
the serving plan refuses it: `keras_bert.serving.plan.cpu_problem`) is
left out, and the section says why. Run with `TF_ENABLE_ONEDNN_OPTS=0` (in
its own `--results_section`) for the forms on TensorFlow's Eigen kernels:
what an AVX2-only CPU runs by default.

    python benchmarks/serving_ops.py [--rounds=3] [--sentences=200]

Two profiles instead of the race (printed, nothing written):

`--threads`: p50 milliseconds of `predict_ids` on SST-2-sized requests
(`SHAPES`: batch 1 of 24 tokens and batch 32 of 48, SST-2 dev's mean
widths trimmed to the longest row) of `THREAD_VARIANTS` at intra-op and
inter-op threads (1, 1), (2, 2) and (1, 2), a fresh process per setting
(TensorFlow fixes its pools at start-up), under each `--onednn` setting
of the serving processes. `--trace` also traces `--calls` batch-1
requests at each `--trace_at` setting (step stats): op time per op type,
the matmuls' share, the ops run.

`--matmul`: MiniLM's dense shapes at 128 and 4096 rows: float32, Keras'
own int8 (`ops.matmul(int8, int8)` on per-row quantized inputs),
TensorFlow's oneDNN int8 kernel (`keras_bert.layers.int8_matmul`) and
int8 weights dequantized before a float32 matmul.

    python benchmarks/serving_ops.py --threads [--trace] [--calls=100] \
        [--trace_at=1,1 --trace_at=1,2] [--onednn=1,0]
    python benchmarks/serving_ops.py --matmul

`--accuracy --classifier=DIR` (section "serving_precision", record
`benchmarks/serving_precision/record.json`): accuracy of each serving
precision. A `recipes/glue.py --task=sst2` model directory (its
`best.weights.h5`; MiniLM-L6-H384 fine-tuned by the recipe, e.g.
`--epochs=1 --learning_rate=5e-5`) exported as each of `--precisions`
(`PRECISIONS`: the default float32 export, `precision="bfloat16"`,
`quantize="int8"`), loaded in a Session as above, its `serving_default`
run on every SST-2 dev sentence in requests of 32: dev accuracy and its
difference from the float32 export's (goal: within 0.5 points), the share
of sentences labelled as the float32 export labels them, and the max and
mean |probability - the float32 Keras model's| (`classifier.predict`).
The bfloat16 export is refused on a CPU without AVX512-BF16 or AMX
(`--precisions=float32,int8` there).

    python benchmarks/serving_ops.py --accuracy --classifier=DIR
"""

import collections
import contextlib
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import serving as contestants  # noqa: E402

flags.DEFINE_integer("rounds", 3, "Paired timing rounds (0: ops only).")
flags.DEFINE_integer("sentences", 200, "Batch-1 requests timed per job.")
flags.DEFINE_string("work_dir", "/tmp/keras_bert_serving_ops", "Exports.")
flags.DEFINE_string(
    "worker", None, "Internal: `ops|time,VARIANT` or `threads,INTRA,INTER`."
)
flags.DEFINE_bool("threads", False, "Profile the thread settings instead.")
flags.DEFINE_bool("trace", False, "With --threads: where the op time goes.")
flags.DEFINE_multi_string(
    "trace_at", ["1,2"], "With --trace: the `intra,inter` settings traced."
)
flags.DEFINE_integer("calls", 100, "Timed batch-1 calls (batch 32: a fifth).")
flags.DEFINE_list(
    "onednn",
    ["default"],
    "With --threads: TF_ENABLE_ONEDNN_OPTS of the serving processes, each "
    "setting in turn (`default`: as this process has it).",
)
flags.DEFINE_bool("matmul", False, "Time the int8 matmul choices instead.")
flags.DEFINE_bool("accuracy", False, "Score the serving precisions instead.")
flags.DEFINE_string(
    "classifier", None, "--accuracy: a recipe's model_dir or best.weights.h5."
)
flags.DEFINE_string(
    "init_checkpoint",
    None,
    "--accuracy: the checkpoint it was fine-tuned from (default: MiniLM).",
)
flags.DEFINE_list("precisions", None, "--accuracy: default all PRECISIONS.")
flags.DEFINE_string("glue_dir", common.GLUE, "--accuracy: GLUE data.")
flags.DEFINE_string(
    "record",
    os.path.join(os.path.dirname(__file__), "serving_precision", "record.json"),
    "--accuracy: where the record goes.",
)
FLAGS = flags.FLAGS

# Each exported variant: `export_saved_model`'s options (`calibration_texts`
# filled in by `_export`) and whether its blocks drop
# "remapper_serving_graph" (`fast`: the block's fast implementation).
EXPORTS = {
    "fast": ({}, True),
    "streams_2": ({"streams": 2}, False),
    "streams_2_without_forms": ({"streams": 2}, True),
    "int8": ({"quantize": "int8"}, False),
    "int8_calibrated": ({"quantize": "int8", "calibration_texts": None}, False),
    "serving_graph": ({}, False),
    "bfloat16": ({"precision": "bfloat16"}, False),
    "bfloat16_streams_2": ({"precision": "bfloat16", "streams": 2}, False),
    "serving_graph_variables": ({}, False),
}
VARIANTS = (*EXPORTS, "serving_graph_variables_assume_frozen")
# (intra-op, inter-op) threads; 0: TensorFlow's default (the cores).
THREADS = {
    "streams_2": (1, 2),
    "streams_2_without_forms": (1, 2),
    "bfloat16_streams_2": (1, 2),
}
ENV = {
    "serving_graph_variables_assume_frozen": "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"
}
# The CPU need (`keras_bert.serving.plan.CPU_NEEDS`) of each variant that
# has one.
NEEDS = {
    "int8": "int8",
    "int8_calibrated": "int8",
    "bfloat16": "bfloat16",
    "bfloat16_streams_2": "bfloat16",
}
EXPORT_OF = {"serving_graph_variables_assume_frozen": "serving_graph_variables"}
OUTPUT_SENTENCES = 64
CALIBRATION_SENTENCES = 256  # as benchmarks/serving.py's default
BOOKKEEPING = ("Const", "_Arg", "_Retval", "NoOp")
# --threads: the requests timed (batch size -> tokens) and the exports.
SHAPES = {1: 24, 32: 48}
THREAD_VARIANTS = (
    "serving_graph", "streams_2", "fast", "bfloat16", "bfloat16_streams_2"
)  # fmt: skip


# --accuracy: precision -> export_saved_model's options; the goal.
PRECISIONS = {
    "float32": {},
    "bfloat16": {"precision": "bfloat16"},
    "int8": {"quantize": "int8"},
}
GOAL_POINTS = 0.5
# What the record keeps of the recipe's results.json: how it was trained.
TRAINING = ("task", "epochs", "learning_rate", "batch_size", "seed")


# === Exports (driver) ===


def _classifier(optimizations=None):
    import keras_bert

    path = common.minilm_dir()
    kwargs = {} if optimizations is None else {"optimizations": optimizations}
    model = keras_bert.BertClassifier.from_checkpoint(
        path, num_classes=2, **kwargs
    )
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(path), sequence_length=128
    )
    return model, preprocessor


def _export(name, model, preprocessor, directory):
    from keras_bert.layers.optimizations import ALL
    from keras_bert.serving import export_saved_model
    from keras_bert.serving.plan import plan_export

    options, without_forms = EXPORTS[name]
    options, patch = dict(options), contextlib.nullcontext()
    if without_forms:
        model = _with_optimizations(
            model, [n for n in ALL if n != "remapper_serving_graph"]
        )
    if "calibration_texts" in options:
        sentences = common.read_sst2("train")[0]
        options["calibration_texts"] = sentences[:CALIBRATION_SENTENCES]
    if name == "serving_graph_variables":
        patch = mock.patch(
            "keras_bert.serving.export.plan_export",
            functools.partial(plan_export, frozen=False),
        )
    with patch:
        return export_saved_model(
            model, preprocessor, os.path.join(directory, name), **options
        )


def _with_optimizations(model, optimizations):
    """`model` rebuilt with its backbone's `optimizations`, same weights."""
    config = model.get_config()
    backbone = config["backbone"]
    backbone.get("config", backbone)["optimizations"] = list(optimizations)
    copy = type(model).from_config(config)
    copy.set_weights(model.get_weights())
    return copy


def _reference_probabilities(model, inputs):
    import numpy as np

    reference = _with_optimizations(model, ())
    return _softmax(np.asarray(reference(inputs, training=False)))


def _softmax(logits):
    """Probabilities of `logits`, in float64."""
    import numpy as np

    logits = logits.astype("float64")
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# === Workers ===


def ops_worker(name, path, inputs_path):
    """Ops run per request, kinds after grappler, stored op types, and the
    probabilities of the saved inputs."""
    import numpy as np
    import tensorflow as tf

    from keras_bert.serving import saved_model_op_types

    session, signatures = contestants.session(path, THREADS.get(name, (0, 0)))
    signature = signatures["predict_ids"]
    output = signature.outputs["probabilities"].name
    names = {k: v.name for k, v in signature.inputs.items()}
    one = _feed(signature, 1, SHAPES[1])
    for _ in range(3):
        session.run(output, one)
    options = tf.compat.v1.RunOptions(
        trace_level=tf.compat.v1.RunOptions.FULL_TRACE,
        output_partition_graphs=True,
    )
    metadata = tf.compat.v1.RunMetadata()
    session.run(output, one, options=options, run_metadata=metadata)
    run = collections.Counter(op for op, _ in _step_ops(metadata))
    kinds, fused = collections.Counter(), collections.Counter()
    bfloat16, casts = collections.Counter(), collections.Counter()
    for graph in metadata.partition_graphs:
        for node in graph.node:
            kinds[node.op] += 1
            dtype = _dtype(node, "T")
            if node.op.startswith("_"):
                extra = list(node.attr["fused_ops"].list.s)
                kind = node.op + "".join(f"+{s.decode()}" for s in extra)
                fused[kind + ("[bfloat16]" if dtype == "bfloat16" else "")] += 1
            if dtype == "bfloat16":
                bfloat16[node.op] += 1
            if node.op == "Cast" and "bfloat16" in (
                _dtype(node, "SrcT"),
                _dtype(node, "DstT"),
            ):
                casts[f"{_dtype(node, 'SrcT')}->{_dtype(node, 'DstT')}"] += 1
    saved = np.load(inputs_path)
    probabilities = session.run(output, {names[k]: saved[k] for k in names})
    return {
        "ops_run": sum(run.values()),
        "ops_run_compute": sum(
            n for op, n in run.items() if op not in BOOKKEEPING
        ),
        "ops_run_kinds": dict(run),
        "graph_kinds": dict(kinds),
        "fused": dict(fused),
        "bfloat16_kinds": dict(bfloat16),
        "bfloat16_casts": dict(casts),
        "saved_op_types": saved_model_op_types(path),
        "probabilities": probabilities.tolist(),
    }


def _feed(signature, batch, width):
    """A `predict_ids` feed of `batch` rows of `width` real tokens."""
    import numpy as np

    values = {"token_ids": 1000, "segment_ids": 0, "padding_mask": 1}
    return {
        signature.inputs[name].name: np.full([batch, width], value, np.int32)
        for name, value in values.items()
    }


def _step_ops(metadata, unnamed="?"):
    """`(op type, microseconds)` of each op a traced run executed (step
    stats; where the timeline names no type, `unnamed`, or with None the
    node's name)."""
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            label = node.timeline_label.split("(")[0].split("=")
            op = label[-1].strip().split(" ")[0] if len(label) > 1 else None
            op = op or unnamed or node.node_name
            yield op, node.op_end_rel_micros


def _dtype(node, attribute):
    """The dtype name of a node's type attribute, or `""`."""
    import tensorflow as tf

    value = node.attr[attribute].type
    return tf.as_dtype(value).name if value else ""


def time_worker(name, path):
    """examples/s of `serving_default` on SST-2 dev, batch 1 and 32."""
    session, signatures = contestants.session(path, THREADS.get(name, (0, 0)))
    signature = signatures["serving_default"]
    output = signature.outputs["label_id"].name
    text = signature.inputs["text"].name
    sentences = common.read_sst2("dev")[0]
    result = {}
    for size, chosen in ((1, sentences[: FLAGS.sentences]), (32, sentences)):
        latencies, _ = contestants.serve_requests(
            lambda request: session.run(output, {text: request}),
            contestants.request_batches(chosen, size),
            warmup=5,
        )
        key = f"batch{size}_examples_per_second"
        result[key] = len(chosen) / sum(latencies)
    return result


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


# === Driver ===


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
                __file__, f"--worker=threads,{intra},{inter}",
                *common.flag_values("calls", "work_dir", "trace"),
                *[f"--trace_at={setting}" for setting in FLAGS.trace_at],
            )  # fmt: skip
            print(common.run_process(command, env=env)[0].stdout, end="")
    print("load average after:", os.getloadavg()[0])


def profile_matmul():
    """--matmul: the int8 matmul choices against float32, a table."""
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


def _run(mode, name, paths):
    env = dict(os.environ)
    if name in ENV:
        env[ENV[name]] = "1"
    command = common.script_command(
        __file__, f"--worker={mode},{name}", *common.flag_values(
            "work_dir", "sentences"
        )
    )  # fmt: skip
    return common.run_worker(command, env=env)[0]


def _fused_list(fused):
    return ", ".join(f"{op} ×{n}" for op, n in sorted(fused.items())) or "none"


# === --accuracy ===


def classifier_and_preprocessor():
    import keras_bert

    classifier, tokenizer = contestants.fine_tuned(
        FLAGS.classifier, FLAGS.init_checkpoint or common.minilm_dir()
    )
    return classifier, keras_bert.BertPreprocessor(tokenizer, 128)


def keras_probabilities(classifier, preprocessor, sentences):
    """The float32 Keras model's probabilities, float64."""
    import numpy as np

    requests = contestants.request_batches(sentences, 32)
    return _softmax(
        np.concatenate(
            [classifier.predict(preprocessor(r), verbose=0) for r in requests]
        )
    )


def served_probabilities(path, sentences):
    """`serving_default`'s probabilities from a TF1 Session, as TF Serving
    runs the export."""
    import numpy as np

    session, signatures = contestants.session(path, (0, 0))
    signature = signatures["serving_default"]
    output = signature.outputs["probabilities"].name
    text = signature.inputs["text"].name
    probabilities = np.concatenate(
        [
            session.run(output, {text: r})
            for r in contestants.request_batches(sentences, 32)
        ]
    )
    session.close()
    return probabilities.astype("float64")


def training_config():
    """The recipe's settings, from `<classifier>/results.json` (if any)."""
    path = os.path.join(
        os.path.dirname(contestants.weights_path(FLAGS.classifier)),
        "results.json",
    )
    if not os.path.exists(path):
        return None
    config = common.read_record(path)["config"]
    return {name: config.get(name) for name in TRAINING}


def measure_accuracy():
    import numpy as np

    from keras_bert.serving import export_saved_model

    sentences, gold = common.read_sst2("dev", FLAGS.glue_dir)
    gold = np.asarray(gold)
    classifier, preprocessor = classifier_and_preprocessor()
    expected = keras_probabilities(classifier, preprocessor, sentences)
    work_dir = tempfile.mkdtemp(prefix="serving_precision_")
    variants = {}
    served = {}
    for name in FLAGS.precisions or PRECISIONS:
        path = export_saved_model(
            classifier,
            preprocessor,
            os.path.join(work_dir, name),
            labels=["negative", "positive"],
            **PRECISIONS[name],
        )
        served[name] = served_probabilities(path, sentences)
        difference = np.abs(served[name] - expected)
        variants[name] = {
            "accuracy": float((served[name].argmax(-1) == gold).mean()),
            "max_probability_difference": float(difference.max()),
            "mean_probability_difference": float(difference.mean()),
        }
    reference = served["float32"].argmax(-1)
    for name, result in variants.items():
        result["labels_as_float32"] = float(
            (served[name].argmax(-1) == reference).mean()
        )
    return {
        "classifier": FLAGS.classifier,
        "training": training_config(),
        "sentences": len(sentences),
        "keras_float32_accuracy": float((expected.argmax(-1) == gold).mean()),
        "variants": variants,
        **common.job_context(),
    }


def accuracy_summary(record):
    variants = record["variants"]
    reference = variants["float32"]["accuracy"]
    training = record["training"]
    trained = " ".join(
        ["recipes/glue.py"]
        + [f"--{name}={value}" for name, value in (training or {}).items()]
    )
    rows = []
    for name, result in variants.items():
        points = 100 * (result["accuracy"] - reference)
        goal = "" if name == "float32" else (
            "met" if abs(points) <= GOAL_POINTS else "**missed**"
        )  # fmt: skip
        rows.append(
            f"| `{name}` | {100 * result['accuracy']:.2f} | {points:+.2f} "
            f"| {goal} | {100 * result['labels_as_float32']:.2f} | "
            f"{result['max_probability_difference']:.1e} | "
            f"{result['mean_probability_difference']:.1e} |"
        )
    return "\n".join(
        [
            "## Serving precisions: accuracy of each export",
            "",
            f"MiniLM-L6-H384 fine-tuned on SST-2 by `{trained}` "
            f"(`{record['classifier']}`), exported as float32 (the "
            'default), `precision="bfloat16"` and `quantize="int8"`, '
            "each loaded in a TF1 Session as TF Serving loads it and run "
            f"on the {record['sentences']} SST-2 dev sentences in requests "
            f"of 32. Goal: accuracy within {GOAL_POINTS} points of "
            "the float32 export's. Labels as float32's: the share of "
            "sentences each export labels as the float32 export does. "
            "|Δp|: |probability − the float32 Keras model's "
            "(`classifier.predict`)|, over every sentence and class; the "
            "Keras model's accuracy is "
            f"{100 * record['keras_float32_accuracy']:.2f}.",
            "",
            "| export | SST-2 dev accuracy (%) | − float32 (points) | goal "
            "| labels as float32's (%) | max \\|Δp\\| | mean \\|Δp\\| |",
            "|---|---:|---:|---|---:|---:|---:|",
            *rows,
            "",
            f"Command: `{record['command']}`. Machine: {record['machine']}.",
        ]
    )


def main(argv):
    del argv
    if FLAGS.accuracy:
        if not FLAGS.classifier:
            raise app.UsageError(
                "Pass --classifier=DIR: a recipes/glue.py --task=sst2 "
                "model_dir (see this script's docstring)."
            )
        record = measure_accuracy()
        common.write_record(FLAGS.record, record)
        return common.publish("serving_precision", accuracy_summary(record))
    if FLAGS.matmul:
        return profile_matmul()
    if FLAGS.worker:
        mode, name = FLAGS.worker.split(",", 1)
        with open(os.path.join(FLAGS.work_dir, "paths.json")) as f:
            paths = json.load(f)
        if mode == "threads":
            return threads_worker(*map(int, name.split(",")), paths)
        path = paths[EXPORT_OF.get(name, name)]
        if mode == "ops":
            inputs = os.path.join(FLAGS.work_dir, "inputs.npz")
            return common.print_result(ops_worker(name, path, inputs))
        return common.print_result(time_worker(name, path))

    import numpy as np

    from keras_bert.serving.cpu import this_cpu
    from keras_bert.serving.plan import cpu_problem

    global VARIANTS
    skipped = {
        name: cpu_problem(NEEDS[name]) for name in VARIANTS if name in NEEDS
    }
    skipped = {name: why for name, why in skipped.items() if why}
    VARIANTS = tuple(name for name in VARIANTS if name not in skipped)
    shutil.rmtree(FLAGS.work_dir, ignore_errors=True)
    os.makedirs(FLAGS.work_dir)
    if FLAGS.threads:
        return profile_threads(skipped)
    model, preprocessor = _classifier()
    paths = {}
    for name in VARIANTS:
        if name not in EXPORT_OF:
            paths[name] = _export(name, model, preprocessor, FLAGS.work_dir)
    with open(os.path.join(FLAGS.work_dir, "paths.json"), "w") as f:
        json.dump(paths, f)
    from keras_bert.data.trim_batch import trim_batch

    inputs = trim_batch(
        preprocessor(common.read_sst2("dev")[0][:OUTPUT_SENTENCES]), 1
    )
    inputs = {k: np.asarray(v) for k, v in inputs.items()}
    np.savez(os.path.join(FLAGS.work_dir, "inputs.npz"), **inputs)
    expected = _reference_probabilities(model, inputs)

    machine = common.machine_description()
    ops = {name: _run("ops", name, paths) for name in VARIANTS}
    rows = []
    for name in VARIANTS:
        result = ops[name]
        error = np.abs(np.asarray(result["probabilities"]) - expected).max()
        rows.append(
            [f"`{name}`", result["ops_run"], result["ops_run_compute"]]
            + [sum(result["graph_kinds"].values())]
            + [_fused_list(result["fused"]), f"{error:.1e}"]
        )
    lines = [
        "## Serving exports: the ops TensorFlow runs, outputs, time",
        "",
        "MiniLM-L6-H384 `BertClassifier` exports loaded in a TF1 Session "
        "(as TF Serving's loader does); one batch-1 `predict_ids` request "
        "of 24 tokens traced. Ops run: every op the executor ran (step "
        f"stats), and without {', '.join(f'`{b}`' for b in BOOKKEEPING)}. "
        "Graph nodes: the partition graph after grappler. Error: max "
        f"|probability - reference| on SST-2 dev's first {OUTPUT_SENTENCES} "
        "sentences, the reference being the same classifier with "
        "`optimizations=()` in Keras.",
        "",
        *common.table(
            ["variant", "ops run", "ops run, without bookkeeping"]
            + ["graph nodes", "fused kernels after grappler", "error"],
            rows,
            rule=["---", "---:", "---:", "---:", "---", "---:"],
        ),
        "",
    ]
    if skipped:
        lines += [
            "Not exported here (the serving plan refuses them on this CPU): "
            + "; ".join(f"`{name}`: {why}" for name, why in skipped.items()),
            "",
        ]
    for name in VARIANTS:
        if ops[name]["bfloat16_kinds"]:
            lines += [
                f"Ops `{name}` runs in bfloat16 after grappler: "
                + ", ".join(
                    f"{op} ×{n}"
                    for op, n in sorted(ops[name]["bfloat16_kinds"].items())
                )
                + "; casts: "
                + ", ".join(
                    f"{cast} ×{n}"
                    for cast, n in sorted(ops[name]["bfloat16_casts"].items())
                )
                + ".",
                "",
            ]
    lines += [
        "Op types each SavedModel stores (what a server must know):",
        "",
    ]
    stored = {name: set(ops[name]["saved_op_types"]) for name in VARIANTS}
    common_ops = set.intersection(*stored.values())
    lines.append(f"- every variant: {', '.join(sorted(common_ops))}")
    for name in VARIANTS:
        if name in EXPORT_OF:
            continue
        extra = sorted(stored[name] - common_ops)
        lines.append(f"- `{name}` also: {', '.join(extra) or 'nothing'}")

    if FLAGS.rounds:
        records = {}
        loads = []
        for k in range(FLAGS.rounds):
            shift = k % len(VARIANTS)
            for name in VARIANTS[shift:] + VARIANTS[:shift]:
                loads.append(os.getloadavg()[0])
                records[(name, k)] = _run("time", name, paths)
                print(name, k, records[(name, k)], flush=True)
        lines += [
            "",
            "`serving_default` on SST-2 dev's sentences (batch 1: the first "
            f"{FLAGS.sentences}, one request after the other; batch 32: all "
            f"872), {FLAGS.rounds} paired rounds, a fresh process per job: "
            "median examples/s, and the median over rounds of each "
            "variant's ratio to `fast` in the same round.",
            "",
        ]
        rows = []
        for name in VARIANTS:
            cells = []
            for size in (1, 32):
                key = f"batch{size}_examples_per_second"
                ours = {k: records[(name, k)][key] for k in range(FLAGS.rounds)}
                fast = {
                    k: records[("fast", k)][key] for k in range(FLAGS.rounds)
                }
                ratio = common.paired_ratio(ours, fast)[0]
                cells += [
                    f"{np.median(list(ours.values())):.1f}",
                    f"{ratio:.2f}",
                ]
            rows.append([f"`{name}`", *cells])
        lines += common.table(
            [
                "variant",
                "batch 1 ex/s",
                "/ `fast`",
                "batch 32 ex/s",
                "/ `fast`",
            ],
            rows,
            rule=["---"] + ["---:"] * 4,
        )
        lines.append("")
        lines.append(
            "Load average (1 min) as each job started: "
            + common.listed(loads, "{:.1f}")
            + "; "
            + common.load_note(loads, common.cores(machine))
        )
    setting = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    command = (
        (f"TF_ENABLE_ONEDNN_OPTS={setting} " if setting else "")
        + "python benchmarks/serving_ops.py "
        + " ".join(common.flag_values("rounds", "sentences"))
        + common.section_flags()
    )
    lines += [
        "",
        f"Command: `{command}`. Machine: {machine}; as the serving plan "
        f"reads it: {this_cpu().description}.",
    ]
    for name in VARIANTS:
        print(name, json.dumps(ops[name]["ops_run_kinds"]))
    common.publish("serving_ops", "\n".join(lines))


if __name__ == "__main__":
    app.run(main)
