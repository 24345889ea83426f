"""How `TransformerEncoderBlock` runs: its implementations, in one table,
and the one function that chooses among them.

Every implementation computes the same function (to float rounding) from
the block's own weights and returns `(outputs, attention_probabilities)`:

- `serving_graph_streams_bfloat16`: `serving_graph_streams` with
  `serving_graph_bfloat16`'s bfloat16 matmuls. Selected where
  `serving_graph_streams` would be, in a serving trace with
  `matmul_dtype="bfloat16"` (`export_saved_model(precision="bfloat16",
  streams=N)`).
- `serving_graph_streams`: `serving_graph`'s forms, each block's heads and
  feed-forward units dealt out to `block.streams` parallel chains as
  `streams` deals them, each chain's weights sliced into constants of
  the graph. Selected where `serving_graph` would be, for a block with
  `streams` (`export_saved_model(streams=N)`).
- `streams`: inference as parallel chains of heads and feed-forward
  units (`keras_bert.layers.stream_layout`), Keras' layers between the
  matmuls. Selected at inference when the block has `streams` and float
  weights, outside a serving trace (or without
  `"remapper_serving_graph"`).
- `serving_graph_int8_calibrated`: `serving_graph_int8` with each dense
  layer's inputs quantized over a calibrated range, and the int8 matmul,
  its bias, GELU and dequantization one oneDNN kernel
  (`int8_matmul.int8_fused_matmul`). Selected where `serving_graph_int8`
  would be, when the serving trace has the block's ranges
  (`export_saved_model(quantize="int8", calibration_texts=...)`).
- `serving_graph_int8`: `serving_graph` with its four dense matmuls on
  int8 weights, on TensorFlow's oneDNN int8 kernel. Selected where
  `serving_graph` would be, for a block with int8 weights
  (`export_saved_model(quantize="int8")`).
- `serving_graph_bfloat16`: `serving_graph` with its four dense matmuls
  in bfloat16 (attention, softmax, LayerNorms and outputs in the compute
  dtype). Selected where `serving_graph` is, in a serving trace with
  `matmul_dtype="bfloat16"` (`export_saved_model(precision="bfloat16")`).
- `serving_graph`: inference in the forms TensorFlow's CPU remapper
  fuses into oneDNN kernels (`keras_bert.layers.remapper_forms`), the
  weights constants of the graph. Selected while a SavedModel export
  traces the model (`remapper_forms.serving_trace`) with
  `"remapper_serving_graph"` and float weights.
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
dtype and static shape, the weights' quantization, `streams` and the
serving trace (`remapper_forms.serving_trace`, its `matmul_dtype` and
`int8_ranges`). With
`query_positions`, every implementation but `reference` computes only the
query rows (keys and values still from every token) when
`"query_positions_only"` is on; otherwise the implementation runs at every
position and its outputs are gathered (`run_block`). The pieces they are
made of (mask, softmax dtype, heads, q|k|v columns, add & norm,
activation) are defined once, in `keras_bert.layers.block_pieces`.

Adding an implementation takes four things: a name and its
place in `IMPLEMENTATIONS` (first match wins: a serving implementation
goes before `fast`); what it can run and a predicate over `Conditions`
(`applies`; a new condition, e.g. a serving setting of the block, is read
in `select_implementation`, nowhere else); a function `(block, call) ->
(outputs, probabilities)` built from `block_pieces`; and its row in
tests/layers/test_block_implementations.py, which runs every name in the
table against `reference`, in every mode the row says it can run, and
fails on a name it does not know.

This module also chooses the LayerNorm and dropout layer classes the
`optimizations` name (`layer_norm_class`, `dropout_class`), and whether
the embedding below the blocks runs its serving form
(`embedding_serving_form`).
"""

import functools
from typing import Callable
from typing import NamedTuple

import keras
import numpy as np
from keras import ops

from keras_bert.layers import block_pieces as pieces
from keras_bert.layers import fused_ops
from keras_bert.layers import remapper_forms as forms
from keras_bert.layers.closed_form_layer_norm import ClosedFormLayerNorm
from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.layers.int8_matmul import int8_fused_matmul
from keras_bert.layers.int8_matmul import int8_matmul
from keras_bert.layers.stream_layout import stream_layout
from keras_bert.layers.stream_layout import stream_slices


