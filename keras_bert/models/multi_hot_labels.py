"""A multi-label classifier's labels: names per example → multi-hot rows.

What `keras_bert.models.label_modes.MultiLabel` checks `fit` and
`evaluate`'s labels with (see `keras_bert.models.labels`), and its
`thresholds` (`check_thresholds`).
"""

import numpy as np

from keras_bert.models.labels import QUOTED
from keras_bert.models.labels import label_lists_as_array
from keras_bert.models.labels import quoted_values as _quoted


def multi_hot_labels(labels, num_classes, label_names=None, argument="y"):
    """Labels for a multi-label classifier, as multi-hot float32 rows.

    `labels` are one per example (`check_labels` counted them): either a
    list of label names per example (any number, none included; names
    from `label_names`), or rows `(n, num_classes)` of 0 and 1 (or soft
    targets in `[0, 1]`). A 2-D string array is read as names per row,
    `""` ignored: the export's `labels` output reads back in.

    Returns:
        float32 array `(n, num_classes)`, or `labels` itself for `None`
        or a dict.

    Raises:
        ValueError: naming the first bad values, their index and the fix:
            names without `label_names`, or not among them; one name per
            example where a list is expected; rows of another width;
            values outside `[0, 1]` or not finite.

    Example:
    ```python
    multi_hot_labels([["PER", "LOC"], []], 3, ["PER", "ORG", "LOC"])
    # array([[1., 0., 1.], [0., 0., 0.]], dtype=float32)
    ```
    """
    if labels is None or isinstance(labels, dict):
        return labels
    labels = np.asarray(label_lists_as_array(labels))
    if labels.dtype.kind in "US" and labels.ndim == 2:
        labels = label_lists_as_array(
            [tuple(name for name in row if name) for row in labels.tolist()]
        )
    if labels.dtype.kind == "O":
        return _multi_hot_from_names(labels, num_classes, label_names, argument)
    if labels.dtype.kind in "US":
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: one "
            f"name per example ({_quoted(labels, np.ones(len(labels), bool))}"
            "), where a multi-label classifier takes a list of names per "
            'example, e.g. `[["PER", "LOC"], ["ORG"], []]`.'
        )
    if labels.dtype.kind not in "biuf":
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: labels "
            f"of dtype {labels.dtype}. Pass a list of label names per "
            f"example, or multi-hot rows of shape (n, {num_classes})."
        )
    if labels.ndim != 2 or labels.shape[1] != num_classes:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: labels "
            f"of shape {labels.shape} for a multi-label classifier of "
            f"num_classes={num_classes}. Pass multi-hot rows of shape "
            f"({len(labels)}, {num_classes}) (1 where a label applies), or "
            "a list of label names per example."
        )
    labels = labels.astype("float32")
    bad = ~np.isfinite(labels) | (labels < 0) | (labels > 1)
    if bad.any():
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{_quoted(labels, bad)}. Multi-hot rows hold 0 or 1 (or "
            "targets between them) for each label."
        )
    return labels


def _multi_hot_from_names(labels, num_classes, label_names, argument):
    rows = [
        item if isinstance(item, tuple) else None for item in labels.ravel()
    ]
    if labels.ndim != 1 or any(row is None for row in rows):
        bad = np.array([row is None for row in rows])
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{_quoted(np.array(labels.ravel()), bad)}, where a multi-label "
            "classifier takes a list of names per example (`[]` for none), "
            'e.g. `[["PER", "LOC"], ["ORG"], []]`.'
        )
    names = sorted({str(name) for row in rows for name in row})
    if label_names is None:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: label "
            f"names ({', '.join(names[:QUOTED])}"
            f"{', ...' if len(names) > QUOTED else ''}), but the "
            "classifier has no `label_names`. Name the labels when you "
            f"build it: `BertClassifier(backbone, num_classes={num_classes}"
            f", multi_label=True, label_names={names[:num_classes]!r})`, or "
            f"pass multi-hot rows of shape ({len(rows)}, {num_classes})."
        )
    index = {name: i for i, name in enumerate(label_names)}
    bad = np.array(
        [any(str(name) not in index for name in row) for row in rows]
    )
    if bad.any():
        unknown = sorted(
            {str(n) for row in rows for n in row if str(n) not in index}
        )
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{_quoted(np.array([list(r) for r in rows], dtype=object), bad)}"
            f": {unknown[:QUOTED]!r} not among the classifier's "
            f"label_names {label_names!r}. Pass only those names, or build "
            "the classifier with every name in `label_names`."
        )
    multi_hot = np.zeros((len(rows), num_classes), "float32")
    for i, row in enumerate(rows):
        for name in row:
            multi_hot[i, index[str(name)]] = 1.0
    return multi_hot


def check_thresholds(thresholds):
    """`thresholds` as a list of floats, each in `(0, 1)`."""
    values = (
        np.asarray(thresholds, "float64").ravel()
        if not isinstance(thresholds, (str, bytes))
        else np.array([np.nan])
    )
    if not (
        np.all(np.isfinite(values)) and np.all((values > 0) & (values < 1))
    ):
        raise ValueError(
            "Received an invalid value for argument `thresholds`: "
            f"{thresholds!r}. Pass numbers in (0, 1), one per label, or "
            "None (0.5 each)."
        )
    return [float(value) for value in values]
