"""BERT's optimizer: AdamW without decay on LayerNorm weights and biases."""

import keras


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
        learning_rate: float or a `keras.optimizers.schedules` schedule.
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
    optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
    return optimizer
