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


def apply_activation(x, activation):
    """Applies the named activation to `x`."""
    if activation == "gelu":
        if keras.backend.backend() == "tensorflow":
            return _exact_gelu(x)
        return keras.ops.gelu(x, approximate=False)
    if activation == "gelu_approximate":
        return keras.ops.gelu(x, approximate=True)
    validate_activation(activation)


_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


def _exact_gelu(x):
    """Exact GELU, `x * Phi(x)`, with its derivative written out.

    The forward pass is `tf.nn.gelu(x, approximate=False)` op for op, so
    outputs are identical. The gradient `Phi(x) + x * phi(x)` reuses the
    forward pass's `Phi(x)` and takes four element-wise ops where
    TensorFlow's differentiation of the forward pass takes about twice as
    many. TensorFlow only.
    """
    import tensorflow as tf

    @tf.custom_gradient
    def gelu(x):
        erfc = tf.math.erfc(-x * tf.cast(_SQRT_HALF, x.dtype))
        outputs = 0.5 * x * erfc
        cdf = 0.5 * erfc

        def grad(upstream):
            pdf = tf.exp(-0.5 * tf.square(x)) * tf.cast(_INV_SQRT_2PI, x.dtype)
            return upstream * (cdf + x * pdf)

        return outputs, grad

    return gelu(x)
