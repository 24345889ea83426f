"""Raw strings given to a task model: recognised, checked, split.

`keras_bert.models.Task`'s `fit`, `evaluate` and `predict` (see
`keras_bert.models.raw_text`) ask `is_text` whether they were given text
instead of ids, and check the texts and labels here before
`keras_bert.models.text_datasets` tokenizes them.
"""

import numpy as np
import tensorflow as tf

_PAIR_HINT = (
    "Pass single texts as a list (or 1-D array) of str, and sentence pairs "
    "as a tuple `(texts_a, texts_b)` of two such, of the same length."
)


def is_text(x):
    """Whether `x` is raw text rather than ids.

    Text is a str, a list, array or tensor of str, a tuple of those (a
    pair), or a `tf.data.Dataset` whose elements (or their first part, the
    inputs) are strings. Anything else (the ids dict, `None`) is not.
    """
    if isinstance(x, tf.data.Dataset):
        return dataset_text_layout(x.element_spec) is not None
    if isinstance(x, tuple):
        return bool(x) and any(_looks_like_text(part) for part in x)
    return _looks_like_text(x)


def checked_x(model, x, method):
    """`x` as `model.method` reads it, checked before anything traces.

    Hugging Face-style pairs, a list of `[text_a, text_b]` rows, become
    the tuple `(texts_a, texts_b)`. `None`, and numbers (a list, array or
    tensor) for a model whose inputs are the ids dict, are a `ValueError`
    naming what was received and what the model takes.
    """
    x = rows_as_pair(x)
    name = f"`{type(model).__name__}.{method}`"
    takes = (
        "raw text (a list of str; pairs as `(texts_a, texts_b)` or a list "
        "of `[text_a, text_b]`; the model needs a preprocessor), the ids "
        "dict (`token_ids`, `segment_ids`, `padding_mask`), or a "
        "`tf.data.Dataset` of either"
    )
    if x is None:
        raise ValueError(f"{name} received x=None. Pass as `x` {takes}.")
    numbers = (list, tuple, np.ndarray, tf.Tensor, int, float, np.generic)
    if (
        _reads_ids_dict(model)
        and isinstance(x, numbers)
        and _has_values(x)
        and not is_text(x)
    ):
        raise ValueError(
            f"{name} cannot read `x`: received {_described(x)}, where it "
            f"reads {takes}."
        )
    return x


def rows_as_pair(x):
    """A list of `[text_a, text_b]` rows (Hugging Face's pairs) as the
    tuple `(texts_a, texts_b)`; anything else unchanged."""
    if isinstance(x, list) and x and all(_is_pair_row(row) for row in x):
        return tuple(list(side) for side in zip(*x))
    return x


def _is_pair_row(row):
    return (
        isinstance(row, (list, tuple))
        and len(row) == 2
        and all(isinstance(text, str) for text in row)
    )


def _reads_ids_dict(model):
    try:
        return isinstance(model.input, dict)
    except (AttributeError, ValueError):  # a model not called yet
        return False


def _has_values(x):
    if isinstance(x, tuple):  # `([], [])`: a pair of no texts
        return any(_has_values(part) for part in x)
    if isinstance(x, list):
        return len(x) > 0
    return 0 not in tuple(getattr(x, "shape", ()))


def _described(x):
    """`"a list of 2 int"`, `"a NumPy array of dtype float64 and shape
    (1, 2)"`, ..."""
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        kind = "tf.Tensor" if isinstance(x, tf.Tensor) else "NumPy array"
        dtype = getattr(x.dtype, "name", x.dtype)
        return f"a {kind} of dtype {dtype} and shape {tuple(x.shape)}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)} {type(x[0]).__name__}"
    return f"the {type(x).__name__} {x!r}"


def texts_of(x, argument="x"):
    """`x` as a tuple of one or two 1-D numpy arrays of str, checked.

    Raises:
        ValueError: naming `argument`, for nested (ragged) lists, pairs
            that are not two texts of the same length, or no texts.
    """
    parts = x if isinstance(x, tuple) else (x,)
    if len(parts) not in (1, 2):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: a tuple "
            f"of {len(parts)} text batches. A tuple means a sentence pair, "
            f"`(texts_a, texts_b)`. {_PAIR_HINT}"
        )
    texts = tuple(_text_array(part, argument) for part in parts)
    if len(texts) == 2 and len(texts[0]) != len(texts[1]):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: a pair "
            f"of {len(texts[0])} first texts and {len(texts[1])} second "
            f"texts. {_PAIR_HINT}"
        )
    if not len(texts[0]):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: no "
            "texts. Pass at least one."
        )
    return texts


