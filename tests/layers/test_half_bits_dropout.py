"""HalfBitsDropout: the rate and the expectation hold in float32 and
bfloat16."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import Dropout
from keras_bert.layers import HalfBitsDropout
from tests.helpers import run_layer_saving_test
from tests.helpers import run_serialization_test

N = 4_000_000  # 4 sigma of the dropped fraction at rate 0.1 is 6e-4


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_rate_and_expectation_hold(dtype):
    """Of 4M varied inputs, the dropped fraction is within 4 sigma of 0.1,
    each kept value is `x / (1 - rate)` rounded once to the compute dtype,
    and the mean output equals the mean input within 4 sigma, in float32
    and bfloat16. (Keras' dropout in bfloat16 drops 10.13% and scales by
    1.109375: mean output 0.997 of the input's, about 13 sigma off here.)"""
    layer = HalfBitsDropout(0.1, seed=1, dtype=dtype)
    x = np.random.default_rng(0).uniform(0.5, 1.5, (N // 1000, 1000))
    x = tf.cast(tf.cast(x, layer.compute_dtype), "float32")  # representable
    y = tf.cast(layer(x, training=True), "float64").numpy()
    x = x.numpy().astype("float64")
    dropped = (y == 0).mean()
    sigma = np.sqrt(0.1 * 0.9 / N)
    assert abs(dropped - 0.1) < 4 * sigma, dropped
    assert abs(y.mean() - x.mean()) < 4 * y.std() / np.sqrt(N), (
        y.mean(),
        x.mean(),
    )
    scale = 1 / (1 - 6554 / 2**16)
    kept = y != 0
    # x * scale in float32 arithmetic, then one rounding to the dtype.
    product = x[kept].astype("float32") * np.float32(scale)
    expected = tf.cast(tf.constant(product), layer.compute_dtype)
    np.testing.assert_array_equal(y[kept], tf.cast(expected, "float64").numpy())


def test_odd_sizes_seeds_and_inference():
    layer = HalfBitsDropout(0.5, seed=3)
    x = np.arange(1, 16, dtype="float32").reshape(3, 5)  # odd element count
    a = layer(x, training=True).numpy()
    b = layer(x, training=True).numpy()
    assert a.shape == (3, 5)
    assert set(np.unique(a)) <= set(
        np.unique(np.concatenate([[0], 2 * x.ravel()]))
    )
    assert not np.array_equal(a, b)  # a fresh mask per call
    same = HalfBitsDropout(0.5, seed=3)(x, training=True).numpy()
    np.testing.assert_array_equal(a, same)  # same seed, same mask
    np.testing.assert_array_equal(layer(x, training=False), x)
    np.testing.assert_array_equal(HalfBitsDropout(0.0)(x, training=True), x)


def test_gradient_is_the_mask_times_the_scale():
    layer = HalfBitsDropout(0.3, seed=5)
    x = tf.constant(np.random.default_rng(0).normal(size=(8, 33)), "float32")
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
    grad = tape.gradient(y, x).numpy()
    scale = 1 / (1 - round(0.3 * 2**16) / 2**16)
    np.testing.assert_allclose(
        grad, np.where(y.numpy() != 0, scale, 0.0), rtol=1e-6
    )


def test_noise_shape_uses_keras_dropout():
    layer = HalfBitsDropout(0.5, noise_shape=(None, 1), seed=2)
    y = layer(np.ones((64, 4), "float32"), training=True).numpy()
    # Whole rows are kept or dropped together.
    assert set(np.unique(y.std(axis=1))) == {0.0}


def test_saving():
    layer = HalfBitsDropout(0.2, seed=4)
    rebuilt = run_serialization_test(layer)
    assert type(rebuilt) is HalfBitsDropout and rebuilt.rate == 0.2
    x = np.ones((2, 3), "float32")
    run_layer_saving_test(HalfBitsDropout(0.2), x)
    name = keras.saving.get_registered_name(HalfBitsDropout)
    assert name == "keras_bert>HalfBitsDropout"


def test_the_old_name_still_loads():
    """Older configs name `keras_bert>Dropout` (CHANGELOG.md), now the
    deprecated alias in `keras_bert.deprecations`."""
    assert keras.saving.get_registered_name(Dropout) == "keras_bert>Dropout"
    config = keras.saving.serialize_keras_object(HalfBitsDropout(0.2))
    config.update(
        class_name="Dropout",
        registered_name="keras_bert>Dropout",
        module="keras_bert.layers.dropout",
    )
    rebuilt = keras.saving.deserialize_keras_object(config)
    assert isinstance(rebuilt, HalfBitsDropout) and rebuilt.rate == 0.2
