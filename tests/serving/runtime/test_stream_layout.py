"""A block served as parallel streams (`BlockServing("streams")`, what a
served copy's blocks run with `streams`), from its weights laid out per
stream (the outputs of every implementation, the streams' included, are
compared in tests/layers/test_block_implementations.py)."""

import os
import warnings

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers.block_implementations import select_implementation
from keras_bert.serving.runtime.block import BlockServing
from keras_bert.serving.runtime.stream_layout import check_streams
from keras_bert.serving.runtime.stream_layout import freeze_stream_layout
from keras_bert.serving.runtime.stream_layout import stream_layout
from keras_bert.serving.runtime.stream_layout import stream_slices
from tests.helpers import run_serialization_test

HIDDEN = 12
# Float32 rounding of the same sums in another order, on values of order 1.
TOLERANCE = 2e-6
PREVIOUS = os.path.join(
    os.path.dirname(__file__), "..", "..", "layers", "previous_version"
)


def _serve(block, streams):
    """`block` served as `streams` streams, its weights read as variables."""
    block.served_call = BlockServing("streams", frozen=False, streams=streams)
    return block


def _block(streams=None, activation="gelu", optimizations=None, heads=3):
    block = TransformerEncoderBlock(
        num_heads=heads,
        intermediate_dim=20,
        activation=activation,
        optimizations=optimizations,
    )
    block(np.zeros((1, 2, HIDDEN), "float32"))
    if streams:
        _serve(block, streams)
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


def _outputs(block, x, mask=None, **kwargs):
    return keras.ops.convert_to_numpy(block(x, padding_mask=mask, **kwargs))


@pytest.mark.parametrize("streams", [1, 2, 3])
@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
@pytest.mark.parametrize("optimizations", [None, ()], ids=["all", "none"])
def test_a_block_with_streams_infers_as_the_block(
    streams, activation, optimizations
):
    x, mask = _inputs()
    plain = _block(None, activation, optimizations)
    block = _block(streams, activation, optimizations)
    np.testing.assert_allclose(
        _outputs(block, x, mask), _outputs(plain, x, mask), atol=TOLERANCE
    )
    np.testing.assert_allclose(
        _outputs(block, x), _outputs(plain, x), atol=TOLERANCE
    )


def test_uneven_split_of_heads_and_units():
    # 5 heads and 21 units over 2 streams: 3 + 2 heads, 11 + 10 units.
    block = TransformerEncoderBlock(num_heads=5, intermediate_dim=21)
    plain = TransformerEncoderBlock(num_heads=5, intermediate_dim=21)
    x = np.random.default_rng(2).normal(size=(2, 4, 10)).astype("float32")
    plain(x)
    block(x)
    block.set_weights(plain.get_weights())
    _serve(block, 2)
    np.testing.assert_allclose(
        _outputs(block, x), _outputs(plain, x), atol=TOLERANCE
    )
    layout = stream_layout(block, 2)
    assert layout.head_slices == [(0, 3), (3, 5)]
    assert layout.unit_slices == [(0, 11), (11, 21)]
    assert layout.stream_weights[1]["key_value_kernel"].shape == (10, 8)


def test_stream_slices():
    assert stream_slices(12, 2) == [(0, 6), (6, 12)]
    assert stream_slices(5, 3) == [(0, 2), (2, 4), (4, 5)]


def test_bad_streams_are_refused_by_name():
    with pytest.raises(ValueError, match="streams=4.*num_heads=3.*at most 3"):
        check_streams(4, 3)
    with pytest.raises(ValueError, match="streams"):
        check_streams(0, 3)


def test_the_layout_follows_the_weights_and_is_not_saved():
    """The layout is made again from the block's weights whenever the
    implementation runs (here eagerly), and is no weight of the block: its
    config, weights and `.keras` file are a plain block's (a served block
    is made, not saved: the reloaded one is a plain block)."""
    block = _block(2)
    x, mask = _inputs()
    before = _outputs(block, x, mask)
    rng = np.random.default_rng(3)
    block.output_dense.bias.assign(rng.normal(size=HIDDEN).astype("float32"))
    plain = _block()
    plain.set_weights(block.get_weights())
    after = _outputs(block, x, mask)
    assert np.abs(after - before).max() > 1e-2
    np.testing.assert_allclose(after, _outputs(plain, x, mask), atol=TOLERANCE)
    assert len(block.weights) == len(plain.weights) == 12
    assert block.get_config() == plain.get_config() | {"name": block.name}
    rebuilt = run_serialization_test(block)
    assert rebuilt.served_call is None


