"""How a served block computes: the encoder block's serving implementations.

A model that `keras_bert.serving` serves is a copy (`served_copy`) whose
blocks each hold one `BlockServing` (their `served_call`): the block runs
it at inference instead of choosing among its training and eager
implementations (`keras_bert.layers.block_implementations`). Which one,
and with what, the export's plan says (`keras_bert.serving.plan`); this
module holds what each computes, all the block's function to float
rounding (int8 and bfloat16 to their rounding):

- `serving_graph`: inference in the forms TensorFlow's CPU remapper fuses
  into oneDNN kernels (`remapper_forms`), the weights constants of the
  graph when frozen. The default export.
- `serving_graph_bfloat16`: the same, its four dense matmuls in bfloat16.
- `serving_graph_int8`: the same on int8 weights, on TensorFlow's oneDNN
  int8 kernel (`keras_bert.layers.int8_matmul`).
- `serving_graph_int8_calibrated`: the same, each dense layer's inputs
  quantized over a calibrated range, and the matmul, bias, GELU and
  dequantization one oneDNN kernel (`int8_fused_matmul`).
- `serving_graph_streams` (and `serving_graph_streams_bfloat16`): each
  block's heads and feed-forward units dealt out to parallel chains
  (`stream_layout`), each chain's weights sliced into constants.
- `streams`: the chains with Keras' layers between the matmuls, for a
  model built without `"remapper_serving_graph"`.

`tests/serving/runtime/test_serving_implementations.py` runs every name
against the block's `reference` implementation.
"""

import dataclasses
import functools

import numpy as np
from keras import ops

from keras_bert.layers import block_pieces as pieces
from keras_bert.layers.block_implementations import dense_layers
from keras_bert.layers.int8_matmul import int8_matmul
from keras_bert.serving.runtime import remapper_forms as forms
from keras_bert.serving.runtime.int8_fused_matmul import int8_fused_matmul
from keras_bert.serving.runtime.shared_trace import in_graph
from keras_bert.serving.runtime.shared_trace import shared_trace
from keras_bert.serving.runtime.stream_layout import stream_layout
from keras_bert.serving.runtime.stream_layout import stream_slices


@dataclasses.dataclass(frozen=True, eq=False)
class BlockServing:
    """What a served block runs at inference: the block's `served_call`
    (`block.served_call(block, call)`, `call` a `BlockCall`), set by
    `keras_bert.serving.served_copy` from the export's plan.

    implementation: str, a name of `IMPLEMENTATIONS`.
    frozen: bool, the weights read as constants of the graph traced.
    streams: int or `None`, the parallel chains of the `*streams*` ones.
    int8_ranges: `None` or `{dense layer name: (low, high)}`, the
        calibrated input ranges `serving_graph_int8_calibrated` quantizes
        over.
    recorded_ranges: `None` or a dict, `(block name, dense layer name)` →
        `(low, high)`, widened by every eager call to hold each dense
        layer's inputs: the calibration (`int8_calibration`).
    traces: dict, filled by `shared_trace`: the block traced once for
        all the endpoints of an export.

    (A dataclass, not a tuple: Keras tracks a layer's tuple attributes and
    would copy the dicts in it.)
    """

    implementation: str
    frozen: bool = True
    streams: object = None
    int8_ranges: object = None
    recorded_ranges: object = None
    # The frozen graphs traced of each block (`shared_trace`): one per
    # block whichever endpoints call it.
    traces: dict = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )

    def __call__(self, block, call):
        function = IMPLEMENTATIONS[self.implementation]
        if self.frozen and self.recorded_ranges is None and in_graph():
            # Traced once for all the endpoints: its constants stored once.
            return shared_trace(function, block, call, self)
        return function(block, call, self)


# ----------------------------------------------------------------------------
# The implementations: (block, BlockCall, BlockServing) -> (outputs, probs).


