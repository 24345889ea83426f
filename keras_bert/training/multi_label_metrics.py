"""Multi-label metrics: micro/macro F1, subset accuracy, tuned thresholds.

A multi-label classifier (`BertClassifier(..., multi_label=True)`) gives
each label its own sigmoid; a label is predicted where its probability is
over the label's threshold. This module holds the two halves of scoring
that:

- `MultiLabelF1` and `SubsetAccuracy`: Keras metrics on logits, for
  `compile`, `fit` and `evaluate` (threshold `0.5` on the probability,
  i.e. `0` on the logit);
- `multi_label_scores` and `tune_thresholds`: NumPy, over a whole split
  (what the classify recipe reports every epoch), with a threshold per
  label.

F1 is scikit-learn's: micro pools every label's true positives, false
positives and false negatives; macro averages the labels' F1, a label
with nothing true and nothing predicted counting 0 (scikit-learn's
`zero_division=0`). Subset accuracy is the share of examples whose whole
label set is right (scikit-learn's `accuracy_score` on multi-hot rows).
"""

import keras
import numpy as np
from keras import ops

# Where `tune_thresholds` looks: coarse enough not to fit the dev set's
# noise, fine enough to move a rare label's F1.
THRESHOLD_GRID = tuple(np.round(np.arange(0.05, 0.951, 0.05), 2).tolist())


@keras.saving.register_keras_serializable(package="keras_bert")
class MultiLabelF1(keras.metrics.F1Score):
    """F1 of multi-label predictions from logits, micro or macro averaged.

    `keras.metrics.F1Score` on `sigmoid(logits) > threshold`; labels are
    multi-hot rows `(batch, num_labels)`.

    Args:
        average: str. `"micro"` (pooled over labels) or `"macro"` (the
            mean of the labels' F1). Defaults to `"micro"`.
        threshold: float. Probability over which a label is predicted.
            Defaults to `0.5`.
        from_logits: bool. Whether predictions are logits (sigmoid first)
            or probabilities. Defaults to `True`.
        name: str. Defaults to `"<average>_f1"`.
        dtype: the metric's dtype.

    Example:
    ```python
    metric = keras_bert.training.MultiLabelF1("micro")
    metric.update_state([[1, 0], [1, 1]], [[2.0, -1.0], [3.0, -2.0]])
    metric.result()  # 0.8: tp 2, fp 0, fn 1
    ```
    """

    def __init__(
        self,
        average="micro",
        threshold=0.5,
        from_logits=True,
        name=None,
        dtype=None,
    ):
        if average not in ("micro", "macro"):
            raise ValueError(
                "Received an invalid value for argument `average`, expected "
                f"'micro' or 'macro'. Received: average={average!r}"
            )
        super().__init__(
            average=average,
            threshold=float(threshold),
            name=name or f"{average}_f1",
            dtype=dtype,
        )
        self.from_logits = from_logits

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.from_logits:
            y_pred = ops.sigmoid(ops.cast(y_pred, "float32"))
        return super().update_state(y_true, y_pred, sample_weight)

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits}


