"""Eager-mode checks on integer id inputs.

Out-of-range ids are the most common input bug: on CPU TensorFlow's gather
fails with a message that names no argument, and on GPU it silently returns
zeros. When a layer runs eagerly we check the values and name the fix; inside
a compiled graph (`fit`, `predict`, a SavedModel) the check is skipped so it
costs nothing.
"""

import numpy as np
import tensorflow as tf


def check_ids_in_range(ids, upper, name):
    """Raises a `ValueError` if eager `ids` fall outside `[0, upper)`."""
    if not tf.executing_eagerly() or not isinstance(
        ids, (tf.Tensor, np.ndarray)
    ):
        return
    values = np.asarray(ids)
    if values.size == 0:
        return
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= upper:
        bad = high if high >= upper else low
        raise ValueError(
            f"`{name}` must be in [0, {upper}), but received the value {bad}. "
            f"Check that the inputs were produced with this model's "
            f"vocabulary/config (size {upper}), or build the model with a "
            f"larger size."
        )
