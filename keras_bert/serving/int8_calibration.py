"""Calibrated input ranges for an int8 export's encoder blocks.

`export_saved_model(model, ..., quantize="int8", calibration_texts=texts)`
runs the int8 copy of the model on `texts` first and records, for every
dense layer of every encoder block, the range of the values its inputs
took (`calibrate_int8_ranges`). Traced with those ranges, the blocks run
`serving_graph_int8_calibrated`: each dense layer's inputs are quantized
over their fixed range, and the int8 matmul with its bias, GELU and
dequantization is one oneDNN kernel (`keras_bert.layers.int8_matmul.
int8_fused_matmul`), instead of per-row ranges worked out on every call
with a dozen element-wise ops around the matmul. A few hundred sentences
of the task's own text are enough: the ranges are the extremes seen, and a
value beyond them at serving time is clipped to them.
"""

from keras_bert.data.trim_batch import trim_batch
from keras_bert.models.backbone_of import backbone_of
from keras_bert.serving.runtime.block import BlockServing


def calibrate_int8_ranges(model, preprocessor, texts, batch_size=32):
    """`{(block name, dense layer name): (low, high)}`: the range of each
    encoder block's dense layers' inputs over `texts`, what
    a served block's `BlockServing(int8_ranges=...)` takes
    (`int8_ranges_of`). The inputs are those of every
    row the layer computes, in batches of `batch_size` trimmed to their
    longest row as a served request is (the shorter rows' padding
    positions too).

    Args:
        model: the model to be served (its int8 copy, so that each
            layer's range is the one its inputs take behind the int8
            layers before it); a `keras_bert.BertBackbone` or a task model
            built on one. Its blocks run `serving_graph_int8` while it
            calibrates, and their `served_call` is restored after.
        preprocessor: the `keras_bert.BertPreprocessor` the model serves
            with.
        texts: what `preprocessor` takes: a list of strings, or for a
            model of sentence pairs a tuple of two lists.
        batch_size: int. Sentences run at once. Defaults to 32.

    Returns:
        dict, `(block name, dense layer name)` → `(low, high)` floats, each
        range holding 0.

    Raises:
        ValueError: `texts` is empty or not text.

    Example:
    ```python
    copy = keras_bert.serving.quantized_copy(classifier)
    ranges = calibrate_int8_ranges(copy, preprocessor, ["a fine film"])
    ```
    """
    check_calibration_texts(texts)
    columns = texts if isinstance(texts, tuple) else (texts,)
    backbone = backbone_of(model)
    blocks = backbone.transformer_layers
    served = [block.served_call for block in blocks]
    ranges = {}
    for block in blocks:
        block.served_call = BlockServing(
            "serving_graph_int8", frozen=False, recorded_ranges=ranges
        )
    try:
        for start in range(0, len(columns[0]), batch_size):
            batch = tuple(c[start : start + batch_size] for c in columns)
            features = preprocessor(batch if len(batch) > 1 else batch[0])
            features = trim_batch(features, multiple=1)
            backbone(
                {name: features[name] for name in backbone.input},
                training=False,
            )
    finally:
        for block, call in zip(blocks, served):
            block.served_call = call
    return ranges


def check_calibration_texts(texts):
    """Raises a `ValueError` naming what was received unless `texts` is a
    non-empty list of strings, or a tuple of two such lists of the same
    length (sentence pairs)."""
    columns = texts if isinstance(texts, tuple) else (texts,)
    if (
        not columns
        or not all(isinstance(column, (list, tuple)) for column in columns)
        or not len(columns[0])
        or any(len(column) != len(columns[0]) for column in columns)
        or not all(isinstance(text, str) for c in columns for text in c)
    ):
        raise ValueError(
            "Received an invalid value for argument `calibration_texts`, "
            "expected a non-empty list of strings (or, for a model of "
            "sentence pairs, a tuple of two such lists of the same length). "
            f"Received: {_describe(texts)}. Pass a few hundred sentences of "
            "the text the model will serve."
        )


def _describe(texts):
    if isinstance(texts, (list, tuple)):
        return f"a {type(texts).__name__} of {len(texts)} items"
    return repr(texts)[:80]