def check_labels(labels, num_texts, argument="y", examples="texts"):
    """`labels` as numpy arrays, one per text; `None` stays `None`.

    `examples` names what `x` holds in the error (texts, or rows of ids).
    """
    if labels is None:
        return None
    if isinstance(labels, dict):  # a model of several outputs
        labels = {name: np.asarray(value) for name, value in labels.items()}
    else:
        labels = np.asarray(labels)
    for value in tf.nest.flatten(labels):
        if value.ndim == 0 or len(value) != num_texts:
            received = "one value" if value.ndim == 0 else len(value)
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                f"{received} for {num_texts} {examples} in `x`. Pass one "
                "label per example (per text, or per pair of texts)."
            )
    return labels


def pair_layout(x, pair=None):
    """Whether raw text `x` is sentence pairs, checked against `pair`.

    Args:
        x: raw text (see `is_text`): texts, a tuple `(texts_a, texts_b)`,
            or a `tf.data.Dataset` of either (with labels or without).
        pair: bool or `None`. What the model reads (`BertClassifier.pair`);
            `None`: not known yet.

    Raises:
        ValueError: `x` is pairs and `pair` is `False`, or the reverse.
    """
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        if dataset_text_layout(spec) == "first":
            spec = spec[0]
        is_pair = isinstance(spec, tuple)
    else:
        is_pair = isinstance(x, tuple) and len(x) == 2
    if pair is not None and pair != is_pair:
        layouts = {
            True: "sentence pairs `(texts_a, texts_b)` (pair=True)",
            False: "single texts (pair=False)",
        }
        raise ValueError(
            f"Received {layouts[is_pair]} for `x`, but the model was built "
            f"for (or fit on) {layouts[pair]}. Pass {layouts[pair]}, or "
            f"build a new model with pair={is_pair}."
        )
    return is_pair


def split_last(parts, fraction):
    """`(first, last)`: each of `parts` (or `None`) cut before its last
    `fraction`, as Keras' `validation_split` cuts arrays."""
    texts = texts_of(parts[0])
    num_texts = len(texts[0])
    cut = int(num_texts * (1 - fraction))
    if not 0 < cut < num_texts:
        raise ValueError(
            "Received an invalid value for argument `validation_split`: "
            f"{fraction} of {num_texts} texts leaves no text on one side. "
            "Pass a fraction strictly between 0 and 1 of enough texts."
        )

    def cut_at(value, start, end):
        if value is None:
            return None
        if isinstance(value, (tuple, dict)):  # a pair; labels per output
            return tf.nest.map_structure(
                lambda part: np.asarray(part)[start:end], value
            )
        return np.asarray(value)[start:end]

    x = texts if len(texts) == 2 else texts[0]
    first = tuple(cut_at(v, 0, cut) for v in (x, *parts[1:]))
    last = tuple(cut_at(v, cut, None) for v in (x, *parts[1:]))
    return first, tuple(v for v in last if v is not None)


def dataset_text_layout(spec):
    """`"alone"` (elements are texts), `"first"` (texts, then labels...),
    or `None` (no text) for a dataset's `element_spec`."""
    if _is_text_spec(spec):
        return "alone"
    if isinstance(spec, tuple) and spec and _is_text_spec(spec[0]):
        return "first"
    return None


def _is_text_spec(spec):
    def is_string(s):
        return isinstance(s, tf.TensorSpec) and s.dtype == tf.string

    if isinstance(spec, tuple):
        return len(spec) == 2 and all(is_string(s) for s in spec)
    return is_string(spec)


def _looks_like_text(x):
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "US" or (
            x.dtype == object and x.size and isinstance(x.flat[0], (str, bytes))
        )
    if isinstance(x, tf.Tensor):
        return x.dtype == tf.string
    if isinstance(x, list) and x:
        first = x[0]
        if isinstance(first, (list, tuple)) and first:
            first = first[0]
        return isinstance(first, (str, bytes))
    return False


def _text_array(texts, argument):
    """One side's texts as a 1-D numpy array of str."""
    if isinstance(texts, (str, bytes)):
        texts = [texts]
    if isinstance(texts, tf.Tensor):
        texts = texts.numpy()
    if isinstance(texts, list):
        for index, text in enumerate(texts):
            if not isinstance(text, (str, bytes)):
                what = (
                    "a nested list (ragged texts)"
                    if isinstance(text, (list, tuple, np.ndarray))
                    else f"a {type(text).__name__}"
                )
                raise ValueError(
                    f"Received an invalid value for argument `{argument}`: "
                    f"{what} at index {index}, where a string belongs. "
                    f"{_PAIR_HINT}"
                )
        texts = np.array(texts, dtype=object)
    texts = np.asarray(texts)
    if texts.ndim != 1:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: texts of "
            f"shape {texts.shape}. {_PAIR_HINT} (For an array of pairs "
            "`(num_pairs, 2)`, pass `(array[:, 0], array[:, 1])`.)"
        )
    if texts.dtype == object:
        for index, text in enumerate(texts):
            if not isinstance(text, (str, bytes)):
                raise ValueError(
                    f"Received an invalid value for argument `{argument}`: "
                    f"a {type(text).__name__} at index {index}, where a "
                    f"string belongs. {_PAIR_HINT}"
                )
    return texts
