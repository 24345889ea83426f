"""ClosedFormLayerNorm and exact GELU: Keras' forward pass, hand-written
gradients."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import ClosedFormLayerNorm
from keras_bert.layers import LayerNorm
from keras_bert.layers.activations import apply_activation
from tests.helpers import run_layer_saving_test
from tests.helpers import run_serialization_test


def _pair(dtype="float32", **kwargs):
    """Ours and Keras' layer with the same random scale and offset."""
    ours = ClosedFormLayerNorm(epsilon=1e-12, dtype=dtype, **kwargs)
    reference = keras.layers.LayerNormalization(
        epsilon=1e-12, dtype=dtype, **kwargs
    )
    rng = np.random.default_rng(0)
    for layer in (ours, reference):
        layer.build((2, 5, 16))
    for v, r in zip(ours.weights, reference.weights):
        value = rng.normal(1.0, 0.5, v.shape).astype(v.dtype)
        v.assign(value)
        r.assign(value)
    return ours, reference


def _value_and_grads(layer, x, upstream):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(tf.cast(y, "float64") * upstream)
    grads = tape.gradient(loss, [x] + [w.value for w in layer.weights])
    return [y.numpy()] + [g.numpy() for g in grads]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_forward_identical_and_gradients_match_autodiff(dtype):
    """Outputs equal Keras' to float rounding (float32: 1e-6 on O(1) values;
    float64: 1e-14); the closed-form gradients of the input, scale and
    offset match TensorFlow's differentiation of Keras' layer within float
    rounding (float32: rtol 1e-4; float64: 1e-10)."""
    ours, reference = _pair(dtype)
    rng = np.random.default_rng(1)
    # Rows with very different means and spreads, as residual sums have.
    x = (rng.normal(size=(2, 5, 16)) * rng.uniform(0.1, 10, (2, 5, 1))) + 3
    upstream = rng.normal(size=(2, 5, 16))
    a = _value_and_grads(ours, x.astype(dtype), upstream)
    b = _value_and_grads(reference, x.astype(dtype), upstream)
    close = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(a[0], b[0], rtol=close, atol=close)
    tolerance = 1e-4 if dtype == "float32" else 1e-10
    for name, u, v in zip(("dx", "dgamma", "dbeta"), a[1:], b[1:]):
        scale = np.abs(v).max()
        np.testing.assert_allclose(
            u, v, rtol=tolerance, atol=tolerance * scale * 0.1, err_msg=name
        )


def test_layer_norm_in_bfloat16_computes_in_float32_like_keras():
    ours, reference = _pair("mixed_bfloat16")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    upstream = rng.normal(size=(2, 5, 16))
    a = _value_and_grads(ours, tf.cast(x, "bfloat16"), upstream)
    b = _value_and_grads(reference, tf.cast(x, "bfloat16"), upstream)
    assert a[0].dtype == b[0].dtype == tf.bfloat16.as_numpy_dtype
    # Both compute in float32 and round once: within one bf16 ulp.
    np.testing.assert_allclose(
        a[0].astype("float32"), b[0].astype("float32"), rtol=2**-7, atol=1e-6
    )
    # dx is rounded to bfloat16 (8 bits): within two bf16 ulps.
    np.testing.assert_allclose(
        a[1].astype("float32"), b[1].astype("float32"), rtol=2**-6, atol=0.02
    )
    for u, v in zip(a[2:], b[2:]):
        np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs", [{"axis": 1}, {"rms_scaling": True}, {"center": False}]
)
def test_layer_norm_other_settings_fall_back_to_keras(kwargs):
    ours, reference = _pair(**kwargs)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    upstream = rng.normal(size=(2, 5, 16))
    for u, v in zip(
        _value_and_grads(ours, x, upstream),
        _value_and_grads(reference, x, upstream),
    ):
        np.testing.assert_array_equal(u, v)


def test_layer_norm_saving():
    layer = ClosedFormLayerNorm(epsilon=1e-12)
    rebuilt = run_serialization_test(layer)
    assert type(rebuilt) is ClosedFormLayerNorm and rebuilt.epsilon == 1e-12
    x = np.random.default_rng(4).normal(size=(2, 3, 8)).astype("float32")
    run_layer_saving_test(ClosedFormLayerNorm(epsilon=1e-12), x)


def test_the_old_name_still_loads():
    """Older configs name `keras_bert>LayerNorm` (CHANGELOG.md), now the
    deprecated alias in `keras_bert.deprecations`."""
    name = keras.saving.get_registered_name(LayerNorm)
    assert name == "keras_bert>LayerNorm"
    config = keras.saving.serialize_keras_object(ClosedFormLayerNorm())
    config.update(
        class_name="LayerNorm",
        registered_name="keras_bert>LayerNorm",
        module="keras_bert.layers.layer_norm",
    )
    rebuilt = keras.saving.deserialize_keras_object(config)
    assert isinstance(rebuilt, ClosedFormLayerNorm)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_exact_gelu_matches_tf_and_is_at_least_as_accurate(dtype):
    """In float32 the outputs are `tf.nn.gelu` bit for bit. In every dtype
    the outputs and the hand-written derivative `Phi(x) + x * phi(x)` are at
    least as close to the exact values (Python's float64 `math.erfc`) as
    `tf.nn.gelu` and its differentiation, over [-8, 8]. (`tf.nn.gelu` in
    float64 uses a float32 constant for 1/sqrt(2), off by 1e-6 relative;
    in bfloat16 it evaluates `erfc` in bfloat16.)"""
    x = tf.constant(np.linspace(-8, 8, 2001), dtype)

    def value_and_grad(fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        grad = tape.gradient(y, x)
        return (
            tf.cast(y, "float64").numpy(),
            tf.cast(grad, "float64").numpy(),
        )

    ours, our_grad = value_and_grad(
        lambda t: apply_activation(t, "gelu", training=True)
    )
    ref, ref_grad = value_and_grad(lambda t: tf.nn.gelu(t, approximate=False))
    if dtype == "float32":
        np.testing.assert_array_equal(ours, ref)
    points = tf.cast(x, "float64").numpy()
    exact = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in points])
    exact_grad = np.array(
        [
            0.5 * math.erfc(-v / math.sqrt(2))
            + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi)
            for v in points
        ]
    )
    bound = {"float32": 1e-6, "float64": 1e-12, "bfloat16": 2**-6}[dtype]
    for name, a, b, e in (
        ("value", ours, ref, exact),
        ("gradient", our_grad, ref_grad, exact_grad),
    ):
        # Relative to max(1, |value|): values reach 8.
        scale = np.maximum(1.0, np.abs(e))
        our_error = np.max(np.abs(a - e) / scale)
        tf_error = np.max(np.abs(b - e) / scale)
        assert our_error <= max(tf_error, bound), (name, our_error, tf_error)


def test_outside_training_both_are_keras_and_tensorflow_exactly():
    """At inference LayerNorm is Keras' layer and GELU is `tf.nn.gelu`,
    whose graphs TensorFlow's CPU rewrites fuse: outputs are identical."""
    ours, reference = _pair()
    x = np.random.default_rng(5).normal(size=(2, 5, 16)).astype("float32")
    np.testing.assert_array_equal(ours(x), reference(x))
    np.testing.assert_array_equal(
        ours(x, training=False), reference(x, training=False)
    )
    np.testing.assert_array_equal(
        apply_activation(tf.constant(x), "gelu"),
        tf.nn.gelu(tf.constant(x), approximate=False),
    )
