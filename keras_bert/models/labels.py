"""Labels given to `fit` and `evaluate`: checked before anything traces.

`keras_bert.models.Task`'s `fit` and `evaluate` (see
`keras_bert.models.raw_text`) check `y` here against the examples in `x`
(raw text or arrays) and, for a `BertClassifier`, against its classes,
before Keras builds a step function: a bad label is a `ValueError` naming
the value, where it is and the fix, not a graph error seconds later.
A `tf.data.Dataset` is not read ahead; its labels are not checked.

Here: the checks every head shares and a classifier's class ids
(`class_labels`); a multi-label classifier's rows are in
`keras_bert.models.multi_hot_labels`, and what each label mode takes in
`keras_bert.models.label_modes`.
"""

import numpy as np
import tensorflow as tf

from keras_bert.models.text_inputs import check_labels
from keras_bert.models.text_inputs import is_text
from keras_bert.models.text_inputs import rows_as_pair
from keras_bert.models.text_inputs import texts_of

# How many bad values an error quotes.
QUOTED = 3


def examples_in(x, argument="x"):
    """The number of examples in `x`, or `None` where it is not known
    without reading it (a `tf.data.Dataset`, a generator, `None`).

    Raw text counts its texts (or pairs); the ids dict and arrays count
    their rows.

    Example:
    ```python
    examples_in(["a good film", "a bad book"])  # 2
    examples_in({"token_ids": np.zeros((3, 8), "int32")})  # 3
    examples_in(tf.data.Dataset.range(4))  # None
    ```
    """
    if isinstance(x, tf.data.Dataset) or x is None:
        return None
    parts = x if isinstance(x, tuple) and x else (x,)
    if all(_is_empty(part) for part in parts):
        return 0
    if is_text(x):
        return len(texts_of(x, argument)[0])
    if isinstance(x, dict) and x:
        x = next(iter(x.values()))
    elif isinstance(x, (tuple, list)) and x and not np.isscalar(x[0]):
        x = x[0]  # several inputs: the first one's rows
    if isinstance(x, (list, np.ndarray, tf.Tensor)):
        shape = np.shape(x) if not isinstance(x, tf.Tensor) else x.shape
        return int(shape[0]) if len(shape) and shape[0] is not None else None
    return None


def check_examples(x, method, argument="x"):
    """The number of examples in `x` (see `examples_in`).

    Raises:
        ValueError: for no examples, naming `method`: `evaluate` has no
            metric of zero examples, `fit` nothing to train on.
    """
    num_examples = examples_in(x, argument)
    if num_examples == 0:
        raise ValueError(
            f"`{method}` received no examples: `{argument}` is empty. "
            + (
                "Metrics of zero examples are undefined, so there is "
                "nothing to report."
                if method == "evaluate"
                else "There is nothing to train on."
            )
            + " Pass at least one example (`predict` on no examples "
            "returns an empty array)."
        )
    return num_examples


def checked_labels(x, y, method, head_labels, argument="y"):
    """`y` checked against the examples in `x`, then by `head_labels`.

    Args:
        x: what `fit` or `evaluate` received: raw text, ids or arrays.
        y: the labels, or `None`.
        method: str. `"fit"` or `"evaluate"`, for the errors.
        head_labels: callable `(labels, argument) -> labels`, the head's
            own check (and mapping of names to ids).
        argument: str. The argument `y` came in, for the errors.

    Returns:
        `y` as numpy arrays (as `head_labels` returns them), or `y`
        unchanged where `x`'s examples are not known (a dataset).

    Raises:
        ValueError: no examples in `x` (`check_examples`), labels of
            another count, or a bad label.
    """
    num_examples = check_examples(x, method)
    if y is None or num_examples is None:
        return y
    examples = "texts" if is_text(x) else "examples"
    return head_labels(
        check_labels(label_lists_as_array(y), num_examples, argument, examples),
        argument,
    )


def label_lists_as_array(labels):
    """A list with a list (tuple, set) of labels per example as a 1-D
    object array of tuples, one per example (NumPy would refuse ragged
    lists, or make equal-length ones a 2-D array); anything else
    unchanged."""
    if not isinstance(labels, (list, tuple)) or not any(
        isinstance(item, (list, tuple, set, frozenset)) for item in labels
    ):
        return labels
    array = np.empty(len(labels), dtype=object)
    for i, item in enumerate(labels):
        array[i] = (
            tuple(item)
            if isinstance(item, (list, tuple, set, frozenset))
            else item
        )
    return array


def checked_validation(validation, head_labels):
    """`validation_data` `(x, y[, sample_weight])` with `y` checked by
    `checked_labels`; anything else unchanged."""
    if not (
        isinstance(validation, (tuple, list)) and 2 <= len(validation) <= 3
    ):
        return validation
    x = rows_as_pair(validation[0])
    labels = checked_labels(
        x, validation[1], "fit", head_labels, "validation_data"
    )
    return (x, labels, *validation[2:])