class Conditions(NamedTuple):
    """A call of the block, as `Implementation.applies` sees it."""

    streams: bool  # the block has `streams`
    fusable: bool  # "xla_fused_ops" and `fused_ops.can_fuse(inputs)`
    split_qkv_first: bool
    query_rows: bool  # query positions, to compute at those rows only
    # "remapper_serving_graph" and a serving trace
    # (`remapper_forms.serving_trace`, entered by the SavedModel export)
    serving_graph: bool
    # a serving trace for bfloat16 matmuls (its `matmul_dtype`)
    bfloat16_matmuls: bool
    # the dense layers hold int8 weights that run on oneDNN's int8 kernel
    # (`Int8Dense`'s inference; not a weight-only quantization)
    onednn_int8: bool
    # the serving trace has calibrated input ranges for the block's dense
    # layers (`remapper_forms.serving_int8_ranges`)
    int8_ranges: bool


class BlockCall(NamedTuple):
    """One call, as an implementation receives it."""

    inputs: object
    padding_mask: object
    query_positions: object  # `None` unless computed at those rows only
    training: object
    closed_form_gelu: bool
    split_qkv_first: bool
    int8: bool  # the dense layers hold int8 weights
    # `{dense layer name: (low, high)}`, its inputs' calibrated range in
    # the serving trace, for int8 weights on oneDNN's kernel (what
    # `serving_graph_int8_calibrated` quantizes over); else `None`
    int8_ranges: object = None


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


def streams(block, call):
    """Inference as `block.streams` independent chains (see
    `keras_bert.layers.stream_layout`), from the block's weights laid out
    per stream."""
    return stream_outputs(block, stream_layout(block), call)


def stream_outputs(block, layout, call):
    """The streams' computation on `layout`, with `block`'s LayerNorms
    (`block` is anything with a block's `hidden_dim`, `head_dim`,
    `activation`, `compute_dtype` and two LayerNorm layers)."""
    inputs, positions = call.inputs, call.query_positions
    dtype, head_dim = block.compute_dtype, block.head_dim
    batch_size, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
    x = ops.reshape(inputs, (-1, block.hidden_dim))  # (tokens, hidden)
    queries, query_length = x, length
    if positions is not None:
        query_length = ops.shape(positions)[1]
        queries = ops.reshape(
            ops.take_along_axis(inputs, positions[:, :, None], axis=1),
            (-1, block.hidden_dim),
        )  # (batch * queries, hidden)
    # Attention: each stream's heads, to a partial attention output.
    partials, all_probs = [], []
    for weights, (h0, h1) in zip(layout.stream_weights, layout.head_slices):
        heads = (h1 - h0, head_dim)
        query = pieces.linear(
            queries, weights["query_kernel"], weights["query_bias"], dtype
        )
        key, value = ops.split(
            pieces.linear(
                x, weights["key_value_kernel"], weights["key_value_bias"], dtype
            ),
            2,
            axis=-1,
        )
        query = pieces.split_heads(query, batch_size, query_length, *heads)
        key = pieces.split_heads(key, batch_size, length, *heads)
        value = pieces.split_heads(value, batch_size, length, *heads)
        probs = pieces.attention_probabilities(
            pieces.scaled_scores(query, key, head_dim),
            call.padding_mask,
            None,
            False,
            dtype,
        )
        context = pieces.merge_heads(
            ops.matmul(probs, value), (-1, heads[0] * head_dim)
        )
        partials.append(
            pieces.linear(
                context, weights["attention_output_kernel"], None, dtype
            )
        )
        all_probs.append(probs)
    attention_output = _sum(partials) + ops.cast(
        layout.attention_output_bias, dtype
    )
    x = block.attention_layer_norm(queries + attention_output)
    # Feed-forward: each stream's units, to a partial output.
    partials = []
    for weights in layout.stream_weights:
        hidden = pieces.linear(
            x,
            weights["intermediate_kernel"],
            weights["intermediate_bias"],
            dtype,
        )
        hidden = pieces.activation(hidden, block, False, call)
        partials.append(
            pieces.linear(hidden, weights["output_kernel"], None, dtype)
        )
    outputs = _sum(partials) + ops.cast(layout.output_bias, dtype)
    outputs = block.output_layer_norm(x + outputs)
    outputs = ops.reshape(outputs, (batch_size, query_length, block.hidden_dim))
    return outputs, ops.concatenate(all_probs, axis=1)


