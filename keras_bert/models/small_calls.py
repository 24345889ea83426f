"""Small calls: `predict` and `evaluate` on a few examples through one
compiled function.

`keras.Model.predict` builds a `tf.data` pipeline, callbacks and a step
loop on every call: fixed work that dwarfs the model itself when a
handful of texts (a query, a request) is predicted at a time. A task
model's `predict` (`keras_bert.models.raw_text`) and
`BertTextEmbedder.encode` hand such calls here instead: one `tf.function`
per input kind (the ids dict; single texts; text pairs), kept on the
model and traced once with the batch and sequence axes unknown, so that
no new batch size or length traces again. Raw text is tokenized inside
that function by the preprocessor's graph and cut to its longest row, as
the batched path cuts each batch, so the outputs are the batched path's.

Under XLA (`model.jit_compile`) every new shape would compile: there the
batch and the texts' length are padded to buckets
(`keras_bert.models.xla_buckets`).

`evaluate` (`small_evaluate`) runs the model's own `test_step` in such a
function, with the labels (and sample weights) as more inputs, so its
loss and metrics are `keras.Model.evaluate`'s on one batch.

Where the functions are kept, and when they are rebuilt:
`keras_bert.models.small_call_functions`.
"""

from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from keras_bert.keras_workarounds import evaluation_ready
from keras_bert.keras_workarounds import evaluation_result
from keras_bert.models.small_call_functions import compiled_function
from keras_bert.models.small_call_functions import evaluate_ids_function
from keras_bert.models.small_call_functions import evaluate_text_function
from keras_bert.models.small_call_functions import ids_function
from keras_bert.models.small_call_functions import text_function
from keras_bert.models.small_call_functions import text_packer
from keras_bert.text.document_windows import DocumentWindows
from keras_bert.text.document_windows import check_documents

# Examples up to which `predict` takes the compiled function when it is
# given no `batch_size` (Keras' own default batch).
DEFAULT_BATCH_SIZE = 32


def small_predict(
    model, x, batch_size=None, verbose="auto", steps=None, callbacks=None
):
    """`model`'s outputs for `x` through the compiled function, or `None`.

    Takes the call when `x` is at most `batch_size` (default 32) examples
    of raw text (for a model that reads text in `predict`) or an ids dict
    with the model's inputs, and Keras' loop would add nothing: no
    `steps`, no `callbacks`, no progress bar asked for (`verbose` `"auto"`
    or `0`). Empty inputs get empty outputs at once. Anything else is
    `None`: the caller runs `keras.Model.predict`.

    Returns:
        NumPy arrays in the structure of the model's outputs, or `None`.
    """
    if steps is not None or callbacks is not None:
        return None
    if verbose not in ("auto", 0):
        return None
    limit = batch_size or DEFAULT_BATCH_SIZE
    texts = _text_columns(model, x)
    if texts is not None:
        count = len(texts[0])
        if count == 0:
            return empty_outputs(model)
        if count > limit:
            return None
        if isinstance(text_packer(model), DocumentWindows):
            check_documents(texts[0])
        function = compiled_function(
            model,
            ("text", len(texts)),
            lambda: text_function(model, len(texts)),
        )
        return _numpy(function(*(tf.constant(t, tf.string) for t in texts)))
    ids = _ids(model, x)
    if ids is None:
        return None
    count = int(next(iter(ids.values())).shape[0])
    if count == 0:
        return empty_outputs(model)
    if count > limit:
        return None
    function = compiled_function(model, ("ids",), lambda: ids_function(model))
    return _numpy(function(ids))


def small_evaluate(
    model,
    x,
    y,
    batch_size=None,
    verbose="auto",
    sample_weight=None,
    steps=None,
    callbacks=None,
    return_dict=False,
):
    """`model.evaluate(x, y, ...)`'s result through a compiled function,
    or `None`.

    Takes the call on the terms of `small_predict` (at most `batch_size`
    examples of raw text or ids, no `steps`, `callbacks` or progress bar),
    when the labels are arrays and Keras' own loop would add nothing
    either: one device (no `tf.distribute` strategy), no XLA, and the
    compiled loss and metrics built (by an earlier `evaluate` or `fit`;
    the first call goes to Keras, which builds them). The metrics are
    reset first, as `evaluate` resets them.

    Returns:
        What `keras.Model.evaluate` returns (a list of scalars, or a dict
        with `return_dict=True`), or `None`.
    """
    if steps is not None or callbacks is not None or y is None:
        return None
    if verbose not in ("auto", 0) or model.jit_compile:
        return None
    if tf.distribute.has_strategy() or (
        getattr(model, "_distribute_strategy", None) is not None
    ):
        return None
    if not evaluation_ready(model):
        return None
    targets = _arrays(y)
    weights = None if sample_weight is None else _arrays(sample_weight)
    if targets is None or (sample_weight is not None and weights is None):
        return None
    extra = (targets,) if weights is None else (targets, weights)
    extra_specs = tf.nest.map_structure(_unknown_shape_spec, extra)
    extra_key = repr(extra_specs)
    limit = batch_size or DEFAULT_BATCH_SIZE
    texts = _text_columns(model, x, "evaluate")
    if texts is not None:
        if not 0 < len(texts[0]) <= limit:
            return None
        if isinstance(text_packer(model), DocumentWindows):
            check_documents(texts[0])
        function = compiled_function(
            model,
            ("evaluate text", len(texts), extra_key),
            lambda: evaluate_text_function(model, len(texts), extra_specs),
        )
        arguments = (*(tf.constant(t, tf.string) for t in texts), *extra)
    else:
        ids = _ids(model, x)
        if ids is None:
            return None
        if not 0 < int(next(iter(ids.values())).shape[0]) <= limit:
            return None
        function = compiled_function(
            model,
            ("evaluate ids", extra_key),
            lambda: evaluate_ids_function(model, extra_specs),
        )
        arguments = (ids, *extra)
    model.reset_metrics()
    return evaluation_result(model, function(*arguments), return_dict)


