"""int8 weights in the layers: the oneDNN matmul, Int8Dense (and
LoraDense, which is one), the block."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.layers.block_pieces import dense_columns
from keras_bert.layers.int8_matmul import column_sums
from keras_bert.layers.int8_matmul import int8_matmul
from keras_bert.layers.int8_matmul import int8_matmul_supported
from tests.helpers import run_layer_saving_test

# Where TensorFlow's oneDNN is off (an AVX2-only CPU by default,
# `TF_ENABLE_ONEDNN_OPTS=0`) the kernel gives no output: `int8_matmul` is
# an error there, `Int8Dense` runs Keras' own int8 call, and the serving
# plan refuses int8 (tests/serving/test_quantization.py).
KERNEL = int8_matmul_supported()


def _int8_matmul(*arguments):
    """`int8_matmul(*arguments)` as numpy where the kernel runs; where it
    does not, asserts that it is an error (never a silent empty answer)
    and returns `None`."""
    if KERNEL:
        return np.asarray(int8_matmul(*arguments))
    with pytest.raises(tf.errors.OpError):
        int8_matmul(*arguments)
    return None


def _quantized_weights(rng, input_dim=8, units=6):
    weights = rng.normal(0, 0.5, (input_dim, units)).astype("float32")
    scale = (127.0 / np.abs(weights).max(axis=0)).astype("float32")
    kernel = np.round(weights * scale).astype("int8")
    return kernel, scale


def test_int8_matmul_by_hand():
    # One input row, a kernel whose scale is 1: the product is exact up to
    # the inputs' quantization step, max|x| / 127.5.
    x = np.array([[1.0, -2.0, 0.5]], "float32")
    kernel = np.array([[1, 0], [2, -1], [-4, 3]], "int8")
    scale = np.ones(2, "float32")
    y = _int8_matmul(x, kernel, scale, column_sums(kernel))
    if y is None:
        return
    expected = x @ kernel.astype("float32")  # [[-5., 3.5]]
    step = 2.0 / 127.5
    bound = step / 2 * np.abs(kernel).sum(axis=0)
    assert np.all(np.abs(y - expected) <= bound + 1e-6), (y, expected)


def test_int8_matmul_is_within_the_quantization_bound():
    rng = np.random.default_rng(0)
    kernel, scale = _quantized_weights(rng)
    x = rng.normal(size=(2, 5, 8)).astype("float32")  # 3-D inputs too
    y = _int8_matmul(x, kernel, scale, column_sums(kernel))
    if y is None:
        return
    weights = kernel.astype("float32") / scale
    step = np.abs(x).max() / 127.5
    bound = step / 2 * np.abs(weights).sum(axis=0)
    assert y.shape == (2, 5, 6)
    assert np.all(np.abs(y - x @ weights) <= bound + 1e-5)
    # An all-zero row (a padding token's) gives zeros, not NaN.
    zeros = int8_matmul(
        np.zeros((3, 8), "float32"), kernel, scale, column_sums(kernel)
    )
    np.testing.assert_allclose(np.asarray(zeros), 0.0, atol=1e-20)


def test_the_probe_says_whether_the_kernel_answers():
    # The kernel is in TensorFlow's Linux x86 build, and answers exactly
    # where oneDNN is on; the probe must see an empty answer as none.
    from keras_bert.serving.cpu import onednn_enabled

    assert int8_matmul_supported() == onednn_enabled()


def _quantized_dense(rng, units=6, input_dim=8):
    dense = keras_bert.layers.LoraDense(units)
    dense.build((None, input_dim))
    dense.set_weights(
        [
            rng.normal(0, 0.5, (input_dim, units)).astype("float32"),
            rng.normal(0, 0.1, (units,)).astype("float32"),
        ]
    )
    return dense


def test_lora_dense_quantizes_to_int8_and_stays_close():
    rng = np.random.default_rng(1)
    dense = _quantized_dense(rng)
    x = rng.normal(size=(4, 8)).astype("float32")
    expected = np.asarray(dense(x))
    dense.quantize("int8")
    assert dense.quantization_mode == "int8"
    assert keras.backend.standardize_dtype(dense._kernel.dtype) == "int8"
    np.testing.assert_allclose(
        np.asarray(dense.kernel_column_sums),
        np.asarray(dense._kernel).astype("float32").sum(axis=0),
    )
    # Tolerance: inputs and weights each to 1/127.5 of their range.
    np.testing.assert_allclose(np.asarray(dense(x)), expected, atol=0.1)
    # Columns alone, as the block's query rows ask for them.
    np.testing.assert_allclose(
        np.asarray(dense_columns(dense, x, 2, 5, int8=True)),
        np.asarray(dense(x))[:, 2:5],
        atol=1e-5,
    )


def test_dense_columns_without_quantization():
    rng = np.random.default_rng(2)
    dense = _quantized_dense(rng)
    x = rng.normal(size=(3, 8)).astype("float32")
    np.testing.assert_allclose(
        np.asarray(dense_columns(dense, x, 0, 4, int8=False)),
        np.asarray(dense(x))[:, :4],
        rtol=1e-6,
        atol=1e-6,
    )


def test_lora_dense_refuses_other_modes_clearly():
    dense = _quantized_dense(np.random.default_rng(3))
    with pytest.raises(NotImplementedError, match="received mode='int4'"):
        dense.quantize("int4")


def test_int8_dense_docstring_example_and_round_trip():
    dense = keras_bert.layers.Int8Dense(4)
    dense.build((None, 8))
    dense.quantize("int8")
    x = np.random.default_rng(7).random((2, 8)).astype("float32")
    assert dense(x).shape == (2, 4)
    assert dense.get_config()["units"] == 4
    restored = run_layer_saving_test(dense, x)
    assert [type(layer) for layer in restored.layers[1:]] == [
        keras_bert.layers.Int8Dense
    ]


def test_int8_lora_dense_save_load_round_trip():
    rng = np.random.default_rng(4)
    dense = _quantized_dense(rng)
    dense.quantize("int8")
    restored = run_layer_saving_test(
        dense, rng.normal(size=(2, 8)).astype("float32")
    )
    quantized = [
        layer for layer in restored.layers if layer.quantization_mode == "int8"
    ]
    assert len(quantized) == 1


@pytest.mark.parametrize(
    "optimizations",
    [None, (), ("split_qkv_first",)],
    ids=["all", "reference", "split_qkv_first"],
)
def test_int8_block_paths_stay_close_to_float(optimizations):
    rng = np.random.default_rng(5)
    block = keras_bert.layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=16, optimizations=optimizations
    )
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    positions = np.array([[0, 2], [1, 4]])
    expected = np.asarray(block(x, padding_mask=mask))
    expected_at = np.asarray(
        block(x, padding_mask=mask, query_positions=positions)
    )
    for dense in (
        block.qkv_dense,
        block.attention_output_dense,
        block.intermediate_dense,
        block.output_dense,
    ):
        dense.quantize("int8")
    # Tolerance: LayerNorm outputs of unit scale, four int8 matmuls.
    np.testing.assert_allclose(
        np.asarray(block(x, padding_mask=mask)), expected, atol=0.1
    )
    np.testing.assert_allclose(
        np.asarray(block(x, padding_mask=mask, query_positions=positions)),
        expected_at,
        atol=0.1,
    )
    # Training on int8 weights runs Keras' own int8 call (not fused ops).
    trained = block(x, padding_mask=mask, training=True)
    assert np.all(np.isfinite(np.asarray(trained)))


def test_int8_matmul_rows_do_not_depend_on_each_other():
    # Per-row input scales: padding rows or a louder sentence in the same
    # batch never change a row's answer.
    rng = np.random.default_rng(6)
    kernel, scale = _quantized_weights(rng)
    x = rng.normal(size=(4, 8)).astype("float32")
    x[3] *= 100.0  # an outlier row
    together = _int8_matmul(x, kernel, scale, column_sums(kernel))
    alone = _int8_matmul(x[:1], kernel, scale, column_sums(kernel))
    if together is None:
        return
    np.testing.assert_allclose(together[:1], alone, rtol=1e-6, atol=1e-6)
