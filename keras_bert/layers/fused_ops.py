"""XLA-fused element-wise stretches of the encoder block's training step.

Between its matmuls, a training step of `TransformerEncoderBlock` runs
chains of memory-bound element-wise work: scale, mask, softmax and dropout
of the attention scores; dropout, residual add and LayerNorm after each
sublayer; the GELU. TensorFlow's graph executor runs each op of such a chain
as its own kernel, one pass over memory per op, plus casts under mixed
precision. Each function here compiles one chain (and, separately, its
hand-written gradient) with XLA, which fuses it into one or two passes.
The forward functions hand their boolean dropout mask to the backward ones
(one byte per element, where the random words it came from take two).
The math and the dropout masks are those of the unfused layers
(`HalfBitsDropout`, `ClosedFormLayerNorm`, `apply_activation`): the same
seeds give the same masks, and outputs agree to float rounding (tested).

These are used only in training, on TensorFlow, in float32 and under a
16-bit compute dtype (`mixed_bfloat16`, `mixed_float16`, where they also
remove most of the casts to and from float32 around the element-wise
work), and only for tensors whose shape is static when the step is
traced (a fixed-size batch, as the pre-training pipeline and
`drop_remainder=True` give): XLA compiles once per shape, so a step traced
with unknown shapes (GLUE batches cut to their longest sentence) keeps the
unfused ops instead of recompiling for every new batch shape. float64 keeps
the unfused ops too (they compute in float64, as parity checks need). The two
fused ops after a dense layer also add its bias and sum its gradient, so
that the bias gradient costs no pass of its own. Measured in the
`ablation_*` sections of `benchmarks/RESULTS.md` (variant `unfused`).
"""

import keras

from keras_bert.layers.activations import gelu_cdf
from keras_bert.layers.activations import gelu_gradient
from keras_bert.layers.closed_form_layer_norm import normalize
from keras_bert.layers.closed_form_layer_norm import normalize_gradient
from keras_bert.layers.half_bits_dropout import dropout_scale
from keras_bert.layers.half_bits_dropout import dropout_threshold
from keras_bert.layers.half_bits_dropout import keep_mask
from keras_bert.layers.half_bits_dropout import random_words
from keras_bert.layers.xla import compiled

# Below this many elements per tensor, the XLA launch and the compilation
# cost more than fusion saves (a block's forward and backward pass, timed
# fused and unfused at sizes around this one, in float32 and bfloat16);
# tiny models keep the unfused ops. Tests set it to 0 to exercise the
# fused path on tiny shapes.
MIN_ELEMENTS = 65536


def can_fuse(x):
    """Whether the fused ops apply to a training step on `x`."""
    if keras.backend.backend() != "tensorflow":
        return False
    shape = getattr(x, "shape", None)
    if shape is None or any(d is None for d in shape):
        return False
    # float64 (used to check parity exactly) keeps the unfused ops, which
    # compute in float64; the fused ones compute in float32.
    dtype = keras.backend.standardize_dtype(x.dtype)
    return dtype in ("float32", "bfloat16", "float16") and (
        shape.num_elements() >= MIN_ELEMENTS
    )


# ----------------------------------------------------------------------------
# Dropout, residual add, LayerNorm: `LayerNorm(residual + Dropout(x))`.


def _add_norm_forward(
    x, bias, residual, words, gamma, beta, threshold, epsilon
):
    import tensorflow as tf

    z = tf.cast(x, tf.float32) + tf.cast(bias, tf.float32)
    keep = None
    if words is not None:
        keep = keep_mask(words, x.shape, threshold, x.shape.num_elements())
        z = tf.where(keep, z * dropout_scale(threshold), 0.0)
    x_hat, inverse_std = normalize(z + tf.cast(residual, tf.float32), epsilon)
    outputs = x_hat * tf.cast(gamma, tf.float32) + tf.cast(beta, tf.float32)
    return tf.cast(outputs, x.dtype), x_hat, inverse_std, keep


def _add_norm_backward(upstream, x_hat, inverse_std, keep, gamma, threshold):
    import tensorflow as tf

    dtype = upstream.dtype
    dz, d_gamma, d_beta = normalize_gradient(
        tf.cast(upstream, tf.float32),
        x_hat,
        inverse_std,
        tf.cast(gamma, tf.float32),
    )
    dx = dz
    if keep is not None:
        dx = tf.where(keep, dz * dropout_scale(threshold), 0.0)
    d_bias = tf.reduce_sum(dx, axis=list(range(len(x_hat.shape) - 1)))
    return tf.cast(dx, dtype), d_bias, tf.cast(dz, dtype), d_gamma, d_beta


def dropout_add_layer_norm(x, bias, residual, gamma, beta, rate, seed, epsilon):
    """`LayerNorm(residual + Dropout(x + bias))` over the last axis, fused
    by XLA. `bias` (the preceding dense layer's) is added in float32, and its
    gradient summed in the same pass as the others.

    The dropout mask is the one `keras_bert.layers.HalfBitsDropout` draws
    from `seed`; the LayerNorm computes in float32 with the closed-form
    gradient of `keras_bert.layers.ClosedFormLayerNorm`. Returns `x`'s
    dtype. TensorFlow only, static shapes only (see `can_fuse`).
    """
    import tensorflow as tf

    threshold = dropout_threshold(rate)
    words = random_words(x.shape.num_elements(), seed) if threshold else None
    forward = compiled(_add_norm_forward)
    backward = compiled(_add_norm_backward)

    @tf.custom_gradient
    def add_norm(x, bias, residual, gamma, beta):
        outputs, x_hat, inverse_std, keep = forward(
            x, bias, residual, words, gamma, beta, threshold, epsilon
        )

        def grad(upstream):
            dx, d_bias, dz, d_gamma, d_beta = backward(
                upstream, x_hat, inverse_std, keep, gamma, threshold
            )
            return (
                dx,
                tf.cast(d_bias, bias.dtype),
                tf.cast(dz, residual.dtype),
                tf.cast(d_gamma, gamma.dtype),
                tf.cast(d_beta, beta.dtype),
            )

        return outputs, grad

    return add_norm(x, bias, residual, gamma, beta)


