"""A text function run in Python, batch by batch: `predict` on raw text.

`BertQuestionAnswerer.predict`, `BertTokenClassifier.predict` and
`BertMaskedLM.fill_mask` on raw text return what their exported
SavedModel's `serving_default` returns, because both run the same text
function (`keras_bert.decoding.answers`, `entities`, `fill_mask`): here
built for the model and its attached `preprocessor` with the export's
options, traced once and called batch by batch. So long contexts and
texts are cut into windows exactly as in serving, and answers and
offsets are the export's; scores agree to float rounding (~1e-6: the
export runs the encoder in the serving graph's fused forms,
`keras_bert.layers.remapper_forms`). `keras_bert.serving.predict_text` runs any
registered model's `serving_default` the same way.
"""

from collections.abc import Mapping

import keras
import numpy as np
import tensorflow as tf

# Examples per call of the traced function when `batch_size` is None, as
# `keras.Model.predict`.
DEFAULT_BATCH_SIZE = 32


def run_text_function(
    model,
    text_function,
    inputs,
    batch_size=None,
    verbose="auto",
    steps=None,
    callbacks=None,
    padding=None,
    method="predict",
    **options,
):
    """`text_function` of `model` run on raw text in Python.

    Args:
        model: a model with a `keras_bert.BertPreprocessor` as its
            `preprocessor`.
        text_function: callable `(model, preprocessor, **options) ->
            (function, input_signature)`, e.g.
            `keras_bert.decoding.answers.answer_text_function`.
        inputs: dict from each input name of the function (e.g.
            `question` and `context`) to a list, tuple, array or tensor of
            strings, all of one length.
        batch_size: int or `None`. Examples per call; defaults to 32.
        verbose: `"auto"`, 0 or 1: a progress bar over the batches when
            not 0.
        steps, callbacks: must be `None` (Keras' `predict` arguments; the
            number of steps follows from the inputs).
        padding: dict or `None`. For outputs padded to the longest row of
            a batch (a `(batch, max_items)` array), the value padding them:
            each batch's rows are padded to the longest of all batches.
        method: str. The model's method that runs this (`"predict"`,
            `"fill_mask"`), which errors name.
        **options: the text function's options (the export's).

    Returns:
        A dict from each output name to a numpy array over all examples,
        in order; strings as Python `str` (UTF-8, invalid bytes as
        U+FFFD).
    """
    name = type(model).__name__
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:
        # What from_preset and from_checkpoint attach (BertMaskedLM: 128,
        # BertQuestionAnswerer: 384).
        length = getattr(model, "DEFAULT_SEQUENCE_LENGTH", 128)
        ids = (
            ""
            if method == "fill_mask"
            else (
                ", or pass the ids dict (`token_ids`, `segment_ids`, "
                "`padding_mask`)"
            )
        )
        raise ValueError(
            f"{name}.{method} received raw text, but the model has no "
            "preprocessor to tokenize it. Pass `preprocessor=` when building "
            f"the model (e.g. `{name}(backbone, ..., preprocessor="
            "keras_bert.BertPreprocessor(tokenizer, sequence_length="
            f"{length}))`), load it with `from_checkpoint` or `from_preset` "
            f"(which attach one), or set `model.preprocessor`{ids}."
        )
    for argument, value in (("steps", steps), ("callbacks", callbacks)):
        if value is not None:
            raise ValueError(
                f"{name}.{method} on raw text takes no `{argument}` (the "
                f"inputs give the number of steps). Received: "
                f"{argument}={value!r}. Leave it None, or pass the ids dict."
            )
    if batch_size is None:
        batch_size = DEFAULT_BATCH_SIZE
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(
            "Received an invalid value for argument `batch_size`, expected a "
            f"positive integer or None. Received: batch_size={batch_size!r}"
        )
    function, names = _traced(model, text_function, preprocessor, options)
    columns = _string_columns(name, inputs, names, method)
    count = len(columns[names[0]])

    batches = []
    firsts = range(0, max(count, 1), batch_size)
    progress = keras.utils.Progbar(len(firsts)) if verbose != 0 else None
    for first in firsts:
        batch = {
            key: tf.constant(values[first : first + batch_size], tf.string)
            for key, values in columns.items()
        }
        outputs = function(**batch)
        batches.append({key: value.numpy() for key, value in outputs.items()})
        if progress is not None:
            progress.add(1)
    return {
        key: _concatenate(
            [_decoded(outputs[key]) for outputs in batches],
            (padding or {}).get(key),
        )
        for key in batches[0]
    }


