"""How `TransformerEncoderBlock` runs: its implementations, in one table,
and the one function that chooses among them.

Every implementation computes the same function (to float rounding) from
the block's own weights and returns `(outputs, attention_probabilities)`:

- `fused_training`: 2-D `(tokens, hidden)` matmuls, the element-wise
  chains between them XLA-fused (`keras_bert.layers.fused_ops`).
  Selected in training with `"xla_fused_ops"`, a static shape large
  enough to pay (`fused_ops.can_fuse`) and float weights.
- `fast`: 2-D matmuls, Keras' layers between them. Selected with
  `"split_qkv_first"`, or query rows to compute.
- `reference`: the formula, top to bottom. Selected otherwise.

The first row that can run the call (training or inference, int8
weights) and applies to it runs: `select_implementation`, the only code
that reads the block's `optimizations`, the training flag, the input's
dtype and static shape and the weights' quantization. A block of a served
model (`keras_bert.serving.served_copy`) holds a `served_call` instead,
which `run_block` runs at inference: the serving implementations live on
the serving floor (`keras_bert.serving.runtime.block`), chosen by the
export's plan, not here. With
`query_positions`, every implementation but `reference` computes only the
query rows (keys and values still from every token) when
`"query_positions_only"` is on; otherwise the implementation runs at every
position and its outputs are gathered (`run_block`). The pieces they are
made of (mask, softmax dtype, heads, q|k|v columns, add & norm,
activation) are defined once, in `keras_bert.layers.block_pieces`.

Adding an implementation takes four things: a name and its place in
`IMPLEMENTATIONS` (first match wins); what it can run and a predicate
over `Conditions` (`applies`; a new condition is read in
`select_implementation`, nowhere else); a function `(block, call) ->
(outputs, probabilities)` built from `block_pieces`; and its row in
tests/layers/test_block_implementations.py, which runs every name in the
table against `reference`, in every mode the row says it can run, and
fails on a name it does not know.

This module also chooses the LayerNorm and dropout layer classes the
`optimizations` name (`layer_norm_class`, `dropout_class`).
"""

import functools
from typing import Callable
from typing import NamedTuple

import keras
from keras import ops

from keras_bert.layers import block_pieces as pieces
from keras_bert.layers import fused_ops
from keras_bert.layers.closed_form_layer_norm import ClosedFormLayerNorm
from keras_bert.layers.half_bits_dropout import HalfBitsDropout


class Conditions(NamedTuple):
    """A call of the block, as `Implementation.applies` sees it."""

    fusable: bool  # "xla_fused_ops" and `fused_ops.can_fuse(inputs)`
    split_qkv_first: bool
    query_rows: bool  # query positions, to compute at those rows only


class BlockCall(NamedTuple):
    """One call, as an implementation receives it."""

    inputs: object
    padding_mask: object
    query_positions: object  # `None` unless computed at those rows only
    training: object
    closed_form_gelu: bool
    split_qkv_first: bool
    int8: bool  # the dense layers hold int8 weights


class Implementation(NamedTuple):
    """A row of `IMPLEMENTATIONS`: when it is chosen, what runs, and what
    it can run (a training call, an inference call, int8 weights, only the
    query rows)."""

    applies: Callable  # Conditions -> bool, among the capable ones
    function: Callable  # (block, BlockCall) -> (outputs, probabilities)
    training: bool
    inference: bool
    int8: bool
    query_rows: bool


# ----------------------------------------------------------------------------
# The implementations.


