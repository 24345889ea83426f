"""A dense layer's matmul whose input gradient avoids a slow oneDNN kernel.

The gradient of `y = x @ kernel + bias` with respect to `x` is
`dy @ transpose(kernel)`, which TensorFlow computes as one matmul with
`transpose_b=True`. On this repository's benchmark CPU (oneDNN, float32),
that kernel is slower than a plain matmul when the kernel is at least as
wide as it is tall: measured for batch 16 x 128 tokens, 13.3 against 10.4
ms for a (512, 2048) kernel (the feed-forward input), 8.8 against 7.9 ms
for (512, 1536) (query|key|value), 3.0 against 2.7 ms for (512, 512); for
(2048, 512) it is the faster one (9.7 against 10.1 ms), and in bfloat16
`transpose_b` is as fast or faster for all four. Here the kernel is
transposed explicitly first (a 0.5 ms copy), behind a `Snapshot` so that
TensorFlow's graph optimizer does not fold the transpose back into the
matmul.

`BertBackbone`'s blocks use it in float32 training for kernels no taller than
wide, when no GPU is visible (GPU matmul libraries transpose for free).
"""

import keras


def use_plain_backward(x, kernel, training):
    """Whether `dense` below pays for `x @ kernel` in this step."""
    if not training or keras.backend.backend() != "tensorflow":
        return False
    if keras.backend.standardize_dtype(x.dtype) != "float32":
        return False
    if keras.backend.standardize_dtype(kernel.dtype) != "float32":
        return False
    rows, columns = kernel.shape
    if rows > columns:
        return False
    import tensorflow as tf

    return not tf.config.list_logical_devices("GPU")


def dense(x, kernel, bias=None):
    """`x @ kernel + bias` (or `x @ kernel` without `bias`) for 2-D `x`,
    whose gradient for `x` multiplies by an explicitly transposed kernel
    (see the module docstring). TensorFlow only."""
    import tensorflow as tf

    @tf.custom_gradient
    def dense(x, kernel, *bias):
        outputs = tf.matmul(x, kernel)
        if bias:
            outputs = tf.nn.bias_add(outputs, bias[0])

        def grad(upstream):
            transposed = tf.raw_ops.Snapshot(input=tf.transpose(kernel))
            grads = [
                tf.matmul(upstream, transposed),
                tf.matmul(x, upstream, transpose_a=True),
            ]
            if bias:
                grads.append(tf.raw_ops.BiasAddGrad(out_backprop=upstream))
            return grads

        return outputs, grad

    return dense(x, kernel, *([] if bias is None else [bias]))
