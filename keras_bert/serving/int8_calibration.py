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
from keras_bert.layers.block_implementations import dense_layers
from keras_bert.layers.remapper_forms import recording_input_ranges
from keras_bert.layers.remapper_forms import serving_trace
from keras_bert.models.serving_copy import backbone_of


def calibrate_int8_ranges(model, preprocessor, texts, batch_size=32):
    """`{(block name, dense layer name): (low, high)}`: the range of each
    encoder block's dense layers' inputs over `texts`, what
    `serving_trace(int8_ranges=...)` takes. The inputs are those of every
    row the layer computes, in batches of `batch_size` trimmed to their
    longest row as a served request is (the shorter rows' padding
    positions too).

    Args:
        model: the model to be served (its int8 copy, `serving_copy(model,
            quantize="int8")`, so that each layer's range is the one its
            inputs take behind the int8 layers before it); a
            `keras_bert.BertBackbone` or a task model built on one.
        preprocessor: the `keras_bert.BertPreprocessor` the model serves
            with.
        texts: what `preprocessor` takes: a list of strings, or for a
            model of sentence pairs a tuple of two lists.
        batch_size: int. Sentences run at once. Defaults to 32.

    Returns:
        dict, `(block name, dense layer name)` → `(low, high)` floats, each
        range holding 0.

    Raises:
        ValueError: `texts` is empty or not text, or the blocks do not run
            the serving forms (a model built without
            `"remapper_serving_graph"`), so that no range was recorded.

    Example:
    ```python
    copy = keras_bert.models.serving_copy(classifier, quantize="int8")
    ranges = calibrate_int8_ranges(copy, preprocessor, ["a fine film"])
    ```
    """
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
    backbone = backbone_of(model)
    with serving_trace(frozen=False), recording_input_ranges() as ranges:
        for start in range(0, len(columns[0]), batch_size):
            batch = tuple(c[start : start + batch_size] for c in columns)
            features = preprocessor(batch if len(batch) > 1 else batch[0])
            features = trim_batch(features, multiple=1)
            backbone(
                {name: features[name] for name in backbone.input},
                training=False,
            )
    expected = {
        (block.name, dense.name)
        for block in backbone.transformer_layers
        for dense in dense_layers(block)
    }
    if set(ranges) != expected:
        block = backbone.transformer_layers[0]
        raise ValueError(
            "Calibration recorded no input ranges: the encoder blocks do not "
            "run the serving forms (their optimizations: "
            f"{list(block.optimizations)}). Build the model with the default "
            "optimizations (they include 'remapper_serving_graph'), or "
            "export without `calibration_texts`."
        )
    return ranges


def _describe(texts):
    if isinstance(texts, (list, tuple)):
        return f"a {type(texts).__name__} of {len(texts)} items"
    return repr(texts)[:80]
