"""BERT's weight initialisation."""

import keras


def get_initializer(initializer=None):
    """Resolves an initializer argument.

    `None` gives BERT's `TruncatedNormal(stddev=0.02)`; anything else is
    passed to `keras.initializers.get`.
    """
    if initializer is None:
        return keras.initializers.TruncatedNormal(stddev=0.02)
    return keras.initializers.get(initializer)


def clone_initializer(initializer):
    """A fresh copy of `initializer` for one weight.

    An unseeded Keras random initializer draws its seed once, at
    construction, and then returns the same values for every call with the
    same shape: sharing one instance would give every layer identical
    weights. Each weight therefore gets its own copy.
    """
    if not isinstance(initializer, keras.initializers.Initializer):
        return initializer
    return initializer.__class__.from_config(initializer.get_config())
