"""Argument checks shared by the package's constructors.

Each raises a `ValueError` that names the argument, what it expects and
the value received, in Keras' own words.
"""


def check_positive_int(name, value, hint=None):
    """Raises unless `value` is a positive `int`.

    Args:
        name: str. The argument's name, as the caller spells it.
        value: the value received.
        hint: str. Appended to what is expected, e.g. `"(the hidden
            size)"`. Optional.

    Example:
    ```python
    check_positive_int("num_heads", 0)  # ValueError
    ```
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        expected = "a positive integer" + (f" {hint}" if hint else "")
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected "
            f"{expected}. Received: {name}={value!r}"
        )


def check_rate(name, value):
    """Raises unless `value` is a number in `[0, 1)` (a dropout rate).

    Example:
    ```python
    check_rate("dropout", 1.0)  # ValueError
    ```
    """
    if isinstance(value, bool) or not (
        isinstance(value, (int, float)) and 0 <= value < 1
    ):
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected a "
            f"float in [0, 1). Received: {name}={value!r}"
        )