# ----------------------------------------------------------------------------
# Exact GELU.


def _gelu_forward(x, bias):
    import tensorflow as tf

    x32 = tf.cast(x, tf.float32) + tf.cast(bias, tf.float32)
    return tf.cast(x32 * gelu_cdf(x32), x.dtype)


def _gelu_backward(upstream, x, bias):
    import tensorflow as tf

    x32 = tf.cast(x, tf.float32) + tf.cast(bias, tf.float32)
    grad = gelu_gradient(tf.cast(upstream, tf.float32), x32, gelu_cdf(x32))
    d_bias = tf.reduce_sum(grad, axis=list(range(len(x.shape) - 1)))
    return tf.cast(grad, upstream.dtype), d_bias


def exact_gelu(x, bias):
    """Exact GELU `x * Phi(x)` of `x + bias`, fused by XLA, computed in
    float32.

    The products of `activations._exact_gelu` (`Phi` is
    `activations.gelu_cdf`); the backward pass
    recomputes `Phi` from `x + bias` instead of keeping it, and sums the
    bias gradient in the same pass. TensorFlow only, static shapes only (see
    `can_fuse`).
    """
    import tensorflow as tf

    forward = compiled(_gelu_forward)
    backward = compiled(_gelu_backward)

    @tf.custom_gradient
    def gelu(x, bias):
        def grad(upstream):
            dx, d_bias = backward(upstream, x, bias)
            return dx, tf.cast(d_bias, bias.dtype)

        return forward(x, bias), grad

    return gelu(x, bias)


# ----------------------------------------------------------------------------
# Attention probabilities: mask, softmax and dropout of the scores.


def _softmax_forward(
    scores, key_mask, words, threshold, mask_score, dtype, scale
):
    import tensorflow as tf

    scores = tf.cast(scores, tf.float32) * scale
    if key_mask is not None:
        scores = tf.where(key_mask, scores, mask_score)
    probs = tf.nn.softmax(scores, axis=-1)
    dropped, keep = probs, None
    if words is not None:
        keep = keep_mask(
            words, probs.shape, threshold, probs.shape.num_elements()
        )
        dropped = tf.where(keep, probs * dropout_scale(threshold), 0.0)
    return tf.cast(dropped, dtype), probs, keep


def _softmax_backward(upstream, probs, key_mask, keep, threshold, dtype, scale):
    import tensorflow as tf

    upstream = tf.cast(upstream, tf.float32)
    if keep is not None:
        upstream = tf.where(keep, upstream * dropout_scale(threshold), 0.0)
    # probs * (upstream - sum(upstream * probs)), with the product formed
    # once, and the row test below instead of a test per element, keep
    # this pass cheap (its worth is in the `unfused` ablation row,
    # `benchmarks/RESULTS.md`).
    weighted = upstream * probs
    grad = weighted - probs * tf.reduce_sum(weighted, axis=-1, keepdims=True)
    if key_mask is not None:
        # Masked scores were replaced by a constant, so their gradient is
        # 0. Where a row has a real key, a masked key's probability is
        # exactly 0 (exp underflows), and so is its gradient above; a row
        # with no real key (uniform probabilities) gets 0 here. Testing
        # the row instead of every element keeps this pass cheap.
        has_key = tf.reduce_any(key_mask, axis=-1, keepdims=True)
        grad = tf.where(has_key, grad, 0.0)
    return tf.cast(grad * scale, dtype)


def attention_probabilities(
    scores, key_mask, rate, seed, mask_score, dtype, scale=1.0
):
    """`Dropout(softmax(where(key_mask, scale * scores, mask_score)))`, fused
    by XLA.

    Scaling the scores here (by `1 / sqrt(head_dim)`) instead of the
    queries before their matmul saves the block a pass over the queries
    each way; with a power-of-two scale (head size 64) the scaled scores
    are the same to the bit.

    Computes in float32, like the block's unfused path (softmax and
    attention dropout in float32), and returns `dtype`. `key_mask` is a boolean
    tensor broadcastable to `scores`, or `None`. The dropout mask is the one
    `keras_bert.layers.HalfBitsDropout` draws from `seed`. TensorFlow only,
    static shapes only (see `can_fuse`).
    """
    import tensorflow as tf

    threshold = dropout_threshold(rate)
    count = scores.shape.num_elements()
    words = random_words(count, seed) if threshold else None
    forward = compiled(_softmax_forward)
    backward = compiled(_softmax_backward)

    @tf.custom_gradient
    def probabilities(scores):
        dropped, probs, keep = forward(
            scores, key_mask, words, threshold, mask_score, dtype, scale
        )

        def grad(upstream):
            return backward(
                upstream, probs, key_mask, keep, threshold, scores.dtype, scale
            )

        return dropped, grad

    return probabilities(scores)
