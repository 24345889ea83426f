"""The shared argument checks say what was received, as Keras does."""

import pytest
from absl import app

from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate


@pytest.mark.parametrize("value", [1, 7])
def test_positive_int_accepts(value):
    check_positive_int("num_heads", value)


@pytest.mark.parametrize("value", [0, -1, 2.0, "2", None])
def test_positive_int_names_argument_and_value(value):
    message = (
        "Received an invalid value for argument `num_heads`, expected a "
        f"positive integer. Received: num_heads={value!r}"
    )
    with pytest.raises(ValueError) as error:
        check_positive_int("num_heads", value)
    assert str(error.value) == message


def test_positive_int_hint_and_error_class():
    with pytest.raises(ValueError, match=r"integer \(1 for regression\)\. "):
        check_positive_int("num_classes", 0, hint="1 for regression")
    with pytest.raises(app.UsageError, match="--epochs=0"):
        check_positive_int("--epochs", 0, error=app.UsageError)


@pytest.mark.parametrize("value", [0, 0.0, 0.5, 0.999])
def test_rate_accepts(value):
    check_rate("dropout", value)


@pytest.mark.parametrize("value", [1, 1.0, -0.1, 1.5])
def test_rate_names_argument_and_value(value):
    with pytest.raises(ValueError) as error:
        check_rate("dropout", value)
    assert str(error.value) == (
        "Received an invalid value for argument `dropout`, expected a float "
        f"in [0, 1). Received: dropout={value!r}"
    )
