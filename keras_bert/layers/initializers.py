"""BERT's weight initialisation."""

import contextlib
import contextvars

import keras

_ASSIGNED_NEXT = contextvars.ContextVar("encoder_assigned_next", default=False)


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


def encoder_initializer(stddev):
    """BERT's `TruncatedNormal(stddev)` for the encoder's weights (the
    embeddings and the blocks), or `Zeros` inside `encoder_assigned_next()`.

    Args:
        stddev: float. The backbone's `initializer_range`.

    Example:
    ```python
    encoder_initializer(0.02)  # TruncatedNormal(stddev=0.02)
    ```
    """
    if _ASSIGNED_NEXT.get():
        return keras.initializers.Zeros()
    return keras.initializers.TruncatedNormal(stddev=stddev)


@contextlib.contextmanager
def encoder_assigned_next():
    """Inside, a backbone's encoder weights start as zeros, not random.

    For code that assigns every encoder weight right after building, as
    `keras_bert.checkpoints.load_checkpoint` does (it refuses a
    checkpoint that lacks one), no 22M truncated-normal values are drawn
    first: loading all-MiniLM-L6-v2 took 1.06 s with them, 0.51 s without
    them and with faster tokenizer tables (2-core AMD EPYC,
    `benchmarks/first_call_latency.py --fresh`, RESULTS.md). The
    pooler and heads, which a checkpoint may lack, are drawn as always.
    Per thread and task (a `contextvars.ContextVar`).

    Example:
    ```python
    with encoder_assigned_next():
        backbone = keras_bert.BertBackbone(**config)
    assign_every_encoder_weight(backbone)
    ```
    """
    token = _ASSIGNED_NEXT.set(True)
    try:
        yield
    finally:
        _ASSIGNED_NEXT.reset(token)
