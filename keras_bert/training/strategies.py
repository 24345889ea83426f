"""Choosing a `tf.distribute` strategy from a flag value."""

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored")


def create_strategy(name="one_device"):
    """Returns the `tf.distribute.Strategy` a `--strategy` flag names.

    Model code knows nothing of the strategy: build and compile the model
    inside `strategy.scope()` and call `fit` as usual.

    Args:
        name: str. `"one_device"`: the first GPU if there is one, else the
            CPU. `"mirrored"`: synchronous data parallelism over all local
            GPUs (the CPU if none). Defaults to `"one_device"`.

    Returns:
        A `tf.distribute.Strategy`.

    Example:
    ```python
    strategy = keras_bert.training.create_strategy("mirrored")
    with strategy.scope():
        model = keras_bert.BertMaskedLM(
            keras_bert.BertBackbone.from_preset("bert_tiny")
        )
    ```
    """
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(
            gpus[0].name if gpus else "/cpu:0"
        )
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    raise ValueError(
        "Received an invalid value for argument `name`, expected one of "
        f"{STRATEGIES}. Received: name={name!r}"
    )
