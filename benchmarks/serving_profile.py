"""Where the raw-text SavedModel's serving time goes: threads, streams, parts,
int8 kernels.

Exports of the MiniLM-L6-H384 `BertClassifier` (real weights, a random
2-class head: speed does not depend on the head's values), profiled three
ways, each asked for by its flag:

--threads  the export as it is and with `export_saved_model(...,
           streams=2)` (each block's heads and feed-forward units in two
           independent chains), their `predict_ids` run as TF Serving runs
           a SavedModel (a C++ Session, one `Session::Run` a request) on
           SST-2-sized requests, batch 1 of 24 tokens and batch 32 of 48
           (the mean trimmed widths `--parts` prints), in a fresh process
           per thread setting (TensorFlow fixes its pools at start-up):
           intra-op and inter-op threads (1, 1), (2, 2) (TensorFlow's
           default on 2 cores) and (1, 2); p50 milliseconds. With
           `--trace`, the (1, 2) worker then traces `--calls` batch-1
           requests of each export (TensorFlow's step stats) and prints the
           op time per op type, the matmuls' share and the ops run.
--parts    the SST-2 dev sentences at batch 1 and 32, in paired rounds
           alternating, in one process: the export padded to 128 tokens
           (`trim=False`) and trimmed to each request's longest row (the
           default); a trimmed request's parts, each timed alone
           (tokenize, tokenize and pack, the encoder and head on packed
           ids through `predict_ids`, a signature that does nothing); and
           the same pipeline built here with the width rounded up to a
           multiple of 1 or 8 (`multiple_8_xla`: the model XLA-compiled,
           one compilation per shape, made in the warm-up).
--matmul   the matmul choices for MiniLM's dense shapes at 128 and 4096
           rows: float32, Keras' own int8 (`ops.matmul(int8, int8)` on
           per-row quantized inputs), TensorFlow's oneDNN int8 kernel
           (`keras_bert.layers.int8_matmul`) and int8 weights dequantized
           before a float32 matmul.

    python benchmarks/serving_profile.py --threads [--trace] [--calls=100]
    python benchmarks/serving_profile.py --parts [--rounds=5]
    python benchmarks/serving_profile.py --matmul
"""

import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_bool("threads", False, "Time the thread settings and streams.")
flags.DEFINE_bool("trace", False, "With --threads: where the op time goes.")
flags.DEFINE_integer("calls", 100, "Timed batch-1 calls (batch 32: a fifth).")
flags.DEFINE_string("worker", None, "Internal: `intra,inter` of a worker.")
flags.DEFINE_string(
    "work_dir", "/tmp/keras_bert_serving_profile", "Where the exports go."
)
flags.DEFINE_bool("parts", False, "Time the exports' parts and widths.")
flags.DEFINE_integer("rounds", 5, "--parts: paired rounds.")
flags.DEFINE_integer("batch1_sentences", 300, "--parts: batch-1 requests.")
flags.DEFINE_list(
    "contestants",
    "padded,trimmed,tokenize_pack,encoder_ids,empty_signature",
    "--parts: among padded, trimmed, tokenize, tokenize_pack, encoder_ids, "
    "empty_signature, multiple_1, multiple_8, multiple_8_xla.",
)
flags.DEFINE_bool("matmul", False, "Time the int8 matmul choices.")
FLAGS = flags.FLAGS

STREAMS = {"as is": None, "2 streams": 2}


def classifier():
    import keras_bert

    return keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=2
    )


