"""The encoder block's weights dealt out to parallel streams, for serving.

The `"streams"` serving implementation of `TransformerEncoderBlock`
(`keras_bert.serving.runtime.block`) computes a block's inference as
`streams` independent chains, Megatron's tensor parallelism (Shoeybi
et al., 2019) with the CPU's cores as the devices: stream `i` owns a
contiguous slice of the heads (the matching columns of the fused q|k|v
kernel, and rows of the attention output kernel) and a slice of the
feed-forward units (columns of the first kernel, rows of the second).

Rows of a kernel are contiguous in memory, columns are not: a column slice of a
variable is a copy, made again by every request that reads it. So a model made
to be served (`keras_bert.serving.served_copy`, which calls
`freeze_stream_layout` on each block) has each stream's column blocks laid out
once in variables of their own (the query kernel, the key|value kernel and the
intermediate kernel with their biases; the row blocks too, so that a stream
reads one set); `python benchmarks/serving_ops.py --threads` times the
exports. That layout is a copy of the block's weights (LoRA updates added),
refreshed from them every time the implementation runs eagerly or is traced into
a graph (an export, a `predict` function): a graph reads the weights of the
moment it was traced. Neither Keras nor a `.keras` file sees it (it is derived):
an export saves it because its graph reads it (and not the block's own kernels,
which that graph does not read).

A block served with streams whose layout was not frozen slices its own
weights in the graph on every call instead: slower, but always the
weights of the moment.
"""

import weakref

import numpy as np
from keras import ops

from keras_bert.keras_workarounds import backend_variable
from keras_bert.validation import check_positive_int

# The variables of one stream, in the order they are created.
STREAM_WEIGHTS = (
    "query_kernel",
    "query_bias",
    "key_value_kernel",
    "key_value_bias",
    "attention_output_kernel",
    "intermediate_kernel",
    "intermediate_bias",
    "output_kernel",
)


def stream_slices(size, streams):
    """`streams` contiguous `(start, stop)` ranges covering `range(size)`,
    as even as possible (the first ones one larger)."""
    bounds = np.cumsum(
        [0] + [len(a) for a in np.array_split(range(size), streams)]
    )
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def check_streams(streams, num_heads):
    """Raises a `ValueError` unless `streams` is `None` or an int from 1 to
    `num_heads` (every stream needs at least one head)."""
    if streams is None:
        return
    check_positive_int("streams", streams)
    if streams > num_heads:
        raise ValueError(
            f"Received streams={streams}, more than num_heads={num_heads}: "
            "every stream needs at least one head. Use at most "
            f"{num_heads} streams."
        )