def class_labels(labels, num_classes, label_names=None, argument="y"):
    """Labels for a classifier (or, with `num_classes=1`, a regressor).

    `labels` are one per example (`check_labels` counted them).

    A classifier takes class ids `0 .. num_classes - 1` (ints, or floats
    that are whole numbers), or the names in `label_names`, one per
    example, `(n,)` or `(n, 1)`; `(n, num_classes)` rows (one-hot or
    probabilities, for a categorical loss you compile) must be finite. A
    regressor takes finite numbers.

    Returns:
        numpy array of the labels (names mapped to their ids), or `None`.

    Raises:
        ValueError: naming the first bad values, their index and the fix:
            strings without
            `label_names` (or not among them); ids out of range; floats
            that are no class ids; NaN or infinity.

    Example:
    ```python
    class_labels(["pos", "neg"], 2, label_names=["neg", "pos"])
    # array([1, 0])
    # class_labels([0, 3], 2) raises ValueError("... 3 at index 1, out of
    # range for num_classes=2 ...")
    ```
    """
    if labels is None or isinstance(labels, dict):
        return labels
    labels = np.asarray(label_lists_as_array(labels))
    if labels.dtype.kind == "O" and any(
        isinstance(item, tuple) for item in labels.ravel()
    ):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: a list "
            "of labels per example, for a classifier that gives each "
            "example one class. For several labels per example build a "
            "multi-label classifier: `BertClassifier(backbone, "
            f"num_classes={num_classes}, multi_label=True, "
            "label_names=[...])`."
        )
    if labels.dtype.kind in "USO":
        return _named_labels(labels, num_classes, label_names, argument)
    if labels.dtype.kind not in "biuf":
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: labels "
            f"of dtype {labels.dtype}. Pass numbers, one per example."
        )
    if labels.dtype.kind == "f":
        bad = ~np.isfinite(labels)
        if bad.any():
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                f"{quoted_values(labels, bad)}. Labels must be finite numbers: "
                "drop those examples or fill in their labels."
            )
    if num_classes == 1 or (labels.ndim == 2 and labels.shape[1] > 1):
        if labels.ndim == 2 and labels.shape[1] != num_classes:
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                f"labels of shape {labels.shape} for num_classes="
                f"{num_classes}. Pass one class id per example, shape "
                f"({len(labels)},)."
            )
        return labels
    if labels.ndim > 2 or (labels.ndim == 2 and labels.shape[1] != 1):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: labels "
            f"of shape {labels.shape}. Pass one class id per example, "
            f"shape ({len(labels)},)."
        )
    if labels.dtype.kind == "f":
        bad = labels != np.round(labels)
        if bad.any():
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                f"{quoted_values(labels, bad)}, where a classifier takes class "
                f"ids 0 to {num_classes - 1}. For scores, build a "
                "regressor: `BertClassifier(backbone, num_classes=1)`."
            )
        labels = labels.astype("int64")
    bad = (labels < 0) | (labels >= num_classes)
    if bad.any():
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{quoted_values(labels, bad)}, out of range for num_classes="
            f"{num_classes} (class ids 0 to {num_classes - 1}). Map the "
            "labels to ids from 0, or build the classifier with "
            f"num_classes={int(labels.max()) + 1}."
        )
    return labels


def _named_labels(labels, num_classes, label_names, argument):
    names = labels.astype(str)
    if num_classes == 1:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: strings "
            f"({quoted_values(names, np.ones(names.shape, bool))}) for a "
            "regressor (num_classes=1), which takes numbers. Convert them, "
            "e.g. `np.asarray(y, dtype='float32')`."
        )
    if label_names is None:
        found = sorted(set(names.ravel().tolist()))
        quoted = found[:QUOTED] + (["..."] if len(found) > QUOTED else [])
        ids = {name: i for i, name in enumerate(found[:num_classes])}
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: string "
            f"labels ({', '.join(quoted)}), where the classifier takes "
            "class ids. Name the classes when you build it, "
            f"`BertClassifier(backbone, num_classes={num_classes}, "
            f"label_names={found[:num_classes]!r})` (class i is "
            "label_names[i]; `fit`, `evaluate` and the export's `label` "
            "output then use the names), or map them to ids yourself: "
            f"`ids = {ids!r}; y = [ids[label] for label in y]`."
        )
    index = {name: i for i, name in enumerate(label_names)}
    bad = ~np.isin(names, label_names)
    if bad.any():
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{quoted_values(names, bad)}, not among the classifier's "
            f"label_names {label_names!r}. Pass only those names (or "
            "class ids)."
        )
    return np.vectorize(index.__getitem__, otypes=["int64"])(names)


def quoted_values(values, bad):
    """`"3 at index 1"`, or the first few such, and how many in all: the
    values of `values` where `bad` (a bool array, one row per example)."""
    rows = np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1))
    quoted = ", ".join(
        f"{_value(values[row])} at index {row}" for row in rows[:QUOTED]
    )
    more = f" (and {len(rows) - QUOTED} more)" if len(rows) > QUOTED else ""
    return quoted + more


def _value(value):
    value = np.asarray(value)
    if value.ndim:
        return repr(value.tolist())
    return repr(value.item())


def _is_empty(x):
    if isinstance(x, np.ndarray):
        return x.ndim > 0 and not len(x)
    return isinstance(x, list) and not x
