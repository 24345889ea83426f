"""HeadParallelBlock: a block's inference as parallel streams, same outputs."""

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.layers import HeadParallelBlock
from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers.head_parallel_block import stream_slices

HIDDEN = 12
# Float32 rounding of the same sums in another order, on values of order 1.
TOLERANCE = 2e-6


def _block(activation="gelu", num_heads=3, optimizations=None):
    block = TransformerEncoderBlock(
        num_heads=num_heads,
        intermediate_dim=20,
        activation=activation,
        optimizations=optimizations,
    )
    block(np.zeros((1, 2, HIDDEN), "float32"))
    # Non-zero biases and LayerNorm weights, so that a mix-up shows.
    rng = np.random.default_rng(1)
    block.set_weights(
        [
            rng.normal(0, 0.3, w.shape).astype("float32")
            for w in block.get_weights()
        ]
    )
    return block


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 7, HIDDEN)).astype("float32")
    mask = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])
    return x, mask


@pytest.mark.parametrize("streams", [1, 2, 3])
@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_streams_compute_the_block(streams, activation):
    block = _block(activation)
    x, mask = _inputs()
    expected = keras.ops.convert_to_numpy(block(x, padding_mask=mask))
    layer = HeadParallelBlock.from_block(block, streams)
    outputs = keras.ops.convert_to_numpy(layer(x, padding_mask=mask))
    np.testing.assert_allclose(outputs, expected, atol=TOLERANCE)
    # Without a mask too.
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x)),
        keras.ops.convert_to_numpy(block(x)),
        atol=TOLERANCE,
    )


def test_uneven_split_of_heads_and_units():
    # 5 heads and 20 units over 2 streams: 3 + 2 heads, 10 + 10 units.
    block = TransformerEncoderBlock(num_heads=5, intermediate_dim=21)
    x = np.random.default_rng(2).normal(size=(2, 4, 10)).astype("float32")
    expected = keras.ops.convert_to_numpy(block(x))
    layer = HeadParallelBlock.from_block(block, 2)
    assert layer.head_slices == [(0, 3), (3, 5)]
    assert layer.unit_slices == [(0, 11), (11, 21)]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x)), expected, atol=TOLERANCE
    )


def test_query_positions_give_the_gathered_outputs():
    block = _block()
    x, mask = _inputs()
    positions = np.array([[0, 3], [0, 1], [1, 0]])
    expected = keras.ops.convert_to_numpy(
        block(x, padding_mask=mask, query_positions=positions)
    )
    layer = HeadParallelBlock.from_block(block, 2)
    outputs = layer(x, padding_mask=mask, query_positions=positions)
    assert outputs.shape == (3, 2, HIDDEN)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(outputs), expected, atol=TOLERANCE
    )


def test_reference_block_layer_norm_too():
    # optimizations=() builds Keras' own LayerNormalization.
    block = _block(optimizations=())
    x, mask = _inputs()
    layer = HeadParallelBlock.from_block(block, 2)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x, padding_mask=mask)),
        keras.ops.convert_to_numpy(block(x, padding_mask=mask)),
        atol=TOLERANCE,
    )


def test_stream_slices():
    assert stream_slices(12, 2) == [(0, 6), (6, 12)]
    assert stream_slices(5, 3) == [(0, 2), (2, 4), (4, 5)]


def test_bad_streams_are_refused_by_name():
    with pytest.raises(ValueError, match="streams=4.*num_heads=3.*at most 3"):
        HeadParallelBlock(num_heads=3, intermediate_dim=8, streams=4)
    with pytest.raises(ValueError, match="streams"):
        HeadParallelBlock(num_heads=3, intermediate_dim=8, streams=0)


def test_from_block_needs_a_built_float_block():
    with pytest.raises(ValueError, match="built block"):
        HeadParallelBlock.from_block(
            TransformerEncoderBlock(num_heads=2, intermediate_dim=8)
        )
    block = _block()
    block.qkv_dense.quantize("int8")
    with pytest.raises(ValueError, match="int8"):
        HeadParallelBlock.from_block(block)


def test_config_and_saving_round_trip(tmp_path):
    block = _block()
    layer = HeadParallelBlock.from_block(block, 2)
    config = layer.get_config()
    assert config["streams"] == 2 and config["num_heads"] == 3
    restored = HeadParallelBlock.from_config(config)
    restored.build((None, None, HIDDEN))
    restored.set_weights(layer.get_weights())
    x, mask = _inputs()
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(restored(x, padding_mask=mask)),
        keras.ops.convert_to_numpy(layer(x, padding_mask=mask)),
        atol=0,
    )
    inputs = keras.Input((None, HIDDEN))
    model = keras.Model(inputs, layer(inputs))
    path = str(tmp_path / "streams.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loaded(x)),
        keras.ops.convert_to_numpy(model(x)),
        atol=0,
    )


def test_block_infers_with_its_inference_layer_only_at_inference():
    block = _block()
    x, mask = _inputs()
    own = keras.ops.convert_to_numpy(block(x, padding_mask=mask))
    layer = HeadParallelBlock.from_block(block, 2)
    # Shift the stream layer's output bias: its outputs now differ.
    rng = np.random.default_rng(3)
    layer.output_bias.assign(rng.normal(size=HIDDEN).astype("float32"))
    block.set_inference_layer(layer)
    assert block.inference_layer is layer
    inferred = keras.ops.convert_to_numpy(block(x, padding_mask=mask))
    assert np.abs(inferred - own).max() > 1e-2
    np.testing.assert_allclose(
        inferred,
        keras.ops.convert_to_numpy(layer(x, padding_mask=mask)),
        atol=0,
    )
    # Asking for attention probabilities runs the block itself (and so
    # does training: `call` hands over only when `training` is false).
    outputs, _ = block(
        x, padding_mask=mask, return_attention_probabilities=True
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(outputs), own, atol=1e-6
    )
    # The block does not track it: not in its weights or config.
    assert len(block.weights) == 12
    assert "inference_layer" not in block.get_config()
    block.set_inference_layer(None)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(block(x, padding_mask=mask)), own, atol=0
    )


def test_docstring_example():
    block = keras_bert.layers.TransformerEncoderBlock(
        num_heads=4, intermediate_dim=32
    )
    x = np.random.rand(2, 5, 16).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    expected = block(x, padding_mask=mask)
    streams = keras_bert.layers.HeadParallelBlock.from_block(block, 2)
    outputs = streams(x, padding_mask=mask)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(outputs),
        keras.ops.convert_to_numpy(expected),
        atol=TOLERANCE,
    )
