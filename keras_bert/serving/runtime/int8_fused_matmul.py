"""`activation(inputs @ kernel + bias)` on one fused oneDNN int8 kernel,
over a calibrated input range: what a calibrated int8 export's blocks run
(`serving_graph_int8_calibrated`, `keras_bert.serving.runtime.block`).

Serving-only, beside the per-row int8 matmul the layers use
(`keras_bert.layers.int8_matmul`).
"""

import tensorflow as tf

# The activations `int8_fused_matmul` fuses, by the block's `activation`.
_FUSED_ACTIVATIONS = {
    None: [],
    "gelu": ["GeluExact"],
    "gelu_approximate": ["GeluApproximate"],
}


def int8_fused_matmul(
    inputs, kernel, kernel_scale, bias, input_range, activation=None
):
    """`activation(inputs @ (kernel / kernel_scale) + bias)` on the int8
    kernel TensorFlow's oneDNN build fuses bias, activation and
    dequantization into (`_QuantizedMatMul`, the one Intel Neural
    Compressor's int8 BERT graphs run), the inputs quantized over a fixed
    range.

    Why not `int8_matmul`'s per-row ranges: on `(tokens, hidden)` rows of a
    request of 32 sentences, its element-wise ops around the matmul (each
    row's range, the shift, the dequantization, the bias and the GELU:
    ~10 ops over the whole activation) cost several times the int8 matmul
    itself (`python benchmarks/serving_ops.py`'s trace of the int8 export).
    Here the inputs go through one `QuantizeV2` (`MIN_FIRST`: uint8 over
    `input_range`, values outside it clipped) and everything after the
    int8 product runs inside the matmul kernel; with constant weights,
    ranges and bias, oneDNN keeps its reordered weights and the bias'
    zero-point compensation across calls. A row's answer depends on the
    fixed range only, never on the other rows of the request.

    `_QuantizedMatMul` is an internal (underscore) op: it exists in
    TensorFlow builds with oneDNN (the Linux x86 packages), and a graph
    that holds it loads only there (`saved_models/README.md`).

    Args:
        inputs: float32 tensor `(rows, input_dim)`.
        kernel: int8 tensor `(input_dim, units)`, constant.
        kernel_scale: float32 `(units,)`. The float weights are
            `kernel / kernel_scale` (Keras' `Dense` int8 convention).
        bias: float32 `(units,)`.
        input_range: `(low, high)` floats, the inputs' calibrated range
            (`low < 0 < high`).
        activation: `None`, `"gelu"` (exact) or `"gelu_approximate"`.

    Returns:
        float32 tensor `(rows, units)`.
    """
    from tensorflow.python.framework import op_def_library

    low, high = (float(value) for value in input_range)
    # Inference only: the op has no gradient, and a tape must not ask.
    inputs, kernel_scale, bias = (
        tf.stop_gradient(tf.convert_to_tensor(value, tf.float32))
        for value in (inputs, kernel_scale, bias)
    )
    if tf.executing_eagerly():  # the op is built in a graph only
        return _int8_fused_matmul_graph(
            inputs, kernel, kernel_scale, bias, (low, high), activation
        )
    quantized = tf.raw_ops.QuantizeV2(
        input=inputs,
        min_range=low,
        max_range=high,
        T=tf.quint8,
        mode="MIN_FIRST",
    )
    # Per output column, the float range of the int8 values -127..127.
    weight_range = 127.0 / kernel_scale
    results = op_def_library._apply_op_helper(  # an op tf.raw_ops lacks
        "_QuantizedMatMul",
        name="QuantizedMatMul",
        device_inputs=[
            quantized.output,
            tf.cast(kernel, tf.qint8),
            bias,
            quantized.output_min,
            quantized.output_max,
            -weight_range,
            weight_range,
        ],
        host_inputs=[],
        Tdevice_outputs=[tf.float32],
        Thost_outputs=[],
        T1=tf.quint8,
        T2=tf.qint8,
        Tbias=tf.float32,
        Tout=tf.float32,
        U=tf.float32,
        fused_ops=["BiasAdd", *_FUSED_ACTIVATIONS[activation], "Dequantize"],
        transpose_a=False,
        transpose_b=False,
        leakyrelu_alpha=0.2,
        input_quant_mode="MIN_FIRST",
        output_quant_mode="SCALED",
        is_weight_const=True,
        is_bias_const=True,
    )
    (op,) = [result for result in results if isinstance(result, tf.Operation)]
    return op.outputs[0]


# Eager calls build the op in this function's graph, traced once per input
# signature, range and activation.
_int8_fused_matmul_graph = tf.function(int8_fused_matmul, autograph=False)
