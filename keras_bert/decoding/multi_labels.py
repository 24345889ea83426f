"""Multi-label decisions: probabilities over thresholds → label names.

What a multi-label `BertClassifier.predicted_labels` and its exported
SavedModel's `labels` output share, in graph ops (so both give the same
names): the names whose probability is over their label's threshold, in
label order, padded with `""` to one column per label, so every row of a
batch has the same width (TF Serving's REST row format needs that).
"""

import tensorflow as tf


def labels_over_thresholds(probabilities, thresholds, names):
    """The names of the labels over threshold, first in each row.

    Args:
        probabilities: float tensor `(batch, num_labels)`.
        thresholds: float tensor or list `(num_labels,)`: a label is on
            where its probability is over (`>`) its threshold.
        names: string tensor or list `(num_labels,)`.

    Returns:
        string tensor `(batch, num_labels)`: each row's labels that are
        on, in label order, then `""`.

    Example:
    ```python
    labels_over_thresholds(
        tf.constant([[0.9, 0.1, 0.7], [0.2, 0.3, 0.1]]),
        [0.5, 0.5, 0.5], ["PER", "ORG", "LOC"],
    )
    # [[b"PER", b"LOC", b""], [b"", b"", b""]]
    ```
    """
    probabilities = tf.convert_to_tensor(probabilities, tf.float32)
    thresholds = tf.convert_to_tensor(thresholds, tf.float32)
    names = tf.convert_to_tensor(names, tf.string)
    on = probabilities > thresholds  # (batch, num_labels)
    # A stable sort of "off" puts the labels that are on first, each group
    # in label order.
    order = tf.argsort(tf.cast(~on, tf.int32), axis=-1, stable=True)
    on_in_order = tf.gather(on, order, batch_dims=1)
    return tf.where(on_in_order, tf.gather(names, order), "")
