"""BERT's optimizers: AdamW (and LAMB) without decay on LayerNorm or biases."""

import keras

# Variable names that get no weight decay: LayerNorm scale and offset, and
# every bias. Keras matches these against `variable.name`.
NO_DECAY_NAMES = ("gamma", "beta", "bias")

OPTIMIZERS = ("adamw", "lamb")


def create_adamw(
    learning_rate=1e-4,
    weight_decay=0.01,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    global_clipnorm=1.0,
):
    """AdamW as BERT uses it.

    Weight decay is applied to every weight except LayerNorm scales/offsets
    and biases; gradients are clipped to a global norm.

    Args:
        learning_rate: float or a `keras.optimizers.schedules` schedule,
            e.g. `keras_bert.training.WarmupLinearDecay`.
        weight_decay: float. Defaults to `0.01`.
        beta_1, beta_2, epsilon: Adam's constants (BERT: 0.9, 0.999, 1e-6).
        global_clipnorm: float or `None`. Defaults to `1.0`.

    Example:
    ```python
    optimizer = keras_bert.training.create_adamw(2e-5)
    ```
    """
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=global_clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer


def create_lamb(
    learning_rate=1e-3,
    weight_decay=0.01,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    global_clipnorm=1.0,
):
    """LAMB (You et al., 2020), the layer-wise adaptive optimizer for large
    batches, with the same decay exclusions and clipping as `create_adamw`.

    Keras' `Lamb` applies decoupled weight decay (`w -= lr * decay * w`)
    next to the trust-ratio-scaled Adam step.

    Args:
        learning_rate: float or schedule. Defaults to `1e-3`.
        weight_decay: float. Defaults to `0.01`.
        beta_1, beta_2, epsilon: Adam's constants.
        global_clipnorm: float or `None`. Defaults to `1.0`.

    Example:
    ```python
    optimizer = keras_bert.training.create_lamb(1e-3)
    ```

    References:
        - [You et al., 2020](https://arxiv.org/abs/1904.00962)
    """
    optimizer = keras.optimizers.Lamb(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=global_clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer


def create_optimizer(name, learning_rate, **kwargs):
    """Builds an optimizer by name, as a recipe's `--optimizer` flag names it.

    Args:
        name: str. `"adamw"` or `"lamb"`.
        learning_rate: float or schedule.
        **kwargs: passed to `create_adamw` or `create_lamb`.

    Example:
    ```python
    optimizer = keras_bert.training.create_optimizer("lamb", 1e-3)
    ```
    """
    if name == "adamw":
        return create_adamw(learning_rate, **kwargs)
    if name == "lamb":
        return create_lamb(learning_rate, **kwargs)
    raise ValueError(
        "Received an invalid value for argument `name`, expected one of "
        f"{OPTIMIZERS}. Received: name={name!r}"
    )
