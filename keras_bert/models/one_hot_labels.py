"""A single-label classifier's one-hot rows → class ids.

What `keras_bert.models.label_modes.SingleLabel` (and the other modes of
one class per example) read labels with before `class_labels` checks them
(see `keras_bert.models.labels`): Keras' `to_categorical` rows are
accepted, as their class ids, for the sparse loss the classifier compiles.
"""

import numpy as np

from keras_bert.models.labels import label_lists_as_array
from keras_bert.models.labels import quoted_values

# Losses that take rows of `num_classes` targets, not class ids: a model
# compiled with one keeps its rows.
ROW_LOSSES = (
    "categorical_crossentropy",
    "categorical_focal_crossentropy",
    "categorical_hinge",
    "kl_divergence",
)


def one_hot_ids(labels, num_classes, argument="y", loss=None):
    """One-hot rows `(n, num_classes)` as class ids `(n,)`, checked.

    Args:
        labels: the labels, one per example; anything but rows of
            `num_classes` numbers is returned unchanged.
        num_classes: int. The classifier's classes (`1`: a regressor,
            unchanged).
        argument: str. The argument the labels came in, for the errors.
        loss: the compiled loss, or `None`. One that takes rows
            (`ROW_LOSSES`, e.g. `"categorical_crossentropy"`) keeps them.

    Raises:
        ValueError: a row that is not one-hot (one 1, the rest 0), naming
            it and the fix (multi-label or regression).

    Example:
    ```python
    one_hot_ids([[0, 1, 0], [1, 0, 0]], 3)  # array([1, 0])
    ```
    """
    name = loss if isinstance(loss, str) else getattr(loss, "name", None)
    if num_classes < 2 or name in ROW_LOSSES or isinstance(labels, dict):
        return labels
    rows = np.asarray(label_lists_as_array(labels))
    if not (
        rows.dtype.kind in "biuf"
        and rows.ndim == 2
        and rows.shape[1] == num_classes
    ):
        return labels
    bad = ~(np.all((rows == 0) | (rows == 1), axis=1) & (rows.sum(1) == 1))
    if bad.any():
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{quoted_values(rows, bad)}: rows of {num_classes} numbers "
            "that are not one-hot, for a classifier that gives each "
            "example one class. Pass one class id (or one-hot row) per "
            "example; for several labels per example build "
            f"`BertClassifier(backbone, {num_classes}, multi_label=True)`, "
            "for a score per example `BertClassifier(backbone, 1)` "
            "(regression)."
        )
    return rows.argmax(axis=1)
