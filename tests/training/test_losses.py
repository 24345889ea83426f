"""The masked-LM cross-entropy's XLA path against Keras' loss."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.training import GlobalBatchCrossEntropy
from keras_bert.training import losses


@pytest.fixture
def xla_everywhere(monkeypatch):
    monkeypatch.setattr(losses, "MIN_LOGITS", 0)


def _loss_and_grad(function, labels, logits, upstream):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        values = function(labels, logits)
    return values, tape.gradient(values, logits, upstream)


def _problem(shape=(3, 5, 97), seed=0):
    rng = np.random.default_rng(seed)
    labels = tf.constant(rng.integers(0, shape[-1], shape[:-1]), "int32")
    # Spread logits, as a trained head's are: exp() must not overflow.
    logits = tf.constant(rng.normal(size=shape) * 20, "float32")
    upstream = tf.constant(rng.normal(size=shape[:-1]), "float32")
    return labels, logits, upstream


def test_xla_cross_entropy_equals_keras(xla_everywhere):
    labels, logits, upstream = _problem()
    ours = _loss_and_grad(
        losses.sparse_cross_entropy_from_logits, labels, logits, upstream
    )
    theirs = _loss_and_grad(
        lambda y, x: keras.losses.sparse_categorical_crossentropy(
            y, x, from_logits=True
        ),
        labels,
        logits,
        upstream,
    )
    assert ours[0].shape == theirs[0].shape == (3, 5)
    # Losses up to ~100 (spread logits): float32 rounding of log-sum-exp.
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-5)
    # Gradients up to ~2: a few float32 ulps (exp(x - lse) against TF's
    # softmax).
    np.testing.assert_allclose(ours[1], theirs[1], rtol=0, atol=4e-6)


def test_xla_path_is_taken_for_large_static_logits(monkeypatch):
    keras_calls = []
    keras_loss = keras.losses.sparse_categorical_crossentropy
    monkeypatch.setattr(
        keras.losses,
        "sparse_categorical_crossentropy",
        lambda *args, **kwargs: (
            keras_calls.append(1) or keras_loss(*args, **kwargs)
        ),
    )
    labels, logits, upstream = _problem((2, 4, 30))  # 240 logits
    expected = keras_loss(labels, logits, from_logits=True)
    losses.sparse_cross_entropy_from_logits(labels, logits)
    assert keras_calls == [1]  # below MIN_LOGITS
    monkeypatch.setattr(losses, "MIN_LOGITS", 0)
    static = losses.sparse_cross_entropy_from_logits(labels, logits)
    assert keras_calls == [1]  # the XLA path
    dynamic = tf.function(
        losses.sparse_cross_entropy_from_logits,
        input_signature=[
            tf.TensorSpec((None, 4), "int32"),
            tf.TensorSpec((None, 4, 30), "float32"),
        ],
    )(labels, logits)
    assert keras_calls == [1, 1]  # unknown batch size: Keras' loss
    for values in (static, dynamic):
        # Losses up to ~70: a few float32 ulps.
        np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-5)


def test_out_of_range_labels_raise(xla_everywhere):
    labels, logits, _ = _problem()
    with pytest.raises(tf.errors.InvalidArgumentError, match="< 97"):
        losses.sparse_cross_entropy_from_logits(labels + 97, logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match=">= 0"):
        losses.sparse_cross_entropy_from_logits(labels - 98, logits)


def test_global_batch_cross_entropy_ignores_class_on_the_xla_path(
    xla_everywhere,
):
    labels, logits, _ = _problem()
    labels = tf.tensor_scatter_nd_update(labels, [[0, 0], [2, 4]], [0, 0])
    value = GlobalBatchCrossEntropy(ignore_class=0)(labels, logits)
    each = keras.losses.sparse_categorical_crossentropy(
        labels, logits, from_logits=True
    ).numpy()
    counted = labels.numpy() != 0
    expected = each[counted].mean()
    np.testing.assert_allclose(float(value), expected, rtol=1e-6)
