"""The deprecated layers, registered under their old names.

`.keras` files and configs saved with these names still load: `Dropout`
and `LayerNorm` are `HalfBitsDropout` and `ClosedFormLayerNorm` under
their old names, and `HeadParallelBlock` computes a block's inference as
the `streams` serving implementation. `keras_bert.deprecations.install`
imports this module (registering them) and sets them on
`keras_bert.layers`; the package's docstring says why each is here.
"""

import keras

from keras_bert.deprecations import warn_deprecated
from keras_bert.layers.activations import validate_activation
from keras_bert.layers.block_implementations import BlockCall
from keras_bert.layers.block_implementations import is_quantized
from keras_bert.layers.block_implementations import layer_norm_class
from keras_bert.layers.closed_form_layer_norm import ClosedFormLayerNorm
from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.serving.runtime.block import stream_outputs
from keras_bert.serving.runtime.stream_layout import StreamLayout
from keras_bert.serving.runtime.stream_layout import check_streams
from keras_bert.serving.runtime.stream_layout import laid_out
from keras_bert.serving.runtime.stream_layout import stream_weight_shapes
from keras_bert.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_bert")
class Dropout(HalfBitsDropout):
    """Deprecated: `keras_bert.layers.HalfBitsDropout`'s old name.

    Registered as `keras_bert>Dropout`, so that `.keras` files and configs
    saved with it still load. Use `HalfBitsDropout`.
    """


@keras.saving.register_keras_serializable(package="keras_bert")
class LayerNorm(ClosedFormLayerNorm):
    """Deprecated: `keras_bert.layers.ClosedFormLayerNorm`'s old name.

    Registered as `keras_bert>LayerNorm`, so that `.keras` files and
    configs saved with it still load. Use `ClosedFormLayerNorm`.
    """


@keras.saving.register_keras_serializable(package="keras_bert")
class HeadParallelBlock(keras.layers.Layer):
    """Deprecated: a `TransformerEncoderBlock`'s inference as streams, from
    its own copy of the block's weights laid out per stream.

    Use `keras_bert.serving.serving_copy(model, streams=N)` (the `streams`
    serving implementation, which this layer runs). Kept, registered as
    `keras_bert>HeadParallelBlock`, so that `.keras` files naming it load.

    Args:
        num_heads: int. Number of attention heads.
        intermediate_dim: int. Width of the feed-forward layer.
        streams: int. Number of streams, from 1 to `num_heads`.
            Defaults to `2`.
        activation: str. `"gelu"` or `"gelu_approximate"`, as the block.
        layer_norm_epsilon: float. Defaults to `1e-12`.
        optimizations: tuple of str, the block's (it picks the LayerNorm
            layer class). Defaults to `None`: all.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.
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
        check_streams(streams, num_heads)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.streams = streams
        self.activation = validate_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.optimizations = validate_optimizations(optimizations)
        LayerNorm = layer_norm_class(self.optimizations)
        for name in ("attention_layer_norm", "output_layer_norm"):
            layer_norm = LayerNorm(
                epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name=name
            )
            setattr(self, name, layer_norm)

    def build(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        self.hidden_dim = inputs_shape[-1]
        self.head_dim = self.hidden_dim // self.num_heads
        layout = StreamLayout(
            self.num_heads, self.intermediate_dim, self.streams, [], None, None
        )
        self.head_slices = layout.head_slices
        self.unit_slices = layout.unit_slices
        shapes = stream_weight_shapes(
            self.hidden_dim, self.head_dim, self.head_slices, self.unit_slices
        )
        self.stream_weights = [
            {
                name: self.add_weight(
                    shape=shape,
                    initializer="zeros",
                    trainable=False,
                    name=f"stream_{i}_{name}",
                )
                for name, shape in stream.items()
            }
            for i, stream in enumerate(shapes)
        ]
        for name in ("attention_output_bias", "output_bias"):
            bias = self.add_weight(
                shape=(self.hidden_dim,),
                initializer="zeros",
                trainable=False,
                name=name,
            )
            setattr(self, name, bias)
        self.attention_layer_norm.build(inputs_shape)
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    @classmethod
    def from_block(cls, block, streams=2):
        """A `HeadParallelBlock` holding a built float block's weights."""
        warn_deprecated(
            "keras_bert.layers.HeadParallelBlock",
            "keras_bert.serving.serving_copy(model, streams=N)",
        )
        if not block.built or is_quantized(block):
            raise ValueError(
                "HeadParallelBlock.from_block needs a built block with float "
                "weights (call it once, or build its model; int8 weights "
                f"cannot be split). Received block {block.name!r}."
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
        layer.build((None, None, block.hidden_dim))
        values = laid_out(block, layer.head_slices, layer.unit_slices)
        for variables, stream in zip(layer.stream_weights, values):
            for name, value in stream.items():
                variables[name].assign(value)
        layer.attention_output_bias.assign(block.attention_output_dense.bias)
        layer.output_bias.assign(block.output_dense.bias)
        layer.attention_layer_norm.set_weights(
            block.attention_layer_norm.get_weights()
        )
        layer.output_layer_norm.set_weights(
            block.output_layer_norm.get_weights()
        )
        return layer

    def call(self, inputs, padding_mask=None, query_positions=None):
        if query_positions is not None:
            query_positions = keras.ops.cast(query_positions, "int32")
        layout = StreamLayout(
            self.num_heads,
            self.intermediate_dim,
            self.streams,
            self.stream_weights,
            self.attention_output_bias,
            self.output_bias,
        )
        call = BlockCall(
            inputs, padding_mask, query_positions, False, False, False, False
        )
        return stream_outputs(self, layout, call)[0]

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