def serving_graph(
    block, call, matmul_dtype=None, streams=False, calibrated=False
):
    """Inference in the forms TensorFlow's CPU remapper fuses
    (`keras_bert.layers.remapper_forms`): per block, one q|k|v matmul and
    three more, each with its bias, GELU or residual fused in, two
    `_MklLayerNorm`s and the scores' matmul with their scale and mask; the
    weights constants of the graph in a frozen serving trace. Only the
    query rows with `call.query_positions`.

    With int8 weights (`call.int8`, the row `serving_graph_int8`), the
    four dense matmuls run on TensorFlow's oneDNN int8 kernel
    (`keras_bert.layers.int8_matmul`, each input row quantized over its own
    largest magnitude, as `Int8Dense` does) on int8 constants, their
    bias, GELU and residual after it; with `calibrated` (the row
    `serving_graph_int8_calibrated`), each one's inputs are quantized over
    their calibrated range and the matmul, bias, GELU and dequantization
    are one kernel (`int8_fused_matmul`), the residual added after it.

    In `remapper_forms.recording_input_ranges`, every dense layer's inputs
    are recorded (`record_input_range`): the calibration.

    With `matmul_dtype` (`"bfloat16"`), the four dense matmuls run in it,
    on weights in it, with their bias and GELU; their inputs are cast to
    it and their outputs back. The attention (scores, softmax, context),
    the residual adds, the LayerNorms and the outputs stay in the block's
    compute dtype.

    With `streams` (the rows `serving_graph_streams*`), the block's heads
    and feed-forward units are dealt out to `block.streams` independent
    chains in these same forms, as the `streams` row deals them
    (`stream_layout.stream_slices`): each chain its heads' q|k|v columns,
    attention and rows of the attention output kernel, then its units'
    columns of the first feed-forward kernel and rows of the second; the
    chains' partial outputs are summed before each LayerNorm (the first
    chain's matmul adds the bias and the residual). Each chain's weights
    are sliced while the graph is traced, into constants of their own, so
    that TensorFlow's inter-op threads run the chains side by side with
    one intra-op thread each."""
    inputs, positions = call.inputs, call.query_positions
    dtype, hidden, head_dim = (
        block.compute_dtype,
        block.hidden_dim,
        block.head_dim,
    )
    matmul_dtype = matmul_dtype or dtype
    count = block.streams if streams else 1
    # The batch and length read off the padding mask, the same tensor in
    # every block: grappler merges every block's reads and shapes into one.
    sized = inputs if call.padding_mask is None else call.padding_mask
    batch_size, length = ops.shape(sized)[0], ops.shape(sized)[1]

    def dense(x, layer, columns=None, rows=None, activation=None, residual=None,
              bias=True):  # fmt: skip
        # `layer`'s matmul (of its `columns` and `rows`, index arrays) in
        # `matmul_dtype`, then its bias (unless not `bias`), activation and
        # `+ residual` in `dtype`: in the matmul when they are one.
        def part(name):
            def compute(read):
                if name == "kernel":  # with its LoRA update
                    value = layer.merged_kernel(read=read)
                else:
                    value = read(getattr(layer, name))
                if rows is not None and name in ("kernel", "_kernel"):
                    value = ops.take(value, rows, axis=0)
                if columns is not None:
                    value = ops.take(value, columns, axis=-1)
                return value

            return compute

        forms.record_input_range(block, layer, x)
        if call.int8:
            return int8_dense(x, layer, part, activation, residual)
        kernel = forms.weight(part("kernel"), matmul_dtype)
        x = ops.cast(x, matmul_dtype)
        if not bias:
            return ops.matmul(x, kernel)  # in `matmul_dtype`
        fused = matmul_dtype == dtype
        x = forms.dense(
            x,
            kernel,
            forms.weight(part("bias"), matmul_dtype),
            activation=activation,
            residual=residual if fused else None,
        )
        if residual is None or fused:
            return x  # in `matmul_dtype`
        return ops.cast(x, dtype) + residual

    def int8_dense(x, layer, part, activation, residual):
        # The layer's int8 kernel, per-column scales and column sums as
        # constants, on TensorFlow's oneDNN int8 matmul (as `Int8Dense`
        # computes it), then the bias, activation and residual in `dtype`;
        # or, with calibrated ranges, one fused kernel, then the residual.
        if calibrated:
            x = int8_fused_matmul(
                ops.cast(x, "float32"),
                forms.weight(part("_kernel"), "int8"),
                forms.weight(part("kernel_scale"), "float32"),
                forms.weight(part("bias"), "float32"),
                call.int8_ranges[layer.name],
                activation,
            )
            x = ops.cast(x, dtype)
            return x if residual is None else x + residual
        x = int8_matmul(
            ops.cast(x, "float32"),
            forms.weight(part("_kernel"), "int8"),
            forms.weight(part("kernel_scale"), "float32"),
            forms.weight(part("kernel_column_sums"), "float32"),
        )
        bias = forms.weight(part("bias"), "float32")
        x = ops.cast(forms.bias_activation(x, bias, activation), dtype)
        return x if residual is None else x + residual

    def norm(x, layer_norm):
        return forms.layer_norm(
            x,
            forms.weight(lambda read: read(layer_norm.gamma), "float32"),
            forms.weight(lambda read: read(layer_norm.beta), "float32"),
            layer_norm.epsilon,
        )

    x = ops.reshape(inputs, (-1, hidden))  # (tokens, hidden)
    queries, query_length = x, length
    if positions is not None:
        query_length = ops.shape(positions)[1]
        queries = forms.rows_at(inputs, positions)  # (batch * queries, hidden)
    mask_bias = forms.mask_bias(call.padding_mask)
    head_slices = stream_slices(block.num_heads, count)
    unit_slices = stream_slices(block.intermediate_dim, count)
    # Self-attention: each chain's heads, to a partial attention output.
    partials, all_probs = [], []
    for index, (h0, h1) in enumerate(head_slices):
        width = (h1 - h0) * head_dim
        own = np.arange(h0 * head_dim, h1 * head_dim)  # its q columns
        heads = (h1 - h0, head_dim)
        if positions is None:
            columns = None
            if count > 1:
                columns = np.concatenate([own, own + hidden, own + 2 * hidden])
            qkv = ops.cast(dense(x, block.qkv_dense, columns), dtype)
            query, key, value = forms.split_packed_heads(
                qkv, batch_size, length, 3, *heads
            )
        else:
            query = ops.cast(dense(queries, block.qkv_dense, own), dtype)
            query = pieces.split_heads(query, batch_size, query_length, *heads)
            key_value = ops.cast(
                dense(
                    x,
                    block.qkv_dense,
                    np.concatenate([own + hidden, own + 2 * hidden]),
                ),
                dtype,
            )
            key, value = forms.split_packed_heads(
                key_value, batch_size, length, 2, *heads
            )
        scores = forms.attention_scores(
            query, key, pieces.scale_of(head_dim), mask_bias
        )  # (batch, heads, queries, length), float32
        probs = ops.cast(ops.softmax(scores, axis=-1), dtype)
        all_probs.append(probs)
        # Shaped as `queries` (one chain), so that grappler sees the
        # residual's shape is the same and adds it in the matmul.
        context = pieces.merge_heads(
            ops.matmul(probs, value),
            forms.shape(queries) if count == 1 else (-1, width),
        )
        first = index == 0
        partials.append(
            dense(
                context,
                block.attention_output_dense,
                rows=None if count == 1 else own,
                residual=queries if first else None,
                bias=first,
            )
        )
    x = norm(_sum(partials, dtype), block.attention_layer_norm)
    # Feed-forward: each chain's units, to a partial output.
    partials = []
    for index, (u0, u1) in enumerate(unit_slices):
        units = None if count == 1 else np.arange(u0, u1)
        intermediate = dense(
            x, block.intermediate_dense, units, activation=block.activation
        )
        first = index == 0
        partials.append(
            dense(
                intermediate,
                block.output_dense,
                rows=units,
                residual=x if first else None,
                bias=first,
            )
        )
    outputs = norm(_sum(partials, dtype), block.output_layer_norm)
    outputs = ops.reshape(outputs, (batch_size, query_length, hidden))
    probs = all_probs[0] if count == 1 else ops.concatenate(all_probs, axis=1)
    return outputs, probs


