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
        return keras.ops.gelu(x, approximate=False)
    if activation == "gelu_approximate":
        return keras.ops.gelu(x, approximate=True)
    validate_activation(activation)