@keras.saving.register_keras_serializable(package="keras_bert")
class SubsetAccuracy(keras.metrics.MeanMetricWrapper):
    """Share of examples whose every label is right (exact match).

    Args:
        threshold: float. Probability over which a label is predicted.
            Defaults to `0.5`.
        from_logits: bool. Whether predictions are logits. Defaults to
            `True`.
        name: str. Defaults to `"subset_accuracy"`.
        dtype: the metric's dtype.

    Example:
    ```python
    metric = keras_bert.training.SubsetAccuracy()
    metric.update_state([[1, 0], [1, 1]], [[2.0, -1.0], [3.0, -2.0]])
    metric.result()  # 0.5
    ```
    """

    def __init__(
        self,
        threshold=0.5,
        from_logits=True,
        name="subset_accuracy",
        dtype=None,
    ):
        super().__init__(
            _subset_match,
            name=name,
            dtype=dtype,
            threshold=float(threshold),
            from_logits=from_logits,
        )
        self.threshold = float(threshold)
        self.from_logits = from_logits

    def get_config(self):
        return {
            "threshold": self.threshold,
            "from_logits": self.from_logits,
            "name": self.name,
            "dtype": self.dtype,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _subset_match(y_true, y_pred, threshold, from_logits):
    y_pred = ops.cast(y_pred, "float32")
    if from_logits:
        y_pred = ops.sigmoid(y_pred)
    predicted = ops.greater(y_pred, threshold)
    truth = ops.greater(ops.cast(y_true, "float32"), 0.5)
    return ops.cast(ops.all(ops.equal(predicted, truth), axis=-1), "float32")


def multi_label_scores(labels, probabilities, thresholds=0.5):
    """Micro and macro F1 and subset accuracy over a whole split.

    Args:
        labels: multi-hot array `(examples, num_labels)` of 0 and 1.
        probabilities: float array `(examples, num_labels)`.
        thresholds: float, or one per label: a label is predicted where
            its probability is over its threshold. Defaults to `0.5`.

    Returns:
        dict of floats: `micro_f1`, `macro_f1`, `subset_accuracy`.

    Example:
    ```python
    multi_label_scores([[1, 0], [1, 1]], [[0.9, 0.2], [0.8, 0.4]])
    # {'micro_f1': 0.8, 'macro_f1': 0.5, 'subset_accuracy': 0.5}
    ```
    """
    truth = np.asarray(labels) > 0.5
    predicted = np.asarray(probabilities) > np.asarray(thresholds, "float32")
    true_positives = (truth & predicted).sum(axis=0)
    false_positives = (~truth & predicted).sum(axis=0)
    false_negatives = (truth & ~predicted).sum(axis=0)
    return {
        "micro_f1": _f1(
            true_positives.sum(), false_positives.sum(), false_negatives.sum()
        ),
        "macro_f1": float(
            np.mean(
                [
                    _f1(tp, fp, fn)
                    for tp, fp, fn in zip(
                        true_positives, false_positives, false_negatives
                    )
                ]
            )
        ),
        "subset_accuracy": float(np.mean((truth == predicted).all(axis=-1))),
    }


def tune_thresholds(labels, probabilities, grid=THRESHOLD_GRID):
    """The threshold of each label that maximises its F1 on a split.

    Each label is tuned on its own (which maximises macro F1, and in
    practice micro F1 with it); among thresholds of equal F1 the one
    nearest `0.5` wins, so a label with no signal keeps `0.5`.

    Args:
        labels: multi-hot array `(examples, num_labels)`.
        probabilities: float array `(examples, num_labels)`.
        grid: the thresholds tried. Defaults to `0.05, 0.10, ..., 0.95`.

    Returns:
        list of float, one per label.

    Example:
    ```python
    tune_thresholds([[1], [0], [1]], [[0.3], [0.1], [0.6]])  # [0.25]
    ```
    """
    truth = np.asarray(labels) > 0.5
    probabilities = np.asarray(probabilities)
    grid = sorted(grid, key=lambda t: (abs(t - 0.5), t))
    thresholds = []
    for label in range(truth.shape[1]):
        best, best_f1 = 0.5, -1.0
        for threshold in grid:
            predicted = probabilities[:, label] > threshold
            f1 = _f1(
                (truth[:, label] & predicted).sum(),
                (~truth[:, label] & predicted).sum(),
                (truth[:, label] & ~predicted).sum(),
            )
            if f1 > best_f1:
                best, best_f1 = threshold, f1
        thresholds.append(float(best))
    return thresholds


def _f1(true_positives, false_positives, false_negatives):
    denominator = 2 * true_positives + false_positives + false_negatives
    return float(2 * true_positives / denominator) if denominator else 0.0