def streams(block, call, serving):
    """Inference as `serving.streams` independent chains (see
    `stream_layout`), from the block's weights laid out per stream."""
    return stream_outputs(block, stream_layout(block, serving.streams), call)


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
        query = linear(
            queries, weights["query_kernel"], weights["query_bias"], dtype
        )
        key, value = ops.split(
            linear(
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
            linear(context, weights["attention_output_kernel"], None, dtype)
        )
        all_probs.append(probs)
    attention_output = _sum(partials) + ops.cast(
        layout.attention_output_bias, dtype
    )
    x = block.attention_layer_norm(queries + attention_output)
    # Feed-forward: each stream's units, to a partial output.
    partials = []
    for weights in layout.stream_weights:
        hidden = linear(
            x,
            weights["intermediate_kernel"],
            weights["intermediate_bias"],
            dtype,
        )
        hidden = pieces.activation(hidden, block, False, call)
        partials.append(linear(hidden, weights["output_kernel"], None, dtype))
    outputs = _sum(partials) + ops.cast(layout.output_bias, dtype)
    outputs = block.output_layer_norm(x + outputs)
    outputs = ops.reshape(outputs, (batch_size, query_length, block.hidden_dim))
    return outputs, ops.concatenate(all_probs, axis=1)


def serving_graph(
    block,
    call,
    serving,
    matmul_dtype=None,
    streams=False,
    int8=False,
    calibrated=False,
):
    """Inference in the forms TensorFlow's CPU remapper fuses
    (`remapper_forms`): per block, one q|k|v matmul and three more, each
    with its bias, GELU or residual fused in, two `_MklLayerNorm`s and the
    scores' matmul with their scale and mask; the weights constants of the
    graph traced when `serving.frozen`. Only the query rows with
    `call.query_positions`.

    With `int8` weights (the row `serving_graph_int8`), the
    four dense matmuls run on TensorFlow's oneDNN int8 kernel
    (`keras_bert.layers.int8_matmul`, each input row quantized over its own
    largest magnitude, as `Int8Dense` does) on int8 constants, their
    bias, GELU and residual after it; with `calibrated` (the row
    `serving_graph_int8_calibrated`), each one's inputs are quantized over
    their calibrated range and the matmul, bias, GELU and dequantization
    are one kernel (`int8_fused_matmul`), the residual added after it.

    With `serving.recorded_ranges`, every dense layer's inputs are
    recorded there (`record_input_range`): the calibration.

    With `matmul_dtype` (`"bfloat16"`), the four dense matmuls run in it,
    on weights in it, with their bias and GELU; their inputs are cast to
    it and their outputs back. The attention (scores, softmax, context),
    the residual adds, the LayerNorms and the outputs stay in the block's
    compute dtype.

    With `streams` (the rows `serving_graph_streams*`), the block's heads
    and feed-forward units are dealt out to `serving.streams` independent
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
    weight = functools.partial(forms.weight, frozen=serving.frozen)
    count = serving.streams if streams else 1
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

        forms.record_input_range(serving.recorded_ranges, block, layer, x)
        if int8:
            return int8_dense(x, layer, part, activation, residual)
        kernel = weight(part("kernel"), matmul_dtype)
        x = ops.cast(x, matmul_dtype)
        if not bias:
            return ops.matmul(x, kernel)  # in `matmul_dtype`
        fused = matmul_dtype == dtype
        x = forms.dense(
            x,
            kernel,
            weight(part("bias"), matmul_dtype),
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
                weight(part("_kernel"), "int8"),
                weight(part("kernel_scale"), "float32"),
                weight(part("bias"), "float32"),
                serving.int8_ranges[layer.name],
                activation,
            )
            x = ops.cast(x, dtype)
            return x if residual is None else x + residual
        x = int8_matmul(
            ops.cast(x, "float32"),
            weight(part("_kernel"), "int8"),
            weight(part("kernel_scale"), "float32"),
            weight(part("kernel_column_sums"), "float32"),
        )
        bias = weight(part("bias"), "float32")
        x = ops.cast(forms.bias_activation(x, bias, activation), dtype)
        return x if residual is None else x + residual

    def norm(x, layer_norm):
        return forms.layer_norm(
            x,
            weight(lambda read: read(layer_norm.gamma), "float32"),
            weight(lambda read: read(layer_norm.beta), "float32"),
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


def linear(x, kernel, bias, dtype):
    """`x @ kernel (+ bias)` in `dtype`, the bias as TensorFlow's `BiasAdd`,
    the op its CPU remapper fuses with the matmul before it and the GELU
    after it (after an `AddV2`, which `x + bias` is, the GELU's
    element-wise ops stay separate ops)."""
    import tensorflow as tf

    x = ops.matmul(x, ops.cast(kernel, dtype))
    if bias is None:
        return x
    return tf.nn.bias_add(x, ops.cast(bias, dtype))


# ----------------------------------------------------------------------------
# The table: what a `BlockServing`'s `implementation` names.

IMPLEMENTATIONS = {
    "serving_graph": serving_graph,
    "serving_graph_bfloat16": functools.partial(
        serving_graph, matmul_dtype="bfloat16"
    ),
    "serving_graph_int8": functools.partial(serving_graph, int8=True),
    "serving_graph_int8_calibrated": functools.partial(
        serving_graph, int8=True, calibrated=True
    ),
    "serving_graph_streams": functools.partial(serving_graph, streams=True),
    "serving_graph_streams_bfloat16": functools.partial(
        serving_graph, matmul_dtype="bfloat16", streams=True
    ),
    "streams": streams,
}


def int8_ranges_of(block, ranges):
    """`{dense layer name: (low, high)}` of `block`'s dense layers in
    `ranges` (`(block name, dense layer name)` → range, what calibration
    records); a `ValueError` naming the first one missing."""
    found = {}
    for layer in dense_layers(block):
        key = (block.name, layer.name)
        if key not in ranges:
            raise ValueError(
                f"No calibrated input range for {key}: calibrate the model "
                "that is served (`calibrate_int8_ranges` on its int8 copy)."
            )
        found[layer.name] = ranges[key]
    return found