def _sum(tensors, dtype=None):
    """The sum of `tensors`, each cast to `dtype` if given."""
    if dtype is not None:
        tensors = [ops.cast(tensor, dtype) for tensor in tensors]
    total = tensors[0]
    for tensor in tensors[1:]:
        total = total + tensor
    return total


# ----------------------------------------------------------------------------
# The table: the first row that can run the call and applies to it runs.


def _serving_row(applies, function, int8=False):
    """A row that runs inference only (at the query rows too): a serving
    implementation."""
    return Implementation(
        applies=applies,
        function=function,
        training=False,
        inference=True,
        int8=int8,
        query_rows=True,
    )


IMPLEMENTATIONS = {
    "serving_graph_streams_bfloat16": _serving_row(
        lambda c: c.serving_graph and c.streams and c.bfloat16_matmuls,
        functools.partial(serving_graph, matmul_dtype="bfloat16", streams=True),
    ),
    "serving_graph_streams": _serving_row(
        lambda c: c.serving_graph and c.streams,
        functools.partial(serving_graph, streams=True),
    ),
    "streams": _serving_row(lambda c: c.streams, streams),
    "serving_graph_int8_calibrated": _serving_row(
        lambda c: c.serving_graph and c.onednn_int8 and c.int8_ranges,
        functools.partial(serving_graph, calibrated=True),
        int8=True,
    ),
    "serving_graph_int8": _serving_row(
        lambda c: c.serving_graph and c.onednn_int8, serving_graph, int8=True
    ),
    "serving_graph_bfloat16": _serving_row(
        lambda c: c.serving_graph and c.bfloat16_matmuls,
        functools.partial(serving_graph, matmul_dtype="bfloat16"),
    ),
    "serving_graph": _serving_row(lambda c: c.serving_graph, serving_graph),
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
    int8_ranges = forms.serving_int8_ranges(block, dense_layers(block))
    query_rows = (
        query_positions is not None and "query_positions_only" in optimizations
    )
    conditions = Conditions(
        streams=block.streams is not None,
        fusable=bool(training)
        and "xla_fused_ops" in optimizations
        and fused_ops.can_fuse(inputs),
        split_qkv_first="split_qkv_first" in optimizations,
        query_rows=query_rows,
        serving_graph="remapper_serving_graph" in optimizations
        and forms.in_serving_trace(),
        bfloat16_matmuls=forms.serving_matmul_dtype() == "bfloat16",
        onednn_int8=quantized and runs_onednn_int8(block),
        int8_ranges=int8_ranges is not None,
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
        # What int8 layers on oneDNN's kernel would quantize over.
        int8_ranges=int8_ranges if conditions.onednn_int8 else None,
    )
    return name, call


def is_quantized(block):
    """Whether a built block's dense layers hold quantized (int8) weights."""
    return any(
        dense.quantization_mode is not None for dense in dense_layers(block)
    )


def runs_onednn_int8(block):
    """Whether every dense layer of a quantized block runs its inference on
    oneDNN's int8 kernel (`Int8Dense`), the matmul `serving_graph_int8`
    computes."""
    return all(
        getattr(dense, "_onednn_int8", lambda: False)()
        for dense in dense_layers(block)
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
    implementation `select_implementation` chooses (or `implementation`)."""
    if query_positions is not None:
        query_positions = ops.cast(query_positions, "int32")
    name, call = select_implementation(
        block, inputs, padding_mask, query_positions, training, implementation
    )
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


def embedding_serving_form(optimizations, training):
    """Whether a `BertEmbedding` with these `optimizations` runs its
    serving form (`BertEmbedding.serving_call`: the remapper's LayerNorm,
    gathers without Keras' wrapping of negative ids) in this call: at
    inference, wherever the blocks run `serving_graph` (a serving trace,
    `"remapper_serving_graph"`)."""
    return (
        not training
        and "remapper_serving_graph" in optimizations
        and forms.in_serving_trace()
    )


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
