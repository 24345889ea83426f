"""benchmarks/serving_ops.py: the serving variants, how each is exported,
and the helpers its workers share (feeds, traced ops, probabilities)."""

import contextlib
import functools
import os
from unittest import mock

from benchmarks import common

# The entry script: the workers run it (`--worker=...`).
SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "serving_ops.py",
)

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
PACKAGE = "keras_bert.serving"
BOOKKEEPING = ("Const", "_Arg", "_Retval", "NoOp")
# --threads: the requests timed (batch size -> tokens) and the exports.
SHAPES = {1: 24, 32: 48}


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
    options, patches = dict(options), contextlib.ExitStack()
    if without_forms:
        kept = [n for n in ALL if n != "remapper_serving_graph"]
        model = _with_optimizations(model, kept)
    if "calibration_texts" in options:
        sentences = common.read_sst2("train")[0]
        options["calibration_texts"] = sentences[:CALIBRATION_SENTENCES]
    if name == "serving_graph_variables":
        plan = functools.partial(plan_export, frozen=False)
        patches.enter_context(mock.patch(f"{PACKAGE}.export.plan_export", plan))
    if name.startswith("serving_graph"):  # the forms, on every CPU
        forms = mock.patch(f"{PACKAGE}.plan.eigen_serves_faster_without")
        patches.enter_context(forms).return_value = False
    with patches:
        path = os.path.join(directory, name)
        return export_saved_model(model, preprocessor, path, **options)


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
