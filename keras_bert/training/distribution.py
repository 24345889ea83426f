"""Datasets, directories and `fit` under a `tf.distribute` strategy.

The pieces `pretrain` and the recipes use so that one script runs on one
device, several GPUs, several machines or a TPU:

- `with_auto_shard_policy`: how each worker gets its part of the data.
- `skip_trained_steps`: a restarted run continues where the data stopped.
- `write_directory`: only the chief writes into the run's directory.
- `support_distributed_fit`: works around three Keras 3 bugs: two stop
  `fit`/`evaluate` under `MultiWorkerMirroredStrategy` before the first
  step, one clips each replica's gradients instead of their sum.
"""

import os
import shutil
import tempfile
import threading
import types

import tensorflow as tf
from absl import logging

from keras_bert.training.keras_internals import require_keras_internals
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


def _maybe_symbolic_build(self, iterator=None, data_batch=None):
    """Keras' `_maybe_symbolic_build`, from the dataset's element spec.

    Keras 3 takes the first batch of the training iterator (then starts a
    new one) to learn the input shapes and, under a strategy, averages it
    across replicas. Under `MultiWorkerMirroredStrategy` that average
    fails for nested (dict) batches (keras-team/keras#20329). And reading
    a batch ahead moves shuffling seeds on, by an amount that depends on
    how far the dataset had been skipped, so a resumed run would see other
    batches than an uninterrupted one. Only shapes and dtypes are needed:
    the dataset's `element_spec` has them, without reading anything.
    """
    if self._distribute_strategy is None:
        return
    if iterator is not None and data_batch is None:
        data_batch = iterator.data_adapter.get_tf_dataset().element_spec
    with self.distribute_strategy.scope():
        self._symbolic_build(data_batch=data_batch)


def _keras_tf_trainer():
    """Keras' TensorFlow trainer module, checked for what we rely on."""
    from keras.src.backend.tensorflow import trainer

    require_keras_internals(
        trainer, ["reduce_per_replica", "_collective_all_reduce_multi_worker"]
    )
    return trainer


def _multi_worker_reduce(keras_reduce):
    """Keras' `reduce_per_replica`, able to average scalars across workers.

    Keras 3 averages each step's logs across workers with
    `strategy.reduce("MEAN", value, axis=0)`, which fails for the scalar
    losses and metrics it returns ("Invalid reduction dimension 0 for
    input with 0 dimensions"). Scalars are averaged with `axis=None`;
    everything else goes to Keras unchanged.
    """

    def reduce_per_replica(values, strategy, reduction):
        if reduction not in ("auto", "mean"):
            return keras_reduce(values, strategy, reduction)

        def reduce(value):
            rank = strategy.experimental_local_results(value)[0].shape.rank
            return strategy.reduce("MEAN", value, axis=None if rank == 0 else 0)

        return tf.nest.map_structure(reduce, values)

    return reduce_per_replica


def _with_multi_worker_reduce(function):
    """`function` (a model's train/test function), run with Keras'
    `reduce_per_replica` replaced by `_multi_worker_reduce` for the length
    of each call and restored after, also on error.

    Keras' trainer looks the name up when it traces the step, which happens
    inside the first call (and any retrace): the traced step keeps the
    replacement, and nothing outside the call ever sees it.
    """
    trainer = _keras_tf_trainer()
    if getattr(function, "_keras_bert_reduce", False):
        return function

    def call(*args, **kwargs):
        keras_reduce = trainer.reduce_per_replica
        trainer.reduce_per_replica = _multi_worker_reduce(keras_reduce)
        try:
            return function(*args, **kwargs)
        finally:
            trainer.reduce_per_replica = keras_reduce

    call._keras_bert_reduce = True
    return call


def _make_function_with_multi_worker_reduce(model, make_function, attribute):
    """`model`'s `make_train_function` / `make_test_function`, whose
    result is wrapped by `_with_multi_worker_reduce`."""
    if getattr(make_function, "_keras_bert_reduce", False):
        return make_function  # support_distributed_fit ran before

    def make(force=False):
        make_function(force)
        function = _with_multi_worker_reduce(getattr(model, attribute))
        setattr(model, attribute, function)
        return function

    make._keras_bert_reduce = True
    return make


