"""Datasets, directories and `fit` under a `tf.distribute` strategy.

The pieces `pretrain` and the recipes use so that one script runs on one
device, several GPUs, several machines or a TPU:

- `with_auto_shard_policy`: how each worker gets its part of the data.
- `skip_trained_steps`: a restarted run continues where the data stopped.
- `write_directory`: only the chief writes into the run's directory.
- `support_distributed_fit`: works around three Keras 3 bugs: two stop
  `fit`/`evaluate` under `MultiWorkerMirroredStrategy` before the first
  step, one clips each replica's gradients instead of their sum. It lives
  with the package's other Keras workarounds in `keras_bert.keras_workarounds`
  and is importable from here too.
"""

import os
import shutil
import tempfile

import tensorflow as tf
from absl import logging

from keras_bert.keras_workarounds import support_distributed_fit  # noqa: F401
from keras_bert.training.strategies import is_chief
from keras_bert.training.strategies import task_id

AUTO_SHARD_POLICIES = {
    "auto": tf.data.experimental.AutoShardPolicy.AUTO,
    "file": tf.data.experimental.AutoShardPolicy.FILE,
    "data": tf.data.experimental.AutoShardPolicy.DATA,
    "off": tf.data.experimental.AutoShardPolicy.OFF,
}


def with_auto_shard_policy(dataset, policy):
    """Sets how a multi-worker strategy splits `dataset` between workers.

    `"file"`: each worker reads its own subset of the input files (no
    worker reads data it then drops; needs at least as many files as
    workers, and files of similar size). `"data"`: every worker runs the
    whole pipeline and keeps its share of each global batch (for
    generated or in-memory data, or fewer files than workers); the global
    batches are then exactly those of a one-process run. `"off"`: no
    sharding (each worker must already read different data). `"auto"`:
    `"file"` if the pipeline reads files, else `"data"`. Only
    `MultiWorkerMirroredStrategy` shards; the other strategies ignore it.

    Args:
        dataset: `tf.data.Dataset` of global batches.
        policy: str. `"file"`, `"data"`, `"off"` or `"auto"`.

    Returns:
        The dataset with the policy in its options.

    Example:
    ```python
    dataset = tf.data.Dataset.range(8).batch(4)
    dataset = with_auto_shard_policy(dataset, "data")
    ```
    """
    if policy not in AUTO_SHARD_POLICIES:
        raise ValueError(
            "Received an invalid value for argument `policy`, expected one "
            f"of {sorted(AUTO_SHARD_POLICIES)}. Received: policy={policy!r}"
        )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = AUTO_SHARD_POLICIES[
        policy
    ]
    return dataset.with_options(options)


def file_shard_policy(num_files, num_workers):
    """`"file"` if every worker can have its own files, else `"data"`.

    Args:
        num_files: int. Input files of the dataset.
        num_workers: int. Worker processes in the cluster.

    Example:
    ```python
    file_shard_policy(num_files=16, num_workers=4)  # "file"
    ```
    """
    return "file" if num_files >= num_workers else "data"


def num_workers(strategy):
    """Worker processes that each run an input pipeline (1 for local).

    Args:
        strategy: a `tf.distribute.Strategy`.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
        return 1
    jobs = resolver.cluster_spec().as_dict()
    return max(1, len(jobs.get("worker", [])) + len(jobs.get("chief", [])))


def skip_trained_steps(dataset, steps, strategy):
    """Drops what the first `steps` training steps already consumed.

    With data sharding (or one worker) each step consumes one global batch
    of `dataset`, so `steps` batches are skipped. With file sharding each
    worker consumes `global_batch / num_workers` examples of *its own*
    files per step, so that many examples are skipped on each worker. A
    pipeline without randomness, or with fixed seeds, then feeds a
    restarted run exactly the batches an uninterrupted run would have seen.

    Args:
        dataset: `tf.data.Dataset` of global batches with a static batch
            size, and its auto-shard policy set (see
            `with_auto_shard_policy`).
        steps: int. Steps already trained.
        strategy: the `tf.distribute.Strategy` the model trains under.

    Returns:
        The dataset, advanced.

    Example:
    ```python
    dataset = tf.data.Dataset.range(100).batch(4)
    skip_trained_steps(dataset, 3, tf.distribute.get_strategy())  # 12, ...
    ```
    """
    if not steps:
        return dataset
    workers = num_workers(strategy)
    policy = dataset.options().experimental_distribute.auto_shard_policy
    per_file = policy in (
        tf.data.experimental.AutoShardPolicy.FILE,
        tf.data.experimental.AutoShardPolicy.AUTO,
    )
    if workers == 1 or not per_file:
        return dataset.skip(steps)
    if policy == tf.data.experimental.AutoShardPolicy.AUTO:
        logging.warning(
            "Resuming a multi-worker run on a dataset with the AUTO shard "
            "policy: assuming file sharding. Set the policy explicitly "
            "with keras_bert.training.with_auto_shard_policy."
        )
    batch_size = tf.nest.flatten(dataset.element_spec)[0].shape[0]
    if batch_size is None:
        raise ValueError(
            "Resuming a file-sharded multi-worker run needs batches of a "
            "static size (batch with drop_remainder=True). Received a "
            f"dataset with element_spec={dataset.element_spec}"
        )
    examples = steps * batch_size // workers
    options = dataset.options()
    dataset = dataset.unbatch().skip(examples)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    return dataset.with_options(options)


def write_directory(directory, strategy=None):
    """Where this process should write files meant for `directory`.

    The chief writes into `directory`. Other workers of a multi-worker run
    must still write (saving can involve every worker), but to a
    throw-away directory outside `directory`, as TensorFlow recommends;
    remove it with `remove_write_directory` when done.

    Args:
        directory: str. The run's directory (checkpoints, logs, export).
        strategy: a `tf.distribute.Strategy`, or `None` for the current
            one.

    Example:
    ```python
    path = write_directory("runs/tiny/tensorboard", strategy)
    ```
    """
    if is_chief(strategy):
        return directory
    return tempfile.mkdtemp(
        prefix=f"keras_bert_workertemp_{task_id(strategy)}_"
    )


def remove_write_directory(path, directory):
    """Removes `path` if it is a worker's throw-away copy of `directory`.

    Args:
        path: str. What `write_directory(directory)` returned.
        directory: str. The run's directory, never removed.
    """
    if os.fspath(path) != os.fspath(directory):
        # A worker's copy is a local temporary directory by construction
        # (`write_directory`), never the run's directory.
        shutil.rmtree(path, ignore_errors=True)  # gfile-exempt: local temp
