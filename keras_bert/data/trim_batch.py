"""Drops a batch's padding columns, to one of a few lengths."""

import tensorflow as tf


def trim_batch(features, multiple=8):
    """Drops the padding columns every row of a batch has.

    Cuts `(batch, sequence_length)` features to the batch's longest row,
    rounded up to `multiple` (and at most `sequence_length`). The model's
    output does not change: padding is masked. Rounding up bounds the
    distinct batch shapes (`sequence_length / multiple` of them), so that
    a training step traced once per shape
    (`keras_bert.training.trace_per_shape`) can run the static-shape fused
    kernels; on short sentences that padding costs more than fusion saves
    (`benchmarks/RESULTS.md`, section `recipe_steps`), so the GLUE recipe
    cuts exactly (`multiple=1`). Works on a dict of tensors
    (e.g. in `tf.data.Dataset.map`) or of numpy arrays, with a
    `"padding_mask"`; values of another rank than the mask's are kept
    whole. An empty batch keeps one column. Documents read in windows,
    `(batch, windows, sequence_length)`, are cut on their last axis to
    their longest window.

    Args:
        features: dict of `(batch, sequence_length)` (or `(batch, windows,
            sequence_length)`) tensors or arrays.
        multiple: int. The length is rounded up to a multiple of it.

    Example:
    ```python
    import numpy as np
    batch = {
        "token_ids": np.ones((2, 128), "int32"),
        "padding_mask": np.arange(128)[None] < np.array([[5], [40]]),
    }
    trim_batch(batch, multiple=32)["token_ids"].shape  # (2, 64)
    ```
    """
    mask = features["padding_mask"]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(mask, tf.int32), axis=-1))
    # An empty batch keeps a column: models read position 0 ([CLS]).
    longest = tf.maximum(longest, 1)
    full = tf.shape(mask)[-1]
    length = tf.minimum(-(-longest // multiple) * multiple, full)
    rank = len(mask.shape)
    return {
        name: value[..., :length] if len(value.shape) == rank else value
        for name, value in features.items()
    }