class StreamLayout:
    """What the streams read: per stream, a dict of `STREAM_WEIGHTS`, and
    the two output biases they share.

    Args:
        num_heads: int. The block's heads.
        intermediate_dim: int. The block's feed-forward units.
        streams: int. The number of streams, at most `num_heads`.
        stream_weights: list of `streams` dicts, name → variable.
        attention_output_bias: variable `(hidden,)`.
        output_bias: variable `(hidden,)`.
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        streams,
        stream_weights,
        attention_output_bias,
        output_bias,
    ):
        self.head_slices = stream_slices(num_heads, streams)
        self.unit_slices = stream_slices(intermediate_dim, streams)
        self.stream_weights = stream_weights
        self.attention_output_bias = attention_output_bias
        self.output_bias = output_bias


def stream_weight_shapes(hidden_dim, head_dim, head_slices, unit_slices):
    """Per stream, name → shape of each of `STREAM_WEIGHTS`."""
    shapes = []
    for (h0, h1), (u0, u1) in zip(head_slices, unit_slices):
        width, units = (h1 - h0) * head_dim, u1 - u0
        shapes.append(
            {
                "query_kernel": (hidden_dim, width),
                "query_bias": (width,),
                "key_value_kernel": (hidden_dim, 2 * width),
                "key_value_bias": (2 * width,),
                "attention_output_kernel": (width, hidden_dim),
                "intermediate_kernel": (hidden_dim, units),
                "intermediate_bias": (units,),
                "output_kernel": (units, hidden_dim),
            }
        )
    return shapes


def laid_out(block, head_slices, unit_slices, read=None):
    """Per stream, name → float32 value of each of `STREAM_WEIGHTS`, from
    a built block's float weights (LoRA updates added), each variable read
    with `read` (variable → tensor; defaults to a read by the graph being
    traced, or an eager read)."""
    read = read or _read_in_graph
    hidden, head_dim = block.hidden_dim, block.head_dim

    def value(variable):
        return ops.cast(read(variable), "float32")

    def kernel(dense):
        return ops.cast(dense.merged_kernel(read=read), "float32")

    qkv = kernel(block.qkv_dense)
    qkv_bias = value(block.qkv_dense.bias)
    attention_output = kernel(block.attention_output_dense)
    intermediate = kernel(block.intermediate_dense)
    intermediate_bias = value(block.intermediate_dense.bias)
    output = kernel(block.output_dense)
    values = []
    for (h0, h1), (u0, u1) in zip(head_slices, unit_slices):
        c0, c1 = h0 * head_dim, h1 * head_dim
        # The query, key and value columns of this stream's heads.
        query, key, value_ = (
            slice(part * hidden + c0, part * hidden + c1) for part in range(3)
        )
        values.append(
            {
                "query_kernel": qkv[:, query],
                "query_bias": qkv_bias[query],
                "key_value_kernel": ops.concatenate(
                    [qkv[:, key], qkv[:, value_]], 1
                ),
                "key_value_bias": ops.concatenate(
                    [qkv_bias[key], qkv_bias[value_]], 0
                ),
                "attention_output_kernel": attention_output[c0:c1],
                "intermediate_kernel": intermediate[:, u0:u1],
                "intermediate_bias": intermediate_bias[u0:u1],
                "output_kernel": output[u0:u1],
            }
        )
    return values


def _read_in_graph(variable):
    """`variable`'s float value, read by the graph being traced (not cast
    to a compute dtype)."""
    import tensorflow as tf

    return tf.convert_to_tensor(backend_variable(variable))


def _read_now(variable):
    """`variable`'s value now, eagerly, read so that a function being traced
    does not record the read: its graph reads the layout, not the weights
    the layout is made from (and an export saves what its graph reads)."""
    import tensorflow as tf

    variable = backend_variable(variable)  # not cast to a compute dtype
    with tf.init_scope():
        return tf.raw_ops.ReadVariableOp(
            resource=variable.handle, dtype=variable.dtype
        )


# The frozen layouts (`freeze_stream_layout`); dropped with their block.
_LAYOUTS = weakref.WeakKeyDictionary()


def _new_layout(block, streams, stream_weights):
    return StreamLayout(
        block.num_heads,
        block.intermediate_dim,
        streams,
        stream_weights,
        block.attention_output_dense.bias,
        block.output_dense.bias,
    )


def freeze_stream_layout(block, streams):
    """Lays a built block's weights out per stream, in variables of their
    own that its `"streams"` implementation reads from now on (refreshed
    from the block's weights whenever it runs eagerly or is traced).

    What a model made to be served gets (`keras_bert.serving.served_copy`).

    Args:
        block: a built `keras_bert.layers.TransformerEncoderBlock` with
            float weights.
        streams: int. The number of streams, at most the block's heads.

    Returns:
        The block's `StreamLayout`.
    """
    import keras
    import tensorflow as tf

    with tf.init_scope():
        layout = _LAYOUTS.get(block)
        if layout is not None and len(layout.stream_weights) == streams:
            return stream_layout(block, streams)
        layout = _new_layout(block, streams, [])
        values = laid_out(
            block, layout.head_slices, layout.unit_slices, _read_now
        )
        for i, stream in enumerate(values):
            layout.stream_weights.append(
                {
                    name: keras.Variable(
                        value,
                        trainable=False,
                        name=f"{block.name}_stream_{i}_{name}",
                    )
                    for name, value in stream.items()
                }
            )
        _LAYOUTS[block] = layout
    return layout


def stream_layout(block, streams):
    """The `StreamLayout` the block's `"streams"` implementation reads:
    its frozen layout, refreshed from its weights now (eagerly, also when
    called while a graph is traced), or else slices of its weights read
    by the graph."""
    import tensorflow as tf

    layout = _LAYOUTS.get(block)
    if layout is None or len(layout.stream_weights) != streams:
        layout = _new_layout(block, streams, [])
        layout.stream_weights = laid_out(
            block, layout.head_slices, layout.unit_slices, _read_in_graph
        )
        return layout
    with tf.init_scope():
        values = laid_out(
            block, layout.head_slices, layout.unit_slices, _read_now
        )
        for variables, stream in zip(layout.stream_weights, values):
            for name, value in stream.items():
                variables[name].assign(value)
    return layout
