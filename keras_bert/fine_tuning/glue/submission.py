"""Writes predictions as a GLUE leaderboard submission file."""

import csv
import io
import os

import numpy as np
import tensorflow as tf

from keras_bert import files
from keras_bert.fine_tuning.glue.tasks import get_glue_task


def write_glue_submission(task, split, idx, predictions, output_dir):
    """Writes one test split's predictions in GLUE's submission format.

    The file is `output_dir/<name>` with GLUE's name for the split
    (`MNLI-m.tsv`, `AX.tsv`, `STS-B.tsv`, ...): a header `index
    prediction`, then one row per example in index order, with the label
    as GLUE writes it (`entailment`, `1`, ...) or, for STS-B, the score
    clipped to `[0, 5]`.

    Args:
        task: `GlueTask` or str.
        split: str. A test split of the task, e.g. `"test_matched"`.
        idx: int array `(num_examples,)`. The examples' `idx`.
        predictions: array. Class ids `(num_examples,)`, or model outputs
            `(num_examples, num_classes)` (argmax is taken).
        output_dir: str. Created if needed (any path `tf.io.gfile`
            accepts).

    Returns:
        The path written.

    Example:
    ```python
    write_glue_submission("rte", "test", [0, 1], [1, 0], "/tmp/glue")
    # /tmp/glue/RTE.tsv: index\tprediction, 0\tnot_entailment, ...
    ```
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    submission = task.splits[split].submission
    if submission is None:
        raise ValueError(
            f"Split {split!r} of GLUE task {task.name!r} has labels; only "
            f"test splits get submission files: {', '.join(task.test_splits)}."
        )
    predictions = np.asarray(predictions)
    if task.is_regression:
        values = np.clip(predictions.reshape(len(predictions), -1)[:, 0], 0, 5)
        labels = [f"{value:.3f}" for value in values]
    else:
        if predictions.ndim == 2:
            predictions = np.argmax(predictions, axis=-1)
        labels = [task.labels[int(i)] for i in predictions]
    idx = np.asarray(idx)
    if len(idx) != len(labels):
        raise ValueError(
            f"Expected one prediction per example. Received "
            f"{len(labels)} predictions for {len(idx)} examples."
        )
    tf.io.gfile.makedirs(output_dir)
    path = os.path.join(output_dir, submission)
    text = io.StringIO()
    writer = csv.writer(text, delimiter="\t", lineterminator="\n")
    writer.writerow(["index", "prediction"])
    for position in np.argsort(idx, kind="stable"):
        writer.writerow([int(idx[position]), labels[position]])
    files.write_text(path, text.getvalue())
    return path