def thread_worker(intra, inter, paths):
    """Times each export's `predict_ids` in a Session with these pools."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exports' tokenizer ops)

    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
    )
    for name, path in paths.items():
        graph = tf.Graph()
        session = tf.compat.v1.Session(graph=graph, config=config)
        with graph.as_default():
            meta_graph = tf.compat.v1.saved_model.load(session, ["serve"], path)
        signature = meta_graph.signature_def["predict_ids"]
        output = signature.outputs["probabilities"].name
        feeds = {}
        for batch, width in ((1, 24), (32, 48)):
            feeds[batch] = {
                signature.inputs["token_ids"].name: np.full([batch, width], 1000, np.int32),  # fmt: skip
                signature.inputs["segment_ids"].name: np.zeros([batch, width], np.int32),  # fmt: skip
                signature.inputs["padding_mask"].name: np.ones([batch, width], np.int32),  # fmt: skip
            }
            for _ in range(5):
                session.run(output, feeds[batch])
            times = []
            for _ in range(FLAGS.calls if batch == 1 else max(FLAGS.calls // 5, 5)):
                start = time.perf_counter()
                session.run(output, feeds[batch])
                times.append(time.perf_counter() - start)
            print(
                f"intra {intra} inter {inter} {name:9} batch {batch:2} width "
                f"{width}: p50 {np.median(times) * 1e3:.2f} ms",
                flush=True,
            )
        if FLAGS.trace and (intra, inter) == (1, 2):
            micros, counts = common.traced_op_times(session, output, feeds[1], FLAGS.calls)  # fmt: skip
            total = sum(micros.values())
            matmuls = sum(t for op, t in micros.items() if "MatMul" in op)
            print(
                f"{name}, batch 1 width 24, traced: {total / FLAGS.calls / 1e3:.2f} "
                "ms of op time a request over both threads, "
                f"{sum(counts.values()) // FLAGS.calls} ops; matmuls "
                f"{100 * matmuls / total:.0f}%",
                flush=True,
            )
            for op, us in micros.most_common(12):
                print(f"  {op:32} {us / FLAGS.calls:7.0f} us  ({counts[op] // FLAGS.calls} ops)")  # fmt: skip
        session.close()


def profile_threads():
    import keras_bert

    model, paths = classifier(), {}
    for name, streams in STREAMS.items():
        directory = os.path.join(FLAGS.work_dir, name.replace(" ", "_"))
        shutil.rmtree(directory, ignore_errors=True)
        paths[name] = keras_bert.serving.export_saved_model(
            model, export_dir=directory, version=1, streams=streams
        )
    paths_file = os.path.join(FLAGS.work_dir, "paths.json")
    with open(paths_file, "w") as f:
        json.dump(paths, f)
    print("load average before:", os.getloadavg()[0])
    for intra, inter in ((1, 1), (2, 2), (1, 2)):
        command = common.script_command(
            __file__, f"--worker={intra},{inter}",
            *common.flag_values("calls", "work_dir", "trace"),
        )  # fmt: skip
        print(common.run_process(command)[0].stdout, end="", flush=True)
    print("load average after:", os.getloadavg()[0])


def profile_parts():
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.data.trim_batch import trim_batch
    from keras_bert.serving import export_saved_model

    model = classifier()
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir()),
        sequence_length=128,
    )
    root = tempfile.mkdtemp()
    signatures = {
        name: tf.saved_model.load(
            export_saved_model(model, preprocessor, f"{root}/{name}", trim=trim)
        ).signatures
        for name, trim in (("padded", False), ("trimmed", True))
    }
    empty = tf.Module()
    empty.f = tf.function(
        lambda text: {"size": tf.size(text)},
        input_signature=[tf.TensorSpec([None], tf.string, name="text")],
    )
    tf.saved_model.save(empty, f"{root}/empty")
    empty_fn = tf.saved_model.load(f"{root}/empty").signatures["serving_default"]
    text = [tf.TensorSpec([None], tf.string)]

    def in_process(multiple, jit_compile=False):
        model_fn = tf.function(lambda x: model(x, training=False), jit_compile=jit_compile)  # fmt: skip
        return tf.function(
            lambda t: tf.argmax(model_fn(trim_batch(preprocessor.preprocess_batch(t), multiple)), -1),  # fmt: skip
            input_signature=text,
        )

    pack = tf.function(lambda t: trim_batch(preprocessor.preprocess_batch(t), 1), input_signature=text)  # fmt: skip
    tokenize = tf.function(lambda t: preprocessor.tokenizer.tokenize_batch(t).flat_values, input_signature=text)  # fmt: skip
    sentences = common.read_sst2(os.path.join(common.SHARED, "glue"), "dev")[0]
    requests = {
        size: [tf.constant(sentences[i : i + size]) for i in range(0, count, size)]
        for size, count in ((1, FLAGS.batch1_sentences), (32, len(sentences)))
    }
    packed = {size: [pack(r) for r in batch] for size, batch in requests.items()}
    print("mean trimmed width:", {s: np.mean([p["token_ids"].shape[1] for p in b]) for s, b in packed.items()})  # fmt: skip
    variants = {"multiple_1": in_process(1), "multiple_8": in_process(8), "multiple_8_xla": in_process(8, True)}  # fmt: skip
    calls = {
        "padded": lambda s, i: signatures["padded"]["serving_default"](text=requests[s][i])["label_id"],  # fmt: skip
        "trimmed": lambda s, i: signatures["trimmed"]["serving_default"](text=requests[s][i])["label_id"],  # fmt: skip
        "tokenize_pack": lambda s, i: pack(requests[s][i])["token_ids"],
        "tokenize": lambda s, i: tokenize(requests[s][i]),
        "encoder_ids": lambda s, i: signatures["trimmed"]["predict_ids"](**packed[s][i])["label_id"],  # fmt: skip
        "empty_signature": lambda s, i: empty_fn(text=requests[s][i])["size"],
        **{n: (lambda f: lambda s, i: f(requests[s][i]))(f) for n, f in variants.items()},  # fmt: skip
    }
    names = FLAGS.contestants
    for name in names:  # warm-up: traces, and XLA's compilation per shape
        for size, batch in requests.items():
            for i in range(len(batch) if "xla" in name else min(len(batch), 20)):
                calls[name](size, i).numpy()
    speeds = {(name, size): [] for name in names for size in requests}
    for round_index in range(FLAGS.rounds):
        for size, batch in requests.items():
            for name in names if round_index % 2 == 0 else names[::-1]:
                start = time.perf_counter()
                for i in range(len(batch)):
                    calls[name](size, i).numpy()
                examples = sum(int(r.shape[0]) for r in batch)
                speeds[name, size].append(examples / (time.perf_counter() - start))  # fmt: skip
    print(f"Machine: {common.machine_description()}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("median examples/s (ms a call) over the rounds:")
    for size, batch in requests.items():
        examples = sum(int(r.shape[0]) for r in batch)
        for name in names:
            median = float(np.median(speeds[name, size]))
            print(f"  batch {size:2d} {name:16s} {median:8.1f} ex/s ({1000 * examples / median / len(batch):.2f} ms)")  # fmt: skip
        if "padded" in names and "trimmed" in names:
            ratios = np.array(speeds["trimmed", size]) / np.array(speeds["padded", size])  # fmt: skip
            print(f"  batch {size:2d} trimmed/padded {np.median(ratios):.2f}x")


def profile_matmul():
    import numpy as np
    import tensorflow as tf
    from keras import ops

    from keras_bert.layers.int8_matmul import column_sums
    from keras_bert.layers.int8_matmul import int8_matmul

    print(f"Machine: {common.machine_description()}; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    rng = np.random.default_rng(0)
    print(
        "| (rows, in) @ (in, out) | float32 ms | Keras int8 | oneDNN int8 "
        "| dequantized | float32 time / oneDNN int8 time |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    for input_dim, units in ((384, 1152), (384, 1536), (1536, 384)):
        weights = rng.normal(0, 0.05, (input_dim, units)).astype("float32")
        scale = (127.0 / np.abs(weights).max(axis=0)).astype("float32")
        kernel = tf.constant(np.round(weights * scale).astype("int8"))
        scale, sums = tf.constant(scale), column_sums(kernel)

        def keras_int8(x):
            # What Keras' Dense._int8_call computes at inference.
            x_scale = 127.0 / tf.maximum(tf.reduce_max(tf.abs(x), -1, keepdims=True), 1e-7)  # fmt: skip
            product = ops.matmul(tf.cast(tf.round(x * x_scale), tf.int8), kernel)
            return tf.cast(product, tf.float32) / (x_scale * scale)

        functions = {
            "float32": tf.function(lambda x: tf.matmul(x, tf.constant(weights))),
            "keras_int8": tf.function(keras_int8),
            "onednn_int8": tf.function(lambda x: int8_matmul(x, kernel, scale, sums)),  # fmt: skip
            "dequantized": tf.function(lambda x: tf.matmul(x, tf.cast(kernel, tf.float32) / scale)),  # fmt: skip
        }
        for rows in (128, 4096):
            x = tf.constant(rng.normal(size=(rows, input_dim)), tf.float32)
            times = {name: [] for name in functions}
            for function in functions.values():
                function(x)
            for _ in range(15):
                for name, function in functions.items():
                    start = time.perf_counter()
                    function(x).numpy()
                    times[name].append(time.perf_counter() - start)
            ms = {name: 1000 * np.median(t) for name, t in times.items()}
            print(
                f"| ({rows}, {input_dim}) @ ({input_dim}, {units}) | "
                + " | ".join(f"{ms[n]:.2f}" for n in functions)
                + f" | {ms['float32'] / ms['onednn_int8']:.2f} |",
                flush=True,
            )


def main(argv):
    del argv
    if FLAGS.worker:
        with open(os.path.join(FLAGS.work_dir, "paths.json")) as f:
            intra, inter = map(int, FLAGS.worker.split(","))
            return thread_worker(intra, inter, json.load(f))
    if not (FLAGS.threads or FLAGS.parts or FLAGS.matmul):
        raise app.UsageError("Pass --threads, --parts or --matmul.")
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    if FLAGS.threads:
        profile_threads()
    if FLAGS.parts:
        profile_parts()
    if FLAGS.matmul:
        profile_matmul()


if __name__ == "__main__":
    app.run(main)
