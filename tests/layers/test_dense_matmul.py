"""The float32 training matmul with an explicitly transposed kernel in its
backward pass: the gradients of `x @ kernel + bias`, and where it is used."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers import dense_matmul


@pytest.mark.parametrize("with_bias", [True, False])
def test_gradients_equal_tensorflows(with_bias):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(64, 32)), "float32")
    kernel = tf.constant(rng.normal(size=(32, 96)), "float32")
    bias = tf.constant(rng.normal(size=(96,)), "float32")
    upstream = tf.constant(rng.normal(size=(64, 96)), "float32")
    inputs = [x, kernel, bias] if with_bias else [x, kernel]
    results = []
    for function in (
        dense_matmul.dense,
        lambda x, k, b=None: (
            tf.matmul(x, k) if b is None else tf.nn.bias_add(tf.matmul(x, k), b)
        ),
    ):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            y = function(*inputs)
        results.append([y] + tape.gradient(y, inputs, upstream))
    assert len(results[0]) == len(inputs) + 1
    assert [r.shape for r in results[0]] == [r.shape for r in results[1]]
    for ours, theirs in zip(*results):
        # The same products and sums, possibly in another order.
        scale = np.abs(theirs.numpy()).max()
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6 * scale)


def test_used_for_float32_training_with_wide_kernels_only(monkeypatch):
    # On the CPU (on a GPU, never: see the next test).
    monkeypatch.setattr(tf.config, "list_logical_devices", lambda kind: [])
    x = tf.zeros((4, 8))
    wide, square, tall = tf.zeros((8, 16)), tf.zeros((8, 8)), tf.zeros((16, 8))
    assert dense_matmul.use_plain_backward(x, wide, training=True)
    assert dense_matmul.use_plain_backward(x, square, training=True)
    assert not dense_matmul.use_plain_backward(tf.zeros((4, 16)), tall, True)
    assert not dense_matmul.use_plain_backward(x, wide, training=False)
    half = tf.zeros((4, 8), "bfloat16")
    assert not dense_matmul.use_plain_backward(
        half, tf.cast(wide, "bfloat16"), training=True
    )


def test_never_used_on_a_gpu(monkeypatch):
    monkeypatch.setattr(
        tf.config, "list_logical_devices", lambda kind: ["/GPU:0"]
    )
    x, wide = tf.zeros((4, 8)), tf.zeros((8, 16))
    assert not dense_matmul.use_plain_backward(x, wide, training=True)


def test_block_training_gradients_equal_with_and_without(monkeypatch):
    """A float32 block's training step: the same outputs and gradients
    whether its dense layers use the transposed-kernel backward or not."""
    x = tf.constant(np.random.default_rng(1).normal(size=(2, 6, 16)), "float32")
    results = []
    calls = []
    original = dense_matmul.dense

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(dense_matmul, "dense", counted)
    for plain in (True, False):
        monkeypatch.setattr(
            dense_matmul,
            "use_plain_backward",
            lambda *args, _plain=plain: _plain,
        )
        keras.utils.set_random_seed(0)
        block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = block(x, training=True)
            loss = tf.reduce_sum(y * tf.range(16, dtype="float32"))
        results.append(
            [y] + tape.gradient(loss, [x] + block.trainable_variables)
        )
    assert len(calls) == 4  # qkv, attention output, intermediate, output
    assert len(results[0]) == 14
    for a, b in zip(*results):
        scale = np.abs(b.numpy()).max()
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * max(scale, 1))
