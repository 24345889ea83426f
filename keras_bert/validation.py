"""Argument checks every floor shares, with Keras' wording.

A bad argument is reported where it is received, naming the argument, what
was expected and the value, as Keras' own layers do:

    Received an invalid value for argument `num_heads`, expected a positive
    integer. Received: num_heads=0

Out-of-range ids are the most common input bug: on CPU TensorFlow's gather
fails with a message that names no argument, and on GPU it silently returns
zeros. `check_ids_in_range` checks the values when a layer runs eagerly and
names the fix; inside a compiled graph (`fit`, `predict`, a SavedModel) the
check is skipped so it costs nothing.

Example:
```python
check_positive_int("num_heads", 2)
check_rate("dropout", 0.1)
check_positive_int("num_classes", 0, hint="1 for regression")
# ValueError: ... expected a positive integer (1 for regression). Received:
# num_classes=0
```
"""

import numpy as np
import tensorflow as tf


def check_positive_int(name, value, hint=None, error=ValueError):
    """Raises unless `value` is an `int` of at least 1.

    Args:
        name: str. The argument's name as the caller spells it (`num_heads`,
            or `--epochs` for a flag).
        value: the value received.
        hint: str or `None`. What the number means, added in parentheses
            after "a positive integer" (e.g. `"1 for regression"`).
        error: the exception class to raise. Defaults to `ValueError`; a
            recipe passes `absl.app.UsageError`.
    """
    if isinstance(value, int) and value >= 1:
        return
    expected = "a positive integer" + (f" ({hint})" if hint else "")
    raise error(
        f"Received an invalid value for argument `{name}`, expected "
        f"{expected}. Received: {name}={value!r}"
    )


def check_rate(name, value, error=ValueError):
    """Raises unless `0 <= value < 1` (a dropout rate, a fraction held out).

    Args:
        name: str. The argument's name as the caller spells it.
        value: the value received.
        error: the exception class to raise. Defaults to `ValueError`.
    """
    if 0 <= value < 1:
        return
    raise error(
        f"Received an invalid value for argument `{name}`, expected a float "
        f"in [0, 1). Received: {name}={value!r}"
    )


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


def check_text_only_options(method, options):
    """Raises `TypeError` if `options` (a `predict`'s export options, e.g.
    `doc_stride`) were given for ids, where they mean nothing.

    Args:
        method: str. The method, e.g. `"BertQuestionAnswerer.predict"`.
        options: dict of the keyword arguments received.
    """
    if options:
        raise TypeError(
            f"{method} got the keyword arguments {sorted(options)}, which "
            "apply to raw text only (the export's options); received ids. "
            "Drop them, or pass raw text."
        )