def run_in_chunks(model, texts, batch_size, kind, forward=None, progress=None):
    """`forward` (default: the model) on 1-D `texts`, `batch_size` at a
    time through the compiled function for `kind`, in the texts' order.

    More than one chunk's texts are run longest first (by characters, as
    sentence-transformers orders them), so that each chunk pads little.

    Returns:
        The outputs (one tensor) of every text, concatenated in order.
    """
    function = compiled_function(
        model, kind, lambda: text_function(model, 1, forward)
    )
    if len(texts) <= batch_size:
        return function(tf.constant(texts, tf.string))
    order = np.argsort([-len(text) for text in texts], kind="stable")
    chunks = []
    for first in range(0, len(texts), batch_size):
        rows = texts[order[first : first + batch_size]]
        chunks.append(function(tf.constant(rows, tf.string)))
        if progress is not None:
            progress.add(1)
    return tf.gather(tf.concat(chunks, 0), np.argsort(order))


def empty_outputs(model):
    """NumPy arrays of the model's outputs for no examples: batch axis 0,
    and 0 on the other axes the model leaves unknown (no tokens)."""
    return tf.nest.map_structure(
        lambda output: np.zeros(
            (0,) + tuple(size or 0 for size in output.shape[1:]),
            output.dtype,
        ),
        model.output,
    )


def _arrays(values):
    """`values` (an array, list or dict of them) as tensors, or `None`."""
    leaves = tf.nest.flatten(values)
    if not leaves or not all(
        isinstance(leaf, (np.ndarray, tf.Tensor, list)) for leaf in leaves
    ):
        return None
    tensors = [tf.convert_to_tensor(leaf) for leaf in leaves]
    if any(tensor.dtype == tf.string for tensor in tensors):
        return None
    return tf.nest.pack_sequence_as(values, tensors)


def _unknown_shape_spec(tensor):
    return tf.TensorSpec((None,) * len(tensor.shape), tensor.dtype)


def _text_columns(model, x, method="predict"):
    """`x` as a tuple of 1-D arrays of str when it is raw text the model's
    `method` reads (an empty list counts), else `None`."""
    if method not in getattr(model, "TEXT_METHODS", ()):
        return None
    if getattr(model, "preprocessor", None) is None:
        return None
    parts = x if isinstance(x, tuple) else (x,)
    if not 1 <= len(parts) <= 2:
        return None
    columns = []
    for part in parts:
        if isinstance(part, (str, bytes)):
            part = [part]
        if isinstance(part, tf.Tensor):
            if part.dtype != tf.string:
                return None
            part = part.numpy()
        if isinstance(part, list) and not all(
            isinstance(text, (str, bytes)) for text in part
        ):
            return None
        if not isinstance(part, (list, np.ndarray)):
            return None
        array = np.asarray(part, dtype=object)
        if array.ndim != 1 or not all(
            isinstance(text, (str, bytes)) for text in array
        ):
            return None
        columns.append(array)
    if len(columns) == 2 and len(columns[0]) != len(columns[1]):
        return None  # the batched path names the mismatch
    return tuple(columns)


def _ids(model, x):
    """`x` as a dict of tensors when it is exactly the model's ids inputs,
    one row per example, else `None`."""
    names = model.input
    if not isinstance(names, Mapping) or not isinstance(x, Mapping):
        return None
    if set(x) != set(names):
        return None
    ids = {}
    for name, spec in names.items():
        value = x[name]
        if not isinstance(value, (np.ndarray, tf.Tensor, list)):
            return None
        value = tf.convert_to_tensor(value)
        if value.dtype == tf.string or len(value.shape) != len(spec.shape):
            return None
        ids[name] = tf.cast(value, spec.dtype)
    if len({int(value.shape[0]) for value in ids.values()}) != 1:
        return None
    return ids


def _numpy(outputs):
    return tf.nest.map_structure(lambda value: value.numpy(), outputs)
