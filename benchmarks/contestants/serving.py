"""The serving contestants of `benchmarks/serving.py`, each as its users run
it, and the exports they load.

`prepare(...)` writes, from one fine-tuned keras-bert `BertClassifier`,
every contestant's files (the same weights everywhere):

  ours/1            our raw-text SavedModel (`export_saved_model`, with
                    `streams` = the core count)
  ours_int8/1       the same with `quantize="int8"` (where the package has
                    it; otherwise `ours_int8.unavailable` says why)
  huggingface/      a `BertForSequenceClassification` directory, written by
                    `keras_bert.checkpoints.save_huggingface`
  keras_hub/        a `BertTextClassifier` preset, written by
                    `keras_bert.checkpoints.save_keras_hub_preset`
  model.onnx        `torch.onnx.export` of the Hugging Face model
  model_optimized.onnx   ONNX Runtime's BERT fusions (`optimize_model`)
  model_int8.onnx   that graph through `quantize_dynamic` (int8 weights)

`load(name, work_dir, ...)` returns a contestant's `predict(texts)` (a list
of str in, the predicted class ids out, numpy int); tokenizing happens
inside it, as a server does per request.

```python
manifest = prepare(classifier, tokenizer, "/tmp/serving", 128)
predict = load("onnxruntime_fp32", manifest, 128, threads=2)
predict(["a gripping film .", "dull ."])  # array([1, 0])
```
"""

import os

import numpy as np

# name -> what runs (the docstring of benchmarks/serving.py says more).
CONTESTANTS = {
    "ours_fp32": "our raw-text SavedModel (exported with `streams`), "
    "`serving_default`, float32, run as TF Serving runs it: a C++ Session",
    "ours_fp32_tf_function": "the same SavedModel through "
    "`tf.saved_model.load(...).signatures` (a Python TF2 caller)",
    "ours_int8": 'our raw-text SavedModel exported with quantize="int8"',
    "transformers": 'transformers `pipeline("text-classification")`, '
    "PyTorch float32",
    "onnxruntime_fp32": "ONNX Runtime, `optimize_model(model_type='bert')` "
    "graph, float32",
    "onnxruntime_int8": "ONNX Runtime, that graph through `quantize_dynamic` "
    "(int8 weights)",
    "keras_hub": "keras-hub `BertTextClassifier.predict_on_batch` on strings",
    "keras_hub_xla": "keras-hub `BertTextClassifier.predict_on_batch` on "
    "strings, "
    "compiled with `jit_compile=True`",
}

ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class Unavailable(Exception):
    """A contestant that cannot run with this code (e.g. no int8 export)."""


def prepare(
    classifier, tokenizer, work_dir, sequence_length, labels=None, streams=None
):
    """Writes every contestant's files into `work_dir`; returns a dict of
    what was written (and why a contestant is unavailable, if one is).

    Args:
        classifier: `keras_bert.BertClassifier`, the fine-tuned model.
        tokenizer: its `keras_bert.BertTokenizer`.
        work_dir: str. An empty or new directory.
        sequence_length: int. The tokens per example of our export and
            keras-hub's packer (the truncation limit of the others).
        labels: list of str or `None`: the class names.
        streams: int or `None`: our float32 export's `streams` (the
            cores it is served on).
    """
    import keras_bert
    from keras_bert.serving import export_saved_model

    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=sequence_length
    )
    manifest = {"unavailable": {}}
    manifest["ours_fp32"] = export_saved_model(
        classifier,
        preprocessor,
        os.path.join(work_dir, "ours"),
        labels=labels,
        streams=streams,
    )
    manifest["ours_fp32_tf_function"] = manifest["ours_fp32"]
    manifest["streams"] = {
        "ours_fp32": streams,
        "ours_fp32_tf_function": streams,
    }
    try:
        manifest["ours_int8"] = export_saved_model(
            classifier,
            preprocessor,
            os.path.join(work_dir, "ours_int8"),
            labels=labels,
            quantize="int8",
        )
    except TypeError as error:
        if "quantize" not in str(error):
            raise
        manifest["unavailable"]["ours_int8"] = (
            "this keras_bert's export_saved_model has no `quantize` "
            f"argument ({error})"
        )
    hf_dir = os.path.join(work_dir, "huggingface")
    keras_bert.checkpoints.save_huggingface(classifier, tokenizer, hf_dir)
    manifest["huggingface"] = hf_dir
    hub_dir = os.path.join(work_dir, "keras_hub")
    # keras-hub runs the tanh GELU; MiniLM was trained with the exact one.
    keras_bert.checkpoints.save_keras_hub_preset(
        classifier, tokenizer, hub_dir, allow_approximate_gelu=True
    )
    manifest["keras_hub"] = hub_dir
    backbone = classifier.backbone
    manifest.update(
        export_onnx_models(
            hf_dir, work_dir, backbone.num_heads, backbone.hidden_dim
        )
    )
    return manifest


