"""GLUE's metrics, computed over a whole evaluation set at once.

Matthews correlation, F1 and the correlations are not averages of
per-example scores, so a mean over batches (what a streaming Keras metric
gives) is not the GLUE number. These functions take every label and
prediction of a split. They follow scikit-learn's and scipy's definitions
(`accuracy_score`, binary `f1_score`, `matthews_corrcoef`, `pearsonr`,
`spearmanr`), which GLUE's own scorer uses, and need only numpy.
"""

import numpy as np

from keras_bert.fine_tuning.glue.tasks import get_glue_task


def accuracy(labels, predictions):
    """Fraction of predictions equal to the label."""
    labels, predictions = _pair(labels, predictions)
    return float(np.mean(labels == predictions))


def f1_score(labels, predictions):
    """Binary F1 of the positive class `1`; `0.0` when it is undefined."""
    labels, predictions = _pair(labels, predictions)
    true_positives = np.sum((labels == 1) & (predictions == 1))
    denominator = np.sum(labels == 1) + np.sum(predictions == 1)
    if denominator == 0:
        return 0.0
    return float(2 * true_positives / denominator)


def matthews_corrcoef(labels, predictions):
    """Matthews correlation, multiclass (Gorodkin's R_K); `0.0` if undefined.

    `cov(y, p) / sqrt(cov(y, y) cov(p, p))` over the confusion matrix.
    """
    labels, predictions = _pair(labels, predictions)
    classes, encoded = np.unique(
        np.concatenate([labels, predictions]), return_inverse=True
    )
    encoded_labels = encoded[: len(labels)]
    encoded_predictions = encoded[len(labels) :]
    confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
    np.add.at(confusion, (encoded_labels, encoded_predictions), 1)
    true_counts = confusion.sum(axis=1)
    predicted_counts = confusion.sum(axis=0)
    correct = np.trace(confusion)
    total = confusion.sum()
    cov_true_predicted = correct * total - true_counts @ predicted_counts
    cov_true_true = total**2 - true_counts @ true_counts
    cov_predicted_predicted = total**2 - predicted_counts @ predicted_counts
    denominator = np.sqrt(cov_true_true * cov_predicted_predicted)
    if denominator == 0:
        return 0.0
    return float(cov_true_predicted / denominator)


def pearson(labels, predictions):
    """Pearson correlation; `nan` when either side is constant."""
    labels, predictions = _pair(labels, predictions, dtype=np.float64)
    labels = labels - labels.mean()
    predictions = predictions - predictions.mean()
    denominator = np.sqrt(np.sum(labels**2) * np.sum(predictions**2))
    if denominator == 0:
        return float("nan")
    return float(np.clip(np.sum(labels * predictions) / denominator, -1, 1))


def spearman(labels, predictions):
    """Spearman correlation: Pearson on ranks, ties given their mean rank."""
    labels, predictions = _pair(labels, predictions, dtype=np.float64)
    return pearson(_average_ranks(labels), _average_ranks(predictions))


METRICS = {
    "accuracy": accuracy,
    "f1": f1_score,
    "matthews_corrcoef": matthews_corrcoef,
    "pearson": pearson,
    "spearman": spearman,
}


def compute_glue_metrics(task, labels, predictions):
    """Every metric of a GLUE task over one evaluation split.

    Args:
        task: `GlueTask` or str.
        labels: array `(num_examples,)`. Label ids, or scores for STS-B.
        predictions: array. Predicted ids `(num_examples,)`, or the
            model's outputs `(num_examples, num_classes)` (logits are
            reduced with argmax; STS-B's `(num_examples, 1)` is
            flattened).

    Returns:
        A dict metric name → float, in the task's order (the first is the
        one that picks the best checkpoint).

    Example:
    ```python
    compute_glue_metrics("mrpc", [1, 0, 1, 1], [1, 0, 0, 1])
    # {"f1": 0.8, "accuracy": 0.75}
    ```
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    predictions = np.asarray(predictions)
    if task.is_regression:
        predictions = predictions.reshape(len(predictions), -1)[:, 0]
    elif predictions.ndim == 2:
        predictions = np.argmax(predictions, axis=-1)
    return {name: METRICS[name](labels, predictions) for name in task.metrics}


def _pair(labels, predictions, dtype=None):
    labels = np.asarray(labels, dtype=dtype).reshape(-1)
    predictions = np.asarray(predictions, dtype=dtype).reshape(-1)
    if labels.shape != predictions.shape:
        raise ValueError(
            f"Expected as many predictions as labels. Received "
            f"{len(predictions)} predictions for {len(labels)} labels."
        )
    if len(labels) == 0:
        raise ValueError("Expected at least one label. Received none.")
    return labels, predictions


def _average_ranks(values):
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Start of each run of equal values, and each run's mean 1-based rank.
    starts = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
    run_ids = np.cumsum(starts) - 1
    run_starts = np.flatnonzero(starts)
    run_ends = np.concatenate([run_starts[1:], [len(values)]])
    mean_ranks = (run_starts + run_ends + 1) / 2.0
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = mean_ranks[run_ids]
    return ranks
