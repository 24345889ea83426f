"""The pieces every implementation of the encoder block is made of.

Each implementation in `keras_bert.layers.block_implementations` is a
short function composed of these: the q|k|v projection (whole, or column
slices of the fused kernel), the split of heads and their merge, the
scaled scores, the mask and softmax of the attention probabilities, the
dropout-residual-LayerNorm after each sublayer and the activation, each
in a plain form and, where there is one, its XLA-fused form
(`keras_bert.layers.fused_ops`). Defining them once keeps the
implementations computing the same function: they differ only in the
pieces they pick and in how they lay out the work.

Shapes: `batch`, `length` (keys), `queries` (query rows: `length`, or the
number of query positions), `hidden`, `heads`, `head_dim`.
"""

import math

from keras import ops

from keras_bert.layers import fused_ops
from keras_bert.layers.activations import apply_activation

# Added to the attention scores of padding keys. Large enough that
# exp() underflows to exactly 0 in float32, finite so that a row with no real
# key gives a uniform distribution instead of NaN.
MASK_SCORE = -1e9


def softmax_dtype(compute_dtype):
    """The dtype of the scores and the softmax: at least float32 (half
    precision loses too much), float64 in a float64 model (used to check
    parity exactly)."""
    return "float64" if compute_dtype == "float64" else "float32"


def key_mask(padding_mask):
    """`(batch, 1, 1, length)` booleans, true for real keys, or `None`."""
    if padding_mask is None:
        return None
    return ops.cast(padding_mask, "bool")[:, None, None, :]


# ----------------------------------------------------------------------------
# Heads.


def heads_of_qkv(qkv, batch_size, length, num_heads, head_dim):
    """q, k, v `(batch, heads, length, head_dim)` of the fused projection
    (`(batch, length, 3 * hidden)` or `(batch * length, 3 * hidden)`), by
    one 5-D transpose."""
    qkv = ops.reshape(qkv, (batch_size, length, 3, num_heads, head_dim))
    qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # (3, batch, heads, ...)
    return qkv[0], qkv[1], qkv[2]


def split_heads(x, batch_size, length, num_heads, head_dim):
    """`(batch * length, heads * head_dim)` to `(batch, heads, length,
    head_dim)`."""
    x = ops.reshape(x, (batch_size, length, num_heads, head_dim))
    return ops.transpose(x, (0, 2, 1, 3))


def merge_heads(context, shape):
    """`(batch, heads, queries, head_dim)` to `shape`: `(batch, queries,
    hidden)` or `(batch * queries, hidden)`."""
    return ops.reshape(ops.transpose(context, (0, 2, 1, 3)), shape)


def dense_columns(dense, inputs, start, stop, int8):
    """`dense(inputs)[..., start:stop]`, computing those columns only: a
    block's dense layer (no activation) with a float kernel, or, with
    `int8`, the int8 one (`Int8Dense.int8_columns`)."""
    if int8:
        return dense.int8_columns(inputs, start, stop)
    kernel = ops.cast(dense.kernel, dense.compute_dtype)
    x = ops.matmul(inputs, kernel[:, start:stop])
    return x + ops.cast(dense.bias, dense.compute_dtype)[start:stop]


def qkv_heads(block, x, queries, batch_size, length, query_length, options):
    """q `(batch, heads, queries, head_dim)`, k and v `(batch, heads,
    length, head_dim)` of the 2-D rows `x` (q of the rows `queries` when
    given, from the query columns of the fused kernel only)."""
    shape = (block.num_heads, block.head_dim)
    if queries is not None:
        hidden = block.hidden_dim
        query = dense_columns(block.qkv_dense, queries, 0, hidden, options.int8)
        key, value = ops.split(
            dense_columns(block.qkv_dense, x, hidden, 3 * hidden, options.int8),
            2,
            axis=-1,
        )
    elif options.split_qkv_first:
        query, key, value = ops.split(block.qkv_dense(x), 3, axis=-1)
    else:
        return heads_of_qkv(block.qkv_dense(x), batch_size, length, *shape)
    # One 4-D transpose per tensor: faster than one 5-D transpose of
    # q|k|v, which TF's CPU kernels handle badly.
    return (
        split_heads(query, batch_size, query_length, *shape),
        split_heads(key, batch_size, length, *shape),
        split_heads(value, batch_size, length, *shape),
    )


# ----------------------------------------------------------------------------
# Attention probabilities.


def scale_of(head_dim):
    return 1.0 / math.sqrt(head_dim)


def scaled_scores(query, key, head_dim):
    """`(query / sqrt(head_dim)) @ key^T`: `(batch, heads, queries,
    length)`."""
    query = query * ops.cast(scale_of(head_dim), query.dtype)
    return ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))


def attention_probabilities(
    scores, padding_mask, dropout, training, compute_dtype
):
    """Mask, softmax and dropout of the scores in at least float32
    (`softmax_dtype`), returned in `compute_dtype`. The dropout layer
    computes in the softmax's dtype: under mixed precision that saves two
    casts of a `(batch, heads, queries, length)` tensor each way. `dropout`
    may be `None` (inference only)."""
    scores = ops.cast(scores, softmax_dtype(compute_dtype))
    mask = key_mask(padding_mask)
    if mask is not None:
        scores = ops.where(mask, scores, MASK_SCORE)
    probs = ops.softmax(scores, axis=-1)
    if dropout is not None:
        probs = dropout(probs, training=training)
    return ops.cast(probs, compute_dtype)


def fused_attention_probabilities(query, key, padding_mask, dropout, block):
    """`attention_probabilities(scaled_scores(...))` in training, as one
    XLA-fused op that also scales the scores."""
    scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
    return fused_ops.attention_probabilities(
        scores,
        key_mask(padding_mask),
        dropout.rate,
        next_seed(dropout),
        MASK_SCORE,
        block.compute_dtype,
        scale=scale_of(block.head_dim),
    )


# ----------------------------------------------------------------------------
# Add & norm, activation.


def add_norm(x, residual, dense, dropout, layer_norm, training):
    """`layer_norm(residual + dropout(dense(x)))`."""
    x = dropout(dense(x), training=training)
    return layer_norm(residual + x, training=training)


def fused_add_norm(x, residual, dense, dropout, layer_norm):
    """`add_norm` in training: the matmul, then one XLA-fused op that adds
    the bias, drops out, adds the residual and normalises."""
    return fused_ops.dropout_add_layer_norm(
        ops.matmul(x, ops.cast(dense.kernel, dense.compute_dtype)),
        dense.bias.value,
        residual,
        layer_norm.gamma.value,
        layer_norm.beta.value,
        dropout.rate,
        next_seed(dropout),
        layer_norm.epsilon,
    )


def activation(x, block, training, options):
    """The block's activation (`keras_bert.layers.activations`)."""
    return apply_activation(
        x,
        block.activation,
        training=training,
        closed_form=options.closed_form_gelu,
    )


def fused_exact_gelu(x, dense):
    """`gelu(dense(x))` (exact) in training: the matmul, then one XLA-fused
    op that adds the bias and applies the GELU."""
    return fused_ops.exact_gelu(
        ops.matmul(x, ops.cast(dense.kernel, dense.compute_dtype)),
        dense.bias.value,
    )


def next_seed(dropout):
    """The seed a dropout layer's next training call would use."""
    # Keras' Dropout has no seed generator at rate 0.
    return dropout.seed_generator.next() if dropout.rate > 0 else None
