"""The serving contestants' loaders: `load` returns a contestant's
`predict(texts)` (class ids out, tokenizing inside, as a server does per
request) from the files `benchmarks/contestants/serving.py`'s `prepare`
wrote."""

import numpy as np

from benchmarks.contestants.serving import ONNX_INPUTS
from benchmarks.contestants.serving import OURS_EXPORTS
from benchmarks.contestants.serving import session


def load(name, manifest, sequence_length, threads):
    """The `predict(texts) -> class ids` of contestant `name`, loaded from
    the files `manifest` (what `prepare` returned) names."""
    loaders = dict.fromkeys(OURS_EXPORTS, _load_ours)
    loaders.update(ours_fp32_tf_function=_load_ours_tf_function)
    loaders.update(transformers=_load_pipeline, keras_hub=_load_keras_hub)
    loaders.update(keras_hub_xla=_load_keras_hub)
    for onnx in ("fp32", "int8", "int8_static"):
        loaders[f"onnxruntime_{onnx}"] = _load_onnxruntime
    if name not in loaders:
        raise ValueError(
            f"Unknown contestant {name!r}. Pass one of {sorted(loaders)}."
        )
    return loaders[name](name, manifest, sequence_length, threads)


def _thread_counts(name, manifest, threads):
    """(intra-op, inter-op) threads: an export with streams is served as
    `export_saved_model` says, one intra-op thread and an inter-op thread
    per stream; others with both pools at `threads` (TensorFlow's default
    is the core count; the sweep runs each count of `--peer_threads`)."""
    streams = manifest.get("streams", {}).get(name)
    return (1, streams) if streams else (threads, threads)


def _load_ours(name, manifest, sequence_length, threads):
    """As TF Serving runs a SavedModel (`session`): one `Session::Run` per
    request."""
    tf_session, signatures = session(
        manifest[name], _thread_counts(name, manifest, threads)
    )
    signature = signatures["serving_default"]
    text = signature.inputs["text"].name
    label_id = signature.outputs["label_id"].name

    def predict(texts):
        return tf_session.run(label_id, {text: list(texts)})

    return predict


def _load_ours_tf_function(name, manifest, sequence_length, threads):
    """The SavedModel as a TF2 Python program calls it."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    intra, inter = _thread_counts(name, manifest, threads)
    tf.config.threading.set_intra_op_parallelism_threads(intra)
    tf.config.threading.set_inter_op_parallelism_threads(inter)
    serve = tf.saved_model.load(manifest[name]).signatures["serving_default"]

    def predict(texts):
        return serve(text=tf.constant(texts))["label_id"].numpy()

    return predict


def _load_pipeline(name, manifest, sequence_length, threads):
    import torch
    import transformers

    torch.set_num_threads(threads)
    hf_dir = manifest["huggingface"]
    classify = transformers.pipeline(
        "text-classification", model=hf_dir, tokenizer=hf_dir, device="cpu"
    )
    label2id = classify.model.config.label2id

    def predict(texts):
        # One sentence is sent as a string (a list would go through the
        # pipeline's DataLoader).
        outputs = classify(
            texts[0] if len(texts) == 1 else list(texts),
            batch_size=len(texts), truncation=True, max_length=sequence_length,
        )  # fmt: skip
        if len(texts) == 1:
            outputs = outputs[:1]
        return np.array([label2id[output["label"]] for output in outputs])

    return predict


def _load_onnxruntime(name, manifest, sequence_length, threads):
    import onnxruntime
    import transformers

    options = onnxruntime.SessionOptions()
    level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.graph_optimization_level = level
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(
        manifest[name], options, providers=["CPUExecutionProvider"]
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        manifest["huggingface"], use_fast=True
    )

    def predict(texts):
        encoded = tokenizer(
            list(texts), padding=True,  # to the longest of the request
            truncation=True, max_length=sequence_length, return_tensors="np",
        )  # fmt: skip
        (logits,) = session.run(
            None, {name: encoded[name].astype(np.int64) for name in ONNX_INPUTS}
        )
        return np.argmax(logits, axis=-1)

    return predict


def _load_keras_hub(name, manifest, sequence_length, threads):
    import keras_hub
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    hub_dir = manifest["keras_hub"]
    # The preset's packer pads to the backbone's 512 positions; a user
    # serving a model fine-tuned on 128 tokens packs to 128.
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        hub_dir, sequence_length=sequence_length
    )
    classifier = keras_hub.models.BertTextClassifier.from_preset(
        hub_dir, preprocessor=preprocessor
    )
    if name == "keras_hub_xla":
        classifier.compile(jit_compile=True)

    def predict(texts):
        # `predict_on_batch`, not `predict`: keras-hub's `predict` maps the
        # preprocessor over a new tf.data pipeline, traced again on every
        # call; a server sends each request to `predict_on_batch`, which
        # preprocesses the strings the same way.
        logits = classifier.predict_on_batch(np.array(texts))
        return np.argmax(logits, axis=-1)

    return predict
