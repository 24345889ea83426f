"""A transformer block split into independent streams for serving on CPU.

At batch 1 a BERT request is a few dozen tokens, and every matmul is
`(tokens, hidden) x (hidden, n)` with a few dozen rows. TensorFlow's CPU
kernels do not split such a matmul over threads to any gain (measured in
`benchmarks/serving_threads.py`: a second intra-op thread makes the
MiniLM classifier slower on a 24-token request, not faster), while ONNX
Runtime's do. What TensorFlow does run in parallel is independent ops, on
its inter-op threads. So this layer computes the block as `streams` independent
chains — Megatron's tensor parallelism (Shoeybi et al., 2019) with the
CPU's cores as the devices:

- the heads are dealt out to the streams; each stream projects its own
  heads' queries, keys and values (the matching columns of the fused
  q|k|v kernel), attends, and multiplies its context by its rows of the
  attention output kernel;
- the feed-forward layer is split the same way: each stream has a slice of
  the intermediate units (columns of the first kernel, rows of the
  second);
- the streams' partial products are summed before each LayerNorm, the only
  two places they meet.

The result is the block's, to float rounding (only the order of the sums
changes; tests/layers/test_head_parallel_block.py). The weights are the
block's, laid out per stream once (`from_block`): slicing the columns of
the block's kernels on every request would copy them each time.

It pays when TensorFlow runs one op per core: serve with one intra-op
thread and as many inter-op threads as streams (TF Serving:
`--tensorflow_intra_op_parallelism=1
--tensorflow_inter_op_parallelism=<streams>`). With TensorFlow's default
pools the streams compete with each op's own threads and gain little
(`benchmarks/serving_threads.py` measures every combination). Inference only.
`keras_bert.models.head_parallel_copy` puts one in every block of a model;
`keras_bert.serving.export_saved_model(..., streams=N)` serves that copy.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_bert.layers.activations import apply_activation
from keras_bert.layers.activations import validate_activation
from keras_bert.layers.optimizations import layer_norm_class
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.validation import check_positive_int

# As in `TransformerEncoderBlock`: what a padding key's score becomes.
_MASK_SCORE = -1e9


def stream_slices(size, streams):
    """`streams` contiguous `(start, stop)` ranges covering `range(size)`,
    as even as possible (the first ones one larger)."""
    bounds = np.cumsum(
        [0] + [len(a) for a in np.array_split(range(size), streams)]
    )
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


@keras.saving.register_keras_serializable(package="keras_bert")
class HeadParallelBlock(keras.layers.Layer):
    """A `TransformerEncoderBlock`'s inference, as `streams` parallel chains.

    Computes what the block computes at inference (no dropout), with the
    heads and the feed-forward units dealt out to `streams` independent
    chains that TensorFlow's inter-op threads run at the same time (see the
    module docstring for why and when it pays). Build one from a block with
    `HeadParallelBlock.from_block(block, streams)`; its weights are the
    block's, laid out per stream.

    Args:
        num_heads: int. Number of attention heads.
        intermediate_dim: int. Width of the feed-forward layer.
        streams: int. Number of parallel chains, from 1 to `num_heads`.
            Defaults to `2`.
        activation: str. `"gelu"` or `"gelu_approximate"`, as the block.
        layer_norm_epsilon: float. Defaults to `1e-12`.
        optimizations: tuple of str, the block's (it picks the LayerNorm
            layer class). Defaults to `None`: all.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        inputs: float tensor `(batch_size, sequence_length, hidden_dim)`.
        padding_mask: tensor `(batch_size, sequence_length)`, 1 for real
            tokens and 0 for padding. Optional.
        query_positions: int tensor `(batch_size, num_queries)` or `None`:
            as the block's, only these positions' outputs are computed
            (keys and values still come from every token).

    Returns a tensor of the input's shape, or `(batch_size, num_queries,
    hidden_dim)` with `query_positions`.

    Example:
    ```python
    block = keras_bert.layers.TransformerEncoderBlock(
        num_heads=4, intermediate_dim=32
    )
    x = np.random.rand(2, 5, 16).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    expected = block(x, padding_mask=mask)
    streams = keras_bert.layers.HeadParallelBlock.from_block(block, 2)
    outputs = streams(x, padding_mask=mask)  # == expected, to rounding
    ```

    References:
        - [Shoeybi et al., 2019](https://arxiv.org/abs/1909.08053)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        streams=2,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        optimizations=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("num_heads", num_heads)
        check_positive_int("intermediate_dim", intermediate_dim)
        check_positive_int("streams", streams)
        if streams > num_heads:
            raise ValueError(
                f"Received streams={streams}, more than num_heads="
                f"{num_heads}: every stream needs at least one head. Use "
                f"at most {num_heads} streams."
            )
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.streams = streams
        self.activation = validate_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.optimizations = validate_optimizations(optimizations)
        self.softmax_dtype = (
            "float64" if self.compute_dtype == "float64" else "float32"
        )
        LayerNorm = layer_norm_class(self.optimizations)
        self.attention_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="attention_layer_norm",
        )
        self.output_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="output_layer_norm",
        )

    def build(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        hidden_dim = inputs_shape[-1]
        if hidden_dim % self.num_heads != 0:
            raise ValueError(
                f"The input's hidden size ({hidden_dim}) must be divisible by "
                f"`num_heads` ({self.num_heads})."
            )
        self.hidden_dim = hidden_dim
        self.head_dim = hidden_dim // self.num_heads
        self.head_slices = stream_slices(self.num_heads, self.streams)
        self.unit_slices = stream_slices(self.intermediate_dim, self.streams)
        self.stream_weights = []
        for i, ((h0, h1), (u0, u1)) in enumerate(
            zip(self.head_slices, self.unit_slices)
        ):
            width = (h1 - h0) * self.head_dim
            units = u1 - u0
            shapes = {
                "query_kernel": (hidden_dim, width),
                "query_bias": (width,),
                "key_value_kernel": (hidden_dim, 2 * width),
                "key_value_bias": (2 * width,),
                "attention_output_kernel": (width, hidden_dim),
                "intermediate_kernel": (hidden_dim, units),
                "intermediate_bias": (units,),
                "output_kernel": (units, hidden_dim),
            }
            self.stream_weights.append(
                {
                    name: self.add_weight(
                        shape=shape,
                        initializer="zeros",
                        trainable=False,
                        name=f"stream_{i}_{name}",
                    )
                    for name, shape in shapes.items()
                }
            )
        self.attention_output_bias = self.add_weight(
            shape=(hidden_dim,),
            initializer="zeros",
            trainable=False,
            name="attention_output_bias",
        )
        self.output_bias = self.add_weight(
            shape=(hidden_dim,),
            initializer="zeros",
            trainable=False,
            name="output_bias",
        )
        self.attention_layer_norm.build(inputs_shape)
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    @classmethod
    def from_block(cls, block, streams=2):
        """A `HeadParallelBlock` holding a built `TransformerEncoderBlock`'s
        weights (LoRA updates merged), laid out for `streams` streams."""
        if not block.built:
            raise ValueError(
                "HeadParallelBlock.from_block needs a built block (call it "
                "once, or build its model) to read its weights."
            )
        if any(
            dense.quantization_mode is not None
            for dense in (
                block.qkv_dense,
                block.attention_output_dense,
                block.intermediate_dense,
                block.output_dense,
            )
        ):
            raise ValueError(
                "HeadParallelBlock.from_block received a block with quantized"
                " (int8) weights; it splits float weights only. Split the "
                "float model, or serve the int8 one without streams."
            )
        layer = cls(
            num_heads=block.num_heads,
            intermediate_dim=block.intermediate_dim,
            streams=streams,
            activation=block.activation,
            layer_norm_epsilon=block.layer_norm_epsilon,
            optimizations=block.optimizations,
            dtype=block.dtype_policy,
            name=f"{block.name}_streams",
        )
        hidden = block.hidden_dim
        layer.build((None, None, hidden))

        def value(x):
            return ops.convert_to_numpy(ops.cast(x, "float32"))

        qkv = value(block.qkv_dense.merged_kernel())
        qkv_bias = value(block.qkv_dense.bias)
        attention_output = value(block.attention_output_dense.merged_kernel())
        intermediate = value(block.intermediate_dense.merged_kernel())
        intermediate_bias = value(block.intermediate_dense.bias)
        output = value(block.output_dense.merged_kernel())
        for weights, (h0, h1), (u0, u1) in zip(
            layer.stream_weights, layer.head_slices, layer.unit_slices
        ):
            c0, c1 = h0 * block.head_dim, h1 * block.head_dim
            columns = {
                part: slice(part * hidden + c0, part * hidden + c1)
                for part in range(3)
            }  # query, key, value columns of this stream's heads
            weights["query_kernel"].assign(qkv[:, columns[0]])
            weights["query_bias"].assign(qkv_bias[columns[0]])
            weights["key_value_kernel"].assign(
                np.concatenate([qkv[:, columns[1]], qkv[:, columns[2]]], 1)
            )
            weights["key_value_bias"].assign(
                np.concatenate([qkv_bias[columns[1]], qkv_bias[columns[2]]])
            )
            weights["attention_output_kernel"].assign(attention_output[c0:c1])
            weights["intermediate_kernel"].assign(intermediate[:, u0:u1])
            weights["intermediate_bias"].assign(intermediate_bias[u0:u1])
            weights["output_kernel"].assign(output[u0:u1])
        layer.attention_output_bias.assign(
            value(block.attention_output_dense.bias)
        )
        layer.output_bias.assign(value(block.output_dense.bias))
        layer.attention_layer_norm.set_weights(
            block.attention_layer_norm.get_weights()
        )
        layer.output_layer_norm.set_weights(
            block.output_layer_norm.get_weights()
        )
        return layer

    def call(self, inputs, padding_mask=None, query_positions=None):
        batch_size, sequence_length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        x = ops.reshape(inputs, (-1, self.hidden_dim))  # (tokens, hidden)
        if query_positions is None:
            queries, query_length = x, sequence_length
        else:
            query_positions = ops.cast(query_positions, "int32")
            query_length = ops.shape(query_positions)[1]
            queries = ops.reshape(
                ops.take_along_axis(
                    inputs, query_positions[:, :, None], axis=1
                ),
                (-1, self.hidden_dim),
            )  # (batch * queries, hidden)
        key_mask = None
        if padding_mask is not None:
            key_mask = ops.cast(padding_mask, "bool")[:, None, None, :]
        scale = 1.0 / math.sqrt(self.head_dim)

        def dense(x, kernel, bias=None):
            y = ops.matmul(x, ops.cast(kernel, self.compute_dtype))
            if bias is None:
                return y
            return _bias_add(y, ops.cast(bias, self.compute_dtype))

        def split_heads(x, heads, length):
            x = ops.reshape(x, (batch_size, length, heads, self.head_dim))
            return ops.transpose(x, (0, 2, 1, 3))

        # Attention: each stream's heads, to a partial attention output.
        partials = []
        for weights, (h0, h1) in zip(self.stream_weights, self.head_slices):
            heads = h1 - h0
            query = dense(
                queries, weights["query_kernel"], weights["query_bias"]
            )
            key, value = ops.split(
                dense(
                    x, weights["key_value_kernel"], weights["key_value_bias"]
                ),
                2,
                axis=-1,
            )
            query = split_heads(query, heads, query_length)
            query = query * ops.cast(scale, query.dtype)
            key = split_heads(key, heads, sequence_length)
            value = split_heads(value, heads, sequence_length)
            scores = ops.cast(
                ops.matmul(query, ops.transpose(key, (0, 1, 3, 2))),
                self.softmax_dtype,
            )
            if key_mask is not None:
                scores = ops.where(key_mask, scores, _MASK_SCORE)
            probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
            context = ops.reshape(
                ops.transpose(ops.matmul(probs, value), (0, 2, 1, 3)),
                (-1, heads * self.head_dim),
            )
            partials.append(dense(context, weights["attention_output_kernel"]))
        attention_output = _sum(partials) + ops.cast(
            self.attention_output_bias, self.compute_dtype
        )
        x = self.attention_layer_norm(queries + attention_output)
        # Feed-forward: each stream's units, to a partial output.
        partials = []
        for weights in self.stream_weights:
            hidden = dense(
                x, weights["intermediate_kernel"], weights["intermediate_bias"]
            )
            hidden = apply_activation(hidden, self.activation, training=False)
            partials.append(dense(hidden, weights["output_kernel"]))
        output = _sum(partials) + ops.cast(self.output_bias, self.compute_dtype)
        output = self.output_layer_norm(x + output)
        return ops.reshape(output, (batch_size, query_length, self.hidden_dim))

    def compute_output_shape(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        if query_positions_shape is None:
            return inputs_shape
        return tuple(query_positions_shape) + (inputs_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "streams": self.streams,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "optimizations": list(self.optimizations),
            }
        )
        return config


def _bias_add(x, bias):
    """`x + bias`; on TensorFlow as `BiasAdd`, the op its CPU remapper fuses
    with the matmul before it and the GELU after it (after an `AddV2`,
    which `x + bias` is, the GELU's element-wise ops stay separate ops, as a
    traced run of the export shows)."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.nn.bias_add(x, bias)
    return x + bias


def _sum(tensors):
    total = tensors[0]
    for tensor in tensors[1:]:
        total = total + tensor
    return total
