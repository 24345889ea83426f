"""`GlobalBatchCrossEntropy` on one device."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.training import GlobalBatchCrossEntropy


def _problem(shape=(3, 5, 97), seed=0):
    rng = np.random.default_rng(seed)
    labels = tf.constant(rng.integers(0, shape[-1], shape[:-1]), "int32")
    # Spread logits, as a trained head's are: exp() must not overflow.
    logits = tf.constant(rng.normal(size=shape) * 20, "float32")
    return labels, logits


def test_global_batch_cross_entropy_ignores_class():
    labels, logits = _problem()
    labels = tf.tensor_scatter_nd_update(labels, [[0, 0], [2, 4]], [0, 0])
    value = GlobalBatchCrossEntropy(ignore_class=0)(labels, logits)
    each = keras.losses.sparse_categorical_crossentropy(
        labels, logits, from_logits=True
    ).numpy()
    counted = labels.numpy() != 0
    expected = each[counted].mean()
    np.testing.assert_allclose(float(value), expected, rtol=1e-6)
