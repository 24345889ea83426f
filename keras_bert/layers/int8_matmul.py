"""`inputs @ kernel` with int8 weights, on TensorFlow's oneDNN int8 kernel.

Keras' own int8 `Dense` (`model.quantize("int8")`) quantizes the inputs
per row and multiplies with `ops.matmul(int8, int8)`, which on TensorFlow
becomes `BatchMatMulV3` int8 → int32, slower than the float32 matmul
for BERT's dense shapes (section `int8_matmul_eigen` of
`benchmarks/RESULTS.md` times the three). TensorFlow's oneDNN kernel
`QuantizedMatMulWithBiasAndDequantize` (uint8 inputs, int8 weights,
float32 out) is the fast one, so this is where TensorFlow is the point,
and the ops are TensorFlow's.

The op takes one input scale for the whole tensor and uint8 inputs, and
its zero-point mode (`MIN_FIRST`) needs a bias compensation worked out
from static ranges. So each row is divided by its own largest magnitude
`s` (per-token dynamic quantization, as Keras' int8 `Dense` does), shifted
into `[0, 2]` and quantized to uint8 over it (the step of int8 over
`[-1, 1]`); the shift is taken off after the matmul, exactly:
`(x / s + 1) @ W - column_sums(W) = x @ W / s`. The weights keep Keras'
per-output-channel scales (`kernel_scale`, `W = kernel / kernel_scale`),
applied with `s` to the float32 result. Per row, a row's answer never
depends on the other rows of the batch nor on padding rows, and an
outlier token does not coarsen every other token, as one scale for the
whole tensor would (it cost accuracy when tried; `python
benchmarks/serving.py` reports the int8 export's accuracy against
float32's).

The kernel runs where TensorFlow's oneDNN is on (its Linux x86 builds on
CPUs with AVX512-VNNI, AVX512-BF16, AVX-VNNI or AMX by default, elsewhere
with `TF_ENABLE_ONEDNN_OPTS=1`);
`int8_matmul_supported()` says whether it runs in this process.
"""

import functools

import tensorflow as tf


def int8_matmul(inputs, kernel, kernel_scale, column_sums):
    """`inputs @ (kernel / kernel_scale)`, int8 weights on oneDNN.

    Args:
        inputs: float32 tensor `(..., input_dim)`.
        kernel: int8 tensor `(input_dim, units)`, the quantized weights.
        kernel_scale: float32 tensor `(units,)`. The float weights are
            `kernel / kernel_scale` (Keras' `Dense` int8 convention).
        column_sums: float32 tensor `(units,)`, `kernel`'s sums over its
            rows (`column_sums(kernel)`), which undo the inputs' shift.

    Returns:
        float32 tensor `(..., units)`.

    Example:
    ```python
    w = np.random.rand(8, 4).astype("float32") - 0.5
    scale = 127.0 / np.abs(w).max(axis=0)
    kernel = np.round(w * scale).astype("int8")
    x = np.random.rand(3, 8).astype("float32")
    y = int8_matmul(x, kernel, scale, column_sums(kernel))  # ≈ x @ w
    ```
    """
    inputs = tf.convert_to_tensor(inputs, tf.float32)
    input_dim = tf.shape(inputs)[-1]
    outer_shape = tf.shape(inputs)[:-1]
    rows = tf.reshape(inputs, [-1, input_dim])  # (tokens, input_dim)
    # One scale per row (as Keras' own int8 Dense): each row divided by
    # its largest magnitude lies in [-1, 1], shifted into [0, 2].
    row_scale = tf.maximum(
        tf.reduce_max(tf.abs(rows), axis=-1, keepdims=True), 1e-30
    )  # (tokens, 1)
    quantized = tf.raw_ops.QuantizeV2(
        input=rows / row_scale + 1.0,
        min_range=0.0,
        max_range=2.0,
        T=tf.quint8,
        mode="SCALED",
    )
    units = tf.shape(kernel)[-1]
    shifted_product = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
        a=quantized.output,
        b=tf.cast(kernel, tf.qint8),
        bias=tf.zeros([units], tf.float32),
        min_a=quantized.output_min,
        max_a=quantized.output_max,
        # One int8 step is one unit: the per-channel scales come after.
        min_b=-127.0,
        max_b=127.0,
        min_freezed_output=0.0,
        max_freezed_output=0.0,
        Toutput=tf.float32,
        input_quant_mode="SCALED",
    )  # (tokens, units), (x / row_scale + 1) @ kernel
    product = (shifted_product - column_sums) * (row_scale / kernel_scale)
    return tf.reshape(product, tf.concat([outer_shape, [units]], axis=0))


def column_sums(kernel):
    """float32 `(units,)`: the int8 `kernel`'s sums over its rows."""
    return tf.reduce_sum(tf.cast(kernel, tf.float32), axis=0)


@functools.cache
def int8_matmul_supported():
    """Whether oneDNN's int8 matmul runs in this process and answers right.

    Where TensorFlow's oneDNN is off (`TF_ENABLE_ONEDNN_OPTS=0`, or an
    AVX2-only CPU by default) the op exists but returns no output, so the
    probe runs it and checks its answer, not only that it is there.
    """
    try:
        product = int8_matmul(
            tf.ones([1, 2]), tf.ones([2, 2], tf.int8), tf.ones([2]), [2.0, 2.0]
        )
        return product.shape == (1, 2) and bool(
            tf.reduce_all(tf.abs(product - 2.0) < 0.05)
        )
    except tf.errors.OpError:
        return False
