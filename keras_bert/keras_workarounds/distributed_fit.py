"""Workarounds for `fit` under `tf.distribute` (`support_distributed_fit`).

Three Keras 3.15 bugs make `fit`/`evaluate` under a `tf.distribute`
strategy fail or differ from one device; `support_distributed_fit(model)`
works around them for one model and its optimizer. `build_before_tracing`,
one of them, is also what `Task` models build with on one device, so that
`fit`'s step is traced once.
"""

import threading
import types

import tensorflow as tf

from keras_bert.keras_workarounds.guard import keras_tf_trainer
from keras_bert.keras_workarounds.guard import require_keras_internals


def build_before_tracing(model, iterator=None, data_batch=None):
    """Keras' `_maybe_symbolic_build` for `model`, from the dataset's
    element spec, with or without a strategy (`fit` and `evaluate` call it
    before their first step). `Task` models use it; `support_distributed_fit`
    gives it to any model.

    Workaround for two Keras 3 gaps:

    - Without a strategy, Keras builds the optimizer's slots and the
      compiled loss and metrics inside the first trace of the train
      function. A `tf.function` that creates variables when first traced
      is traced again without them: the whole training step (model,
      gradients, optimizer) was traced twice. Built here, eagerly, before
      `fit` traces, it is traced once (tested).
    - Under a strategy, Keras takes the first batch of the training
      iterator (then starts a new one) to learn the input shapes and
      averages it across replicas. Under `MultiWorkerMirroredStrategy`
      that average fails for nested (dict) batches
      (keras-team/keras#20329). And reading a batch ahead moves shuffling
      seeds on, by an amount that depends on how far the dataset had been
      skipped, so a resumed run would see other batches than an
      uninterrupted one. Only shapes and dtypes are needed: the dataset's
      `element_spec` has them, without reading anything.
    """
    require_keras_internals(model, ["_symbolic_build", "distribute_strategy"])
    if iterator is not None and data_batch is None:
        data_batch = iterator.data_adapter.get_tf_dataset().element_spec
    with model.distribute_strategy.scope():
        model._symbolic_build(data_batch=data_batch)


def _multi_worker_reduce(keras_reduce):
    """Workaround: Keras' `reduce_per_replica`, able to average scalars
    across workers.

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


def with_multi_worker_reduce(function):
    """Workaround: `function` (a model's train/test function), run with Keras'
    `reduce_per_replica` replaced by `_multi_worker_reduce` for the length
    of each call and restored after, also on error.

    Keras' trainer looks the name up when it traces the step, which happens
    inside the first call (and any retrace): the traced step keeps the
    replacement, and nothing outside the call ever sees it.
    """
    trainer = keras_tf_trainer()
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
    result is wrapped by `with_multi_worker_reduce`."""
    if getattr(make_function, "_keras_bert_reduce", False):
        return make_function  # support_distributed_fit ran before

    def make(force=False):
        make_function(force)
        function = with_multi_worker_reduce(getattr(model, attribute))
        setattr(model, attribute, function)
        return function

    make._keras_bert_reduce = True
    return make


def _clip_summed_gradients(self, grads):
    """Workaround: clips the replicas' *summed* gradients, as one device
    would.

    Keras 3 clips each replica's gradients, then sums them across
    replicas: with `global_clipnorm` (BERT's 1.0) the update then depends
    on the number of replicas. Here the sum comes first and is clipped;
    `_all_reduce_unless_summed` then passes it through, so the gradients
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


def _all_reduce_unless_summed(self, grads_and_vars):
    """Keras' all-reduce of the gradients, skipped where
    `_clip_summed_gradients` summed them already."""
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
        ["_maybe_symbolic_build", "_symbolic_build"],
    )
    model._maybe_symbolic_build = types.MethodType(build_before_tracing, model)
    strategy = model.distribute_strategy
    if keras_tf_trainer()._collective_all_reduce_multi_worker(strategy):
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
        optimizer._clip_gradients = types.MethodType(
            _clip_summed_gradients, optimizer
        )
        optimizer._all_reduce_sum_gradients = types.MethodType(
            _all_reduce_unless_summed, optimizer
        )
    return model