def reference(block, call):
    """The block at every position, as the formula reads."""
    inputs, training = call.inputs, call.training
    batch_size, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
    # Self-attention.
    qkv = block.qkv_dense(inputs)  # (batch, length, 3 * hidden)
    query, key, value = pieces.heads_of_qkv(
        qkv, batch_size, length, block.num_heads, block.head_dim
    )  # each (batch, heads, length, head_dim)
    scores = pieces.scaled_scores(query, key, block.head_dim)
    probs = pieces.attention_probabilities(
        scores,
        call.padding_mask,
        block.attention_probs_dropout,
        training,
        block.compute_dtype,
    )  # (batch, heads, length, length)
    context = pieces.merge_heads(
        ops.matmul(probs, value), (batch_size, length, block.hidden_dim)
    )
    x = pieces.add_norm(
        context,
        inputs,
        block.attention_output_dense,
        block.attention_output_dropout,
        block.attention_layer_norm,
        training,
    )
    # Feed-forward.
    hidden = pieces.activation(
        block.intermediate_dense(x), block, training, call
    )  # (batch, length, intermediate)
    outputs = pieces.add_norm(
        hidden,
        x,
        block.output_dense,
        block.output_dropout,
        block.output_layer_norm,
        training,
    )
    return outputs, probs


def two_dimensional(block, call, fuse):
    """The block on 2-D `(tokens, hidden)` rows, where TensorFlow fuses the
    bias add (and, at inference, the GELU) into the matmul; only the query
    rows with `call.query_positions`. With `fuse` (training), the
    element-wise chains between the matmuls run as XLA-fused ops."""
    inputs, positions = call.inputs, call.query_positions
    training = call.training
    batch_size, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
    x = ops.reshape(inputs, (-1, block.hidden_dim))  # (tokens, hidden)
    queries, query_length = None, length
    residual = x
    if positions is not None:
        query_length = ops.shape(positions)[1]
        queries = residual = ops.reshape(
            ops.take_along_axis(inputs, positions[:, :, None], axis=1),
            (-1, block.hidden_dim),
        )  # (batch * queries, hidden)
    query, key, value = pieces.qkv_heads(
        block, x, queries, batch_size, length, query_length, call
    )
    if fuse:
        probs = pieces.fused_attention_probabilities(
            query, key, call.padding_mask, block.attention_probs_dropout, block
        )
    else:
        probs = pieces.attention_probabilities(
            pieces.scaled_scores(query, key, block.head_dim),
            call.padding_mask,
            block.attention_probs_dropout,
            training,
            block.compute_dtype,
        )
    context = pieces.merge_heads(
        ops.matmul(probs, value), (batch_size * query_length, block.hidden_dim)
    )
    sublayers = (
        (block.attention_output_dense, block.attention_output_dropout,
         block.attention_layer_norm),
        (block.output_dense, block.output_dropout, block.output_layer_norm),
    )  # fmt: skip
    if fuse:
        x = pieces.fused_add_norm(context, residual, *sublayers[0])
    else:
        x = pieces.add_norm(context, residual, *sublayers[0], training)
    if fuse and block.activation == "gelu":
        hidden = pieces.fused_exact_gelu(x, block.intermediate_dense)
    else:
        hidden = pieces.activation(
            block.intermediate_dense(x), block, training, call
        )
    if fuse:
        outputs = pieces.fused_add_norm(hidden, x, *sublayers[1])
    else:
        outputs = pieces.add_norm(hidden, x, *sublayers[1], training)
    outputs = ops.reshape(outputs, (batch_size, query_length, block.hidden_dim))
    return outputs, probs


# ----------------------------------------------------------------------------
# The table: the first row that can run the call and applies to it runs.


IMPLEMENTATIONS = {
    "fused_training": Implementation(
        applies=lambda c: c.fusable,
        function=functools.partial(two_dimensional, fuse=True),
        training=True,
        inference=False,
        int8=False,
        query_rows=True,
    ),
    "fast": Implementation(
        applies=lambda c: c.split_qkv_first or c.query_rows,
        function=functools.partial(two_dimensional, fuse=False),
        training=True,
        inference=True,
        int8=True,
        query_rows=True,
    ),
    "reference": Implementation(
        applies=lambda c: True,
        function=reference,
        training=True,
        inference=True,
        int8=True,
        query_rows=False,
    ),
}