def _clip_gradients(self, grads):
    """Clips the replicas' *summed* gradients, as one device would.

    Keras 3 clips each replica's gradients, then sums them across
    replicas: with `global_clipnorm` (BERT's 1.0) the update then depends
    on the number of replicas. Here the sum comes first and is clipped;
    `_all_reduce_sum_gradients` then passes it through, so the gradients
    still cross the network once.
    """
    context = tf.distribute.get_replica_context()
    clips = self.clipnorm or self.global_clipnorm or self.clipvalue
    if not clips or context is None or context.num_replicas_in_sync == 1:
        return type(self)._clip_gradients(self, grads)
    present = [g for g in grads if g is not None]
    summed = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present))
    grads = [None if g is None else next(summed) for g in grads]
    # Per thread: `MirroredStrategy` traces each replica in its own.
    self._keras_bert_summed.value = True
    return type(self)._clip_gradients(self, grads)


def _all_reduce_sum_gradients(self, grads_and_vars):
    if getattr(self._keras_bert_summed, "value", False):
        self._keras_bert_summed.value = False  # for the next trace
        return list(grads_and_vars)
    return type(self)._all_reduce_sum_gradients(self, grads_and_vars)


def support_distributed_fit(model):
    """Makes `model.fit`/`evaluate` under `tf.distribute` match one device.

    Works around three Keras 3 (3.15) bugs, for this model (and its
    optimizer) only unless said otherwise:

    - keras-team/keras#20329: under `MultiWorkerMirroredStrategy`, `fit`
      averages the first batch (a dict) across workers to read its shapes
      and fails. The shapes are taken from the dataset's `element_spec`
      instead, which also stops Keras reading a batch ahead: that moved
      shuffling seeds on and broke exact resumption.
    - Under `MultiWorkerMirroredStrategy` each step's scalar logs are
      averaged along an axis they do not have, which fails; scalars are
      averaged whole. This model's train and test functions swap Keras'
      `reduce_per_replica` for the length of each of their calls (and
      restore it, also on error); in a multi-worker run only.
    - With more than one replica the optimizer clips each replica's
      gradients before summing them, so `global_clipnorm` changes the
      update with the number of replicas; the sum is clipped instead.

    With the losses of `pretraining_losses` (global-batch means), the
    weights after training then equal one device's for the same global
    batch. A no-op in effect on one device. Call it after compiling.

    Args:
        model: a compiled `keras.Model`.

    Returns:
        `model`.

    Example:
    ```python
    with strategy.scope():
        model = keras_bert.BertMaskedLM(backbone)
        model.compile(optimizer="adam", loss=pretraining_losses())
    support_distributed_fit(model)
    ```
    """
    require_keras_internals(
        model,
        ["_maybe_symbolic_build", "_symbolic_build", "_distribute_strategy"],
    )
    model._maybe_symbolic_build = types.MethodType(_maybe_symbolic_build, model)
    strategy = model.distribute_strategy
    if _keras_tf_trainer()._collective_all_reduce_multi_worker(strategy):
        for make, attribute in (
            ("make_train_function", "train_function"),
            ("make_test_function", "test_function"),
        ):
            setattr(
                model,
                make,
                _make_function_with_multi_worker_reduce(
                    model, getattr(model, make), attribute
                ),
            )
    optimizer = model.optimizer
    # Under mixed_float16 the inner optimizer of the loss-scale wrapper
    # clips and applies.
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    if optimizer is not None:
        require_keras_internals(
            optimizer, ["_clip_gradients", "_all_reduce_sum_gradients"]
        )
        optimizer._keras_bert_summed = threading.local()
        optimizer._clip_gradients = types.MethodType(_clip_gradients, optimizer)
        optimizer._all_reduce_sum_gradients = types.MethodType(
            _all_reduce_sum_gradients, optimizer
        )
    return model
