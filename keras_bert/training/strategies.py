"""Choosing a `tf.distribute` strategy from a flag value."""

import tensorflow as tf
from absl import logging

STRATEGIES = (
    "one_device",
    "mirrored",
    "multi_worker_mirrored",
    "tpu",
    "parameter_server",
)

# Keras 3's `Model.fit` has no `ClusterCoordinator` path: under a
# `ParameterServerStrategy` it fails with "To use this dataset, you need to
# pass this dataset to ClusterCoordinator.create_per_worker_dataset".
# tests/training/test_strategies.py checks that this is still so.
PARAMETER_SERVER_FIT_ERROR = (
    "Keras 3's `Model.fit` cannot train under "
    "`tf.distribute.ParameterServerStrategy` (it has no "
    "`ClusterCoordinator` support). Use --strategy="
    "multi_worker_mirrored for several machines (synchronous, every "
    "worker holds the whole model, which BERT's size allows), or write "
    "a custom loop with `tf.distribute.coordinator.ClusterCoordinator`."
)


def create_strategy(name="one_device", tpu=None, cluster_resolver=None):
    """Returns the `tf.distribute.Strategy` a `--strategy` flag names.

    Model code knows nothing of the strategy: build and compile the model
    inside `strategy.scope()` and call `fit` as usual. Batch sizes given
    to datasets are *global* (the sum over all replicas).

    Args:
        name: str. One of:
            `"one_device"`: the first GPU if there is one, else the CPU.
            `"mirrored"`: synchronous data parallelism over all local GPUs
            (the CPU if none).
            `"multi_worker_mirrored"`: synchronous data parallelism over
            several machines; each process reads its place in the cluster
            from the `TF_CONFIG` environment variable (without it, this
            process alone is the cluster).
            `"tpu"`: a Cloud TPU, `tpu` names it.
            `"parameter_server"` is refused with what to use instead:
            Keras 3's `fit` cannot train under a `ParameterServerStrategy`
            (see `check_fit_support`).
            Defaults to `"one_device"`.
        tpu: str or `None`. Only for `"tpu"`: the TPU's name or
            `grpc://host:port` address, or `"local"` on a TPU VM.
        cluster_resolver: optional
            `tf.distribute.cluster_resolver.ClusterResolver` for
            `"multi_worker_mirrored"`, instead of reading `TF_CONFIG`.

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
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy(
            cluster_resolver=cluster_resolver
        )
    if name == "tpu":
        return _create_tpu_strategy(tpu)
    if name == "parameter_server":
        raise ValueError(PARAMETER_SERVER_FIT_ERROR)
    raise ValueError(
        "Received an invalid value for argument `name`, expected one of "
        f"{STRATEGIES}. Received: name={name!r}"
    )


def _create_tpu_strategy(tpu):
    if not tpu:
        raise ValueError(
            "--strategy=tpu needs the TPU to use. Pass tpu='local' on a TPU "
            "VM, or the TPU's name or grpc://host:port address for a TPU "
            f"node or pod slice. Received: tpu={tpu!r}"
        )
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    if tpu != "local":
        tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    logging.info("TPU devices: %s", tf.config.list_logical_devices("TPU"))
    return tf.distribute.TPUStrategy(resolver)


def check_fit_support(strategy):
    """Raises if Keras 3's `Model.fit` cannot train under `strategy`.

    Args:
        strategy: a `tf.distribute.Strategy`.

    Raises:
        ValueError: for `tf.distribute.ParameterServerStrategy`, saying
            what to use instead.

    Example:
    ```python
    check_fit_support(create_strategy("mirrored"))  # passes
    ```
    """
    if isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy):
        raise ValueError(PARAMETER_SERVER_FIT_ERROR)


def is_chief(strategy=None):
    """Whether this process writes checkpoints, logs and exports.

    Under `MultiWorkerMirroredStrategy` only the chief (worker 0, or the
    `chief` task) does; every other strategy runs in one process, which
    does.

    Args:
        strategy: a `tf.distribute.Strategy`, or `None` for the current
            one.

    Example:
    ```python
    if is_chief(strategy):
        model.save_weights("model.weights.h5")
    ```
    """
    strategy = strategy or tf.distribute.get_strategy()
    return bool(strategy.extended.should_checkpoint)


def task_id(strategy=None):
    """This worker's index in its cluster (0 outside multi-worker runs).

    Args:
        strategy: a `tf.distribute.Strategy`, or `None` for the current
            one.
    """
    strategy = strategy or tf.distribute.get_strategy()
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or resolver.task_id is None:
        return 0
    return int(resolver.task_id)