def select_implementation(
    block, inputs, padding_mask, query_positions, training, name=None
):
    """The name of the implementation that runs this call of `block`, and
    the `BlockCall` it receives (its `query_positions` are `None` when the
    outputs are to be computed at every position and gathered).

    The first row of `IMPLEMENTATIONS` that can run the call (training or
    inference, int8 weights) and `applies`; or the row `name`, if given
    (tests and benchmarks run each one so).
    """
    optimizations = block.optimizations
    quantized = is_quantized(block)
    query_rows = (
        query_positions is not None and "query_positions_only" in optimizations
    )
    conditions = Conditions(
        fusable=bool(training)
        and "xla_fused_ops" in optimizations
        and fused_ops.can_fuse(inputs),
        split_qkv_first="split_qkv_first" in optimizations,
        query_rows=query_rows,
    )

    def capable(implementation):
        return (
            implementation.training if training else implementation.inference
        ) and (implementation.int8 or not quantized)

    if name is None:
        name = next(
            name
            for name, implementation in IMPLEMENTATIONS.items()
            if capable(implementation) and implementation.applies(conditions)
        )
    elif name not in IMPLEMENTATIONS or not capable(IMPLEMENTATIONS[name]):
        raise ValueError(
            f"Received implementation {name!r}, which cannot run this call "
            f"(training={bool(training)}, int8 weights: {quantized}). Pass "
            f"one that can, among {list(IMPLEMENTATIONS)}."
        )
    call = BlockCall(
        inputs=inputs,
        padding_mask=padding_mask,
        query_positions=(
            query_positions
            if query_rows and IMPLEMENTATIONS[name].query_rows
            else None
        ),
        training=training,
        closed_form_gelu="closed_form_gelu" in optimizations,
        split_qkv_first=conditions.split_qkv_first,
        int8=quantized,
    )
    return name, call


def is_quantized(block):
    """Whether a built block's dense layers hold quantized (int8) weights."""
    return any(
        dense.quantization_mode is not None for dense in dense_layers(block)
    )


def dense_layers(block):
    """The block's four dense layers: q|k|v, attention output, FFN in and
    out."""
    return (
        block.qkv_dense,
        block.attention_output_dense,
        block.intermediate_dense,
        block.output_dense,
    )


def run_block(
    block,
    inputs,
    padding_mask,
    query_positions,
    training,
    probabilities,
    implementation=None,
):
    """The block's outputs (at `query_positions`, if given) and, with
    `probabilities`, its attention probabilities (else `None`), from the
    implementation `select_implementation` chooses (or `implementation`);
    at inference, from the block's `served_call` if it has one."""
    if query_positions is not None:
        query_positions = ops.cast(query_positions, "int32")
    name, call = select_implementation(
        block, inputs, padding_mask, query_positions, training, implementation
    )
    if block.served_call is not None and not training and not implementation:
        # A served block: its serving implementation, at the query rows.
        if "query_positions_only" in block.optimizations:
            call = call._replace(query_positions=query_positions)
        outputs, probs = block.served_call(block, call)
    else:
        outputs, probs = IMPLEMENTATIONS[name].function(block, call)
    if query_positions is not None and call.query_positions is None:
        # By definition: every position, then gathered.
        outputs = ops.take_along_axis(
            outputs, query_positions[:, :, None], axis=1
        )
        if probabilities:
            probs = ops.take_along_axis(
                probs, query_positions[:, None, :, None], axis=2
            )
    return outputs, probs if probabilities else None


# ----------------------------------------------------------------------------
# The layer classes the optimizations name.


def layer_norm_class(optimizations):
    """The LayerNorm layer class that `optimizations` select."""
    if "closed_form_layer_norm" in optimizations:
        return ClosedFormLayerNorm
    return keras.layers.LayerNormalization


def dropout_class(optimizations):
    """The dropout layer class that `optimizations` select."""
    if "half_bits_dropout" in optimizations:
        return HalfBitsDropout
    return keras.layers.Dropout
