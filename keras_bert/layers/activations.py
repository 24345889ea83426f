"""The feed-forward activations BERT checkpoints use.

BERT's "gelu" means two different functions depending on who wrote the
checkpoint: Google's original TensorFlow code computes the tanh approximation,
Hugging Face's `"gelu"` is the exact erf form. We name them unambiguously:
`"gelu"` is exact, `"gelu_approximate"` is the tanh approximation. The
checkpoint converters translate each source's name into one of these.
"""

import keras

ACTIVATIONS = ("gelu", "gelu_approximate")


def validate_activation(activation):
    """Returns `activation` if it is one we implement, else raises."""
    if activation not in ACTIVATIONS:
        raise ValueError(
            "Received an invalid value for argument `activation`, expected "
            f"one of {ACTIVATIONS} ('gelu' is the exact erf form, "
            "'gelu_approximate' the tanh approximation used by Google's "
            f"original BERT code). Received: activation={activation!r}"
        )
    return activation


def apply_activation(x, activation, training=None, closed_form=True):
    """Applies the named activation to `x`.

    In training, exact GELU on TensorFlow uses a hand-written derivative
    (`_exact_gelu`, the optimisation `"closed_form_gelu"`) unless
    `closed_form` is false; otherwise TensorFlow's own `gelu`, whose graph
    pattern TensorFlow fuses into the preceding matmul at inference.
    """
    if activation == "gelu":
        if training and closed_form and keras.backend.backend() == "tensorflow":
            return _exact_gelu(x)
        return keras.ops.gelu(x, approximate=False)
    if activation == "gelu_approximate":
        return keras.ops.gelu(x, approximate=True)
    validate_activation(activation)


_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


def _exact_gelu(x):
    """Exact GELU, `x * Phi(x)`, with its derivative written out.

    Computed in at least float32 and rounded once to the input's dtype.
    In float32 and float64 the outputs are `tf.nn.gelu(x, approximate=False)`
    bit for bit (the same products, up to exact scalings by 0.5 and -1); in
    bfloat16 they are more accurate than TensorFlow's, which evaluates
    `erfc` in bfloat16 (and slowly).
    The gradient `Phi(x) + x * phi(x)` reuses the forward pass's `Phi(x)`
    and takes fewer element-wise passes than TensorFlow's differentiation of
    the forward pass. TensorFlow only.
    """
    import tensorflow as tf

    dtype = keras.backend.result_type(x.dtype, "float32")

    @tf.custom_gradient
    def gelu(x):
        input_dtype = x.dtype
        x = tf.cast(x, dtype)
        cdf = gelu_cdf(x)
        outputs = tf.cast(x * cdf, input_dtype)

        def grad(upstream):
            grad = gelu_gradient(tf.cast(upstream, dtype), x, cdf)
            return tf.cast(grad, input_dtype)

        return outputs, grad

    return gelu(x)


def gelu_cdf(x):
    """`Phi(x)`, the standard normal CDF, in `x`'s dtype (TensorFlow)."""
    import tensorflow as tf

    return 0.5 * tf.math.erfc(x * tf.constant(-_SQRT_HALF, x.dtype))


def gelu_gradient(upstream, x, cdf):
    """`upstream * (Phi(x) + x * phi(x))`, the exact GELU's gradient, given
    `cdf = gelu_cdf(x)` (TensorFlow, in `x`'s dtype)."""
    import tensorflow as tf

    x_pdf = x * tf.exp(tf.square(x) * tf.constant(-0.5, x.dtype))
    x_pdf = x_pdf * tf.constant(_INV_SQRT_2PI, x.dtype)
    return upstream * (cdf + x_pdf)