def _traced(block):
    """A traced inference call of `block`, as `predict` caches one."""
    import tensorflow as tf

    return tf.function(lambda x, mask: block(x, padding_mask=mask))


def _new_biases(block, seed):
    rng = np.random.default_rng(seed)
    block.output_dense.bias.assign(rng.normal(size=HIDDEN).astype("float32"))


def test_an_unfrozen_block_reads_its_weights_in_every_call_of_a_graph():
    """Without `freeze_stream_layout` the graph slices the block's own
    weights: a function traced before the weights change (a cached
    `predict` function before `fit`) still computes with the new ones."""
    block, plain = _block(2), _block()
    x, mask = _inputs()
    function = _traced(block)
    function(x, mask)
    _new_biases(block, 5)
    plain.set_weights(block.get_weights())
    np.testing.assert_allclose(
        function(x, mask), _outputs(plain, x, mask), atol=TOLERANCE
    )


def test_a_frozen_layout_is_refreshed_when_a_graph_is_traced():
    """`freeze_stream_layout` (what `served_copy` does): the graph reads
    the layout variables, made again from the weights at every trace."""
    block, plain = _block(2), _block()
    x, mask = _inputs()
    layout = freeze_stream_layout(block, 2)
    assert layout is freeze_stream_layout(block, 2)
    _new_biases(block, 6)
    plain.set_weights(block.get_weights())
    np.testing.assert_allclose(
        _traced(block)(x, mask), _outputs(plain, x, mask), atol=TOLERANCE
    )
    kernel = layout.stream_weights[1]["intermediate_kernel"]
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(kernel),
        block.intermediate_dense.get_weights()[0][:, 10:],
    )


def test_training_runs_the_other_implementations():
    block = _block(2)
    x, mask = _inputs()
    tensor = keras.ops.convert_to_tensor(x)
    assert select_implementation(block, tensor, mask, None, True)[0] == "fast"
    outputs, probs = block(
        x, padding_mask=mask, return_attention_probabilities=True
    )
    assert probs.shape == (3, 3, 7, 7)  # all heads, from the streams


def test_a_head_parallel_block_file_still_loads():
    """`keras_bert>HeadParallelBlock` (deprecated: now the block's
    `streams`) in a `.keras` file written before, with its own copy of the
    weights: the same outputs, its block's to float rounding."""
    saved = np.load(os.path.join(PREVIOUS, "head_parallel_block.npz"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # loading is not deprecated use
        model = keras.saving.load_model(
            os.path.join(PREVIOUS, "head_parallel_block.keras")
        )
    outputs = keras.ops.convert_to_numpy(
        model([saved["inputs"], saved["padding_mask"]])
    )
    np.testing.assert_allclose(outputs, saved["outputs"], atol=1e-6)
    np.testing.assert_allclose(outputs, saved["block_outputs"], atol=TOLERANCE)


def test_head_parallel_block_from_block_warns_and_computes_the_block():
    block = _block()
    x, mask = _inputs()
    with pytest.warns(FutureWarning, match="serving_copy"):
        layer = keras_bert.layers.HeadParallelBlock.from_block(block, 2)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x, padding_mask=mask)),
        _outputs(block, x, mask),
        atol=TOLERANCE,
    )
    block.qkv_dense.quantize("int8")
    with pytest.raises(ValueError, match="float weights"):
        with pytest.warns(FutureWarning):
            keras_bert.layers.HeadParallelBlock.from_block(block)


def test_under_mixed_precision_the_layout_holds_the_float32_weights():
    """The layout is read while the block runs, where Keras casts its
    variables to bfloat16: it must hold the weights themselves."""
    block = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8, dtype="mixed_bfloat16"
    )
    plain = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8, dtype="mixed_bfloat16"
    )
    x, mask = _inputs()
    plain(x)
    block(x)
    rng = np.random.default_rng(4)
    weights = [rng.normal(0, 0.3, w.shape) for w in plain.get_weights()]
    plain.set_weights(weights)
    block.set_weights(weights)
    _serve(block, 2)
    outputs = keras.ops.cast(block(x, padding_mask=mask), "float32")
    expected = keras.ops.cast(plain(x, padding_mask=mask), "float32")
    np.testing.assert_allclose(outputs, expected, atol=2**-6)
    query_kernel = stream_layout(block, 2).stream_weights[0]["query_kernel"]
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(query_kernel),
        block.qkv_dense.get_weights()[0][:, :6],
    )
