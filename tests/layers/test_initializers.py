"""`encoder_initializer` and the `encoder_assigned_next` context."""

import threading

import keras
import pytest

from keras_bert.layers.initializers import encoder_assigned_next
from keras_bert.layers.initializers import encoder_initializer


def test_truncated_normal_outside_zeros_inside_and_restored():
    assert isinstance(
        encoder_initializer(0.02), keras.initializers.TruncatedNormal
    )
    assert encoder_initializer(0.05).get_config()["stddev"] == 0.05
    with encoder_assigned_next():
        assert isinstance(encoder_initializer(0.02), keras.initializers.Zeros)
    assert isinstance(
        encoder_initializer(0.02), keras.initializers.TruncatedNormal
    )
    with pytest.raises(RuntimeError), encoder_assigned_next():
        raise RuntimeError("a failed load")
    assert isinstance(
        encoder_initializer(0.02), keras.initializers.TruncatedNormal
    )


def test_other_threads_still_draw():
    seen = []
    with encoder_assigned_next():
        thread = threading.Thread(
            target=lambda: seen.append(encoder_initializer(0.02))
        )
        thread.start()
        thread.join()
    assert isinstance(seen[0], keras.initializers.TruncatedNormal)
