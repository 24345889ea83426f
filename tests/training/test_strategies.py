"""Strategy from a flag value."""

import pytest
import tensorflow as tf

from keras_bert.training import create_strategy


def test_one_device_and_mirrored():
    assert isinstance(
        create_strategy("one_device"), tf.distribute.OneDeviceStrategy
    )
    mirrored = create_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy)
    # One replica per local GPU, or one on the CPU.
    gpus = len(tf.config.list_logical_devices("GPU"))
    assert mirrored.num_replicas_in_sync == max(gpus, 1)


def test_unknown_strategy_names_the_value():
    with pytest.raises(ValueError, match="name='tpuu'"):
        create_strategy("tpuu")