def export_onnx(hf_dir, path):
    """`torch.onnx.export` of the Hugging Face classifier in `hf_dir`, with
    dynamic batch and sequence axes.

    The TorchScript exporter (`dynamo=False`) of a model loaded with
    `attn_implementation="eager"`, as Optimum exports BERT: ONNX Runtime's
    BERT optimizer fuses that graph into `Attention` and
    `EmbedLayerNormalization` nodes, but neither the `sdpa` attention (the
    transformers 5 default) nor the dynamo exporter's graph (measured on
    torch 2.13, transformers 5.24, onnxruntime 1.32).
    """
    import torch
    import transformers

    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        hf_dir, attn_implementation="eager"
    ).eval()
    example = torch.ones((2, 8), dtype=torch.int64)
    dynamic = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            model,
            (example, example, torch.zeros_like(example)),
            path,
            input_names=list(ONNX_INPUTS),
            output_names=["logits"],
            dynamic_axes={
                **{name: dynamic for name in ONNX_INPUTS},
                "logits": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
    return path


def optimize_onnx(path, optimized_path, num_heads, hidden_size):
    """ONNX Runtime's BERT fusions (what Optimum's `ORTOptimizer` runs);
    returns the fused-operator counts."""
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(
        path, model_type="bert", num_heads=num_heads, hidden_size=hidden_size
    )
    optimized.save_model_to_file(optimized_path)
    return {
        name: count
        for name, count in optimized.get_fused_operator_statistics().items()
        if count
    }


def quantize_onnx(path, int8_path):
    """Dynamic int8 quantization of `path`: int8 weights, uint8 activations
    quantized per call, per tensor, full range (Optimum's
    `AutoQuantizationConfig.avx512_vnni(is_static=False)`).

    ONNX shape inference gives no type to the outputs of the fused
    (`com.microsoft`) nodes, so the quantizer is told they are float32
    (`DefaultTensorType`, as its error message advises)."""
    import onnx
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(
        path,
        int8_path,
        weight_type=QuantType.QInt8,
        per_channel=False,
        reduce_range=False,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return int8_path


def export_onnx_models(hf_dir, work_dir, num_heads, hidden_size):
    """The three ONNX files of `prepare` (plain, optimized, int8)."""
    plain = export_onnx(hf_dir, os.path.join(work_dir, "model.onnx"))
    optimized = os.path.join(work_dir, "model_optimized.onnx")
    fused = optimize_onnx(plain, optimized, num_heads, hidden_size)
    int8 = quantize_onnx(optimized, os.path.join(work_dir, "model_int8.onnx"))
    return {
        "onnx": plain,
        "onnxruntime_fp32": optimized,
        "onnxruntime_int8": int8,
        "onnx_fused_operators": fused,
    }


def load(name, manifest, sequence_length, threads):
    """The `predict(texts) -> class ids` of contestant `name`, loaded from
    the files `manifest` (what `prepare` returned) names."""
    if name in manifest.get("unavailable", {}):
        raise Unavailable(manifest["unavailable"][name])
    loaders = {
        "ours_fp32": _load_ours,
        "ours_fp32_tf_function": _load_ours_tf_function,
        "ours_int8": _load_ours,
        "transformers": _load_pipeline,
        "onnxruntime_fp32": _load_onnxruntime,
        "onnxruntime_int8": _load_onnxruntime,
        "keras_hub": _load_keras_hub,
        "keras_hub_xla": _load_keras_hub,
    }
    if name not in loaders:
        raise ValueError(
            f"Unknown contestant {name!r}. Pass one of {sorted(loaders)}."
        )
    return loaders[name](name, manifest, sequence_length, threads)


def _thread_counts(name, manifest, threads):
    """(intra-op, inter-op) threads: an export with streams is served as
    `export_saved_model` says, one intra-op thread and an inter-op thread
    per stream; others with TensorFlow's defaults, both pools at `threads`.
    """
    streams = manifest.get("streams", {}).get(name)
    return (1, streams) if streams else (threads, threads)


def _load_ours(name, manifest, sequence_length, threads):
    """As TF Serving runs a SavedModel: loaded into a C++ Session, one
    `Session::Run` per request (`tf.compat.v1.saved_model.load`, the
    loader TF Serving's `SavedModelBundle` is), with its thread pools set
    as the server's `--tensorflow_intra_op_parallelism` and
    `--tensorflow_inter_op_parallelism` would."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    intra, inter = _thread_counts(name, manifest, threads)
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=intra, inter_op_parallelism_threads=inter
    )
    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph, config=config)
    with graph.as_default():
        meta_graph = tf.compat.v1.saved_model.load(
            session, ["serve"], manifest[name]
        )
    signature = meta_graph.signature_def["serving_default"]
    text = signature.inputs["text"].name
    label_id = signature.outputs["label_id"].name

    def predict(texts):
        return session.run(label_id, {text: list(texts)})

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
            batch_size=len(texts),
            truncation=True,
            max_length=sequence_length,
        )
        if len(texts) == 1:
            outputs = outputs[:1]
        return np.array([label2id[output["label"]] for output in outputs])

    return predict


def _load_onnxruntime(name, manifest, sequence_length, threads):
    import onnxruntime
    import transformers

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = (
        onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    )
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(
        manifest[name], options, providers=["CPUExecutionProvider"]
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        manifest["huggingface"], use_fast=True
    )

    def predict(texts):
        encoded = tokenizer(
            list(texts),
            padding=True,  # to the longest of the request
            truncation=True,
            max_length=sequence_length,
            return_tensors="np",
        )
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
        # call (10-20 s a call on the busy 2-core machine, against 0.04-0.12
        # s here); a server sends each request to `predict_on_batch`, which
        # preprocesses the strings the same way.
        logits = classifier.predict_on_batch(np.array(texts))
        return np.argmax(logits, axis=-1)

    return predict