class _TracedFunction:
    """The last traced text function of a model, kept on the model.

    A plain object: neither Keras' nor TensorFlow's tracking follows it, so
    it never enters a `.keras` file, a weights file or an export.
    """

    def __init__(self, key, function, names):
        self.key = key
        self.function = function
        self.names = names


def _traced(model, text_function, preprocessor, options):
    """`(tf.function, input names)` of `text_function` for `model`, traced
    once per text function, preprocessor, options and model structure (a
    new call with the same ones reuses the graph; new or replaced
    variables, as `enable_lora` or `quantize` make, trace anew)."""
    key = (
        text_function,
        id(preprocessor),
        repr(sorted(options.items())),
        tuple(id(variable) for variable in model.weights),
    )
    cached = getattr(model, "_traced_text_function", None)
    if isinstance(cached, _TracedFunction) and cached.key == key:
        return cached.function, cached.names
    function, signature = text_function(model, preprocessor, **options)
    traced = tf.function(function, input_signature=signature)
    names = tuple(spec.name for spec in signature)
    # The cached function holds the preprocessor, so its id stays unique.
    model._traced_text_function = _TracedFunction(key, traced, names)
    return traced, names


def _string_columns(model_name, inputs, names, method="predict"):
    """`inputs` as `{name: 1-D object array of str/bytes}`, checked."""
    if not isinstance(inputs, Mapping):
        raise ValueError(
            f"{model_name}.{method} on raw text takes a dict with the keys "
            f"{list(names)}. Received: {inputs!r}"
        )
    if set(inputs) != set(names):
        missing = [key for key in names if key not in inputs]
        unknown = sorted(key for key in inputs if key not in names)
        raise ValueError(
            f"{model_name}.{method} on raw text takes a dict with the keys "
            f"{list(names)}; missing: {missing}, unknown: {unknown}. "
            f"Received keys: {sorted(inputs)}."
        )
    columns = {}
    for key in names:
        value = inputs[key]
        if tf.is_tensor(value):
            value = value.numpy()
        if isinstance(value, (str, bytes)):
            raise ValueError(
                f"{model_name}.{method} takes a list of strings for `{key}`; "
                f"received one string: {key}={value!r}. Wrap it in a list."
            )
        array = np.asarray(value, dtype=object)
        if array.ndim != 1 or not all(
            isinstance(item, (str, bytes)) for item in array
        ):
            raise ValueError(
                f"{model_name}.{method} takes a flat list of strings for "
                f"`{key}`. Received: {key}={value!r}"
            )
        columns[key] = array
    lengths = {key: len(values) for key, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"{model_name}.{method} takes as many strings for each of "
            f"{list(names)} (one example each); received "
            + ", ".join(f"{n} for `{key}`" for key, n in lengths.items())
            + "."
        )
    return columns


def _concatenate(arrays, padding):
    """The batches' arrays, one after another; with `padding`, each padded
    on axis 1 to the widest first."""
    if padding is not None:
        width = max(array.shape[1] for array in arrays)
        arrays = [
            np.concatenate(
                [
                    array,
                    np.full(
                        (array.shape[0], width - array.shape[1])
                        + array.shape[2:],
                        padding,
                        array.dtype,
                    ),
                ],
                axis=1,
            )
            for array in arrays
        ]
    return np.concatenate(arrays, axis=0)


def _decoded(array):
    """Bytes (TensorFlow strings) as Python `str`; other arrays as they are."""
    if array.dtype != object:
        return array
    return np.vectorize(
        lambda value: value.decode("utf-8", errors="replace"), otypes=[object]
    )(array)
