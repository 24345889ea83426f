"""Workarounds for Keras bugs and gaps, all in one place, all guarded.

keras_bert reaches past Keras' public API only in this package: the guard
(`guard.py`), the workarounds for `fit` under `tf.distribute`
(`distributed_fit.py`), and the others here. Every name is importable
from `keras_bert.keras_workarounds`. Each workaround:

- is named for what it works around, with the Keras issue where there is
  one;
- checks the private Keras names it relies on first
  (`require_keras_internals`), so that a Keras release that renamed them
  fails at once with the version and the fix, not deep inside `fit`;
- acts on keras_bert's own layers, models and optimizers only, never on
  Keras for the whole process (tests/training/test_keras_untouched.py
  checks that importing and training leave every Keras attribute as it
  was).

The workarounds (in `distributed_fit.py`: `support_distributed_fit`,
`build_before_tracing`; in `guard.py`: `keras_tf_trainer`):

- `keep_string_inputs(layer)`: Keras' `__call__` converts inputs to
  arrays; the tokenizer and the preprocessor take strings.
- `support_distributed_fit(model)`: three Keras 3.15 bugs that make
  `fit`/`evaluate` under `tf.distribute` fail or differ from one device.
- `build_before_tracing(model, ...)`: without a strategy, Keras builds
  the optimizer and the compiled metrics inside the first trace of
  `fit`'s step, which then traces it all twice.
- `keras_tf_trainer()`: Keras' TensorFlow trainer module, whose
  `reduce_per_replica` `training.trace_per_shape` and
  `support_distributed_fit` use.
- `backend_variable(variable)`: inside a layer's call under a mixed
  dtype policy, a Keras variable's `value` and `handle` are cast to the
  compute dtype, and Keras offers no public way to the variable itself.
- `learning_rate_schedule(optimizer)`: Keras keeps an optimizer's
  schedule private (`learning_rate` gives its value at the current step);
  a task model's `fit` lays its `FitWarmupLinearDecay` out.
- `evaluation_ready(model)` and `evaluation_result(model, logs,
  return_dict)`: Keras offers no public way to run `test_step` outside
  `evaluate` and give what `evaluate` returns (small calls run it in their
  own compiled function, `keras_bert.models.small_calls`).
- `trace_predict_once(model, dataset)`: Keras traces `predict` once
  per batch shape until its shapes relax (three traces of the whole model
  for batches cut to their longest row).
- `global_random_state_restored()`: `keras.utils.set_random_seed` seeds
  the whole process and Keras offers no way to read the seeds back; this
  saves and restores them around a function that seeds (fine-tuning).

This package sits at the bottom floor (it imports only Keras and
TensorFlow), so that any layer of the package may use it.
"""

import contextlib
import random

import keras
import numpy as np
import tensorflow as tf

from keras_bert.keras_workarounds.distributed_fit import build_before_tracing
from keras_bert.keras_workarounds.distributed_fit import support_distributed_fit
from keras_bert.keras_workarounds.distributed_fit import (
    with_multi_worker_reduce,
)
from keras_bert.keras_workarounds.guard import TESTED_KERAS
from keras_bert.keras_workarounds.guard import keras_tf_trainer
from keras_bert.keras_workarounds.guard import require_keras_internals

__all__ = [
    "TESTED_KERAS",
    "backend_variable",
    "build_before_tracing",
    "evaluation_ready",
    "evaluation_result",
    "global_random_state_restored",
    "keep_string_inputs",
    "keras_tf_trainer",
    "learning_rate_schedule",
    "list_layer_as_one_operation",
    "require_keras_internals",
    "support_distributed_fit",
    "trace_predict_once",
    "with_multi_worker_reduce",
]


def keep_string_inputs(layer):
    """Has Keras' `__call__` pass `layer` its string inputs unconverted
    (as `tf.Tensor`s or Python lists, not NumPy arrays).

    Workaround: Keras converts a layer's positional inputs to arrays of
    its dtype and has no public switch for a layer that takes strings;
    two private flags of this layer turn that off.
    """
    names = ["_convert_input_args", "_allow_non_tensor_positional_args"]
    require_keras_internals(layer, names)
    layer._convert_input_args = False
    layer._allow_non_tensor_positional_args = True


def backend_variable(variable):
    """The backend variable (a `tf.Variable`) behind a Keras variable.

    Inside a layer's call under a mixed dtype policy, Keras autocasts its
    float variables: `value` and `handle` give the compute dtype's copy.
    This is the variable itself, in its own dtype
    (`keras_bert.layers.stream_layout` reads the block's float32 weights
    while the block runs).

    Example:
    ```python
    variable = keras.Variable(np.ones(3, "float32"))
    backend_variable(variable).dtype  # tf.float32
    ```
    """
    require_keras_internals(variable, ["_value"])
    return variable._value


def learning_rate_schedule(optimizer):
    """The `LearningRateSchedule` `optimizer` was built with (that of its
    inner optimizer for a `LossScaleOptimizer`), or `None` for a fixed
    rate or no optimizer.

    Example:
    ```python
    schedule = keras.optimizers.schedules.ExponentialDecay(1e-3, 10, 0.9)
    learning_rate_schedule(keras.optimizers.Adam(schedule)) is schedule
    ```
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        return None
    require_keras_internals(optimizer, ["_learning_rate"])
    schedule = optimizer._learning_rate
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        return schedule
    return None


def evaluation_ready(model):
    """Whether `model`'s compiled loss and metrics are built (as Keras'
    first `evaluate` or `fit` builds them), so that `test_step` creates no
    variables when traced."""
    require_keras_internals(model, ["_compile_metrics", "_compile_loss"])
    return all(
        part is None or part.built
        for part in (model._compile_metrics, model._compile_loss)
    )


def evaluation_result(model, logs, return_dict=False):
    """What `keras.Model.evaluate` returns for the logs of its last
    `test_step`: the metrics' results, as a dict or (by default) a list in
    the order of `model.metrics_names`."""
    from keras.src.utils.python_utils import pythonify_logs

    names = ["_get_metrics_result_or_logs", "_flatten_metrics_in_order"]
    require_keras_internals(model, names)
    logs = pythonify_logs(model._get_metrics_result_or_logs(logs))
    if return_dict:
        return logs
    return model._flatten_metrics_in_order(logs)


def trace_predict_once(model, dataset):
    """Traces `model.predict_function` once for every batch `dataset`
    yields, before `model.predict(dataset)` runs.

    Workaround: Keras' TensorFlow `predict` calls its `tf.function` on each
    batch (not on the dataset's iterator, as `fit` and `evaluate` do), so
    it traces the whole model for the first batch's shape, again for the
    second's (the width relaxed) and again for a smaller last batch (the
    batch size relaxed): three traces, and grappler's passes over each,
    for one `predict` over batches cut to their longest row. The dataset's
    element spec with every dimension unknown is traced here instead; the
    `tf.function` then dispatches every batch to that one trace (what it
    saves: the evaluation phase of `benchmarks/finetune_job.py
    --race=profile`).

    Does nothing where Keras would not call the function on the batch as
    the dataset yields it: another backend, eager runs, several replicas,
    several steps per execution, or elements that are not dense tensors.

    Example:
    ```python
    trace_predict_once(classifier, dataset)
    classifier.predict(dataset)  # no new trace
    ```
    """
    if (
        keras.backend.backend() != "tensorflow"
        or model.run_eagerly
        or not isinstance(dataset, tf.data.Dataset)
        or model.distribute_strategy.num_replicas_in_sync != 1
        or (getattr(model, "steps_per_execution", 1) or 1) != 1
    ):
        return
    specs = tf.nest.flatten(dataset.element_spec)
    if not all(
        isinstance(spec, tf.TensorSpec) and spec.shape.rank is not None
        for spec in specs
    ):
        return
    relaxed = tf.nest.map_structure(
        lambda spec: tf.TensorSpec([None] * spec.shape.rank, spec.dtype),
        dataset.element_spec,
    )
    model.make_predict_function()
    model.predict_function.get_concrete_function([relaxed])


@contextlib.contextmanager
def global_random_state_restored():
    """Puts the process's global random state back as it was, on exit.

    Workaround: `keras.utils.set_random_seed(seed)` seeds Python's
    `random`, NumPy's global generator, TensorFlow's global seed and Keras'
    global `SeedGenerator` for the whole process, with no public way to
    read them back. A library function that seeds itself for
    reproducibility (`run_fine_tuning(seed=...)`) would leave the caller's
    process seeded. This saves all four (the states, not just the seeds:
    `random.getstate()`, `np.random.get_state()`, TensorFlow's global seed
    and the position of its op-seed sequence, Keras' seed and generator)
    and restores them when the block or decorated function exits,
    normally or by an exception. What runs inside is unchanged.

    Example:
    ```python
    @global_random_state_restored()
    def train(seed):
        keras.utils.set_random_seed(seed)
        ...

    state = random.getstate()
    train(0)
    random.getstate() == state  # True
    ```
    """
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator
    from keras.src.utils import rng_utils
    from tensorflow.python.eager import context

    require_keras_internals(rng_utils, ["GLOBAL_RANDOM_SEED"])
    require_keras_internals(seed_generator, ["GLOBAL_SEED_GENERATOR"])
    require_keras_internals(
        global_state, ["get_global_attribute", "set_global_attribute"]
    )
    keras_names = (
        rng_utils.GLOBAL_RANDOM_SEED,
        seed_generator.GLOBAL_SEED_GENERATOR,
    )
    keras_state = {
        name: global_state.get_global_attribute(name) for name in keras_names
    }
    python_state = random.getstate()
    numpy_state = np.random.get_state()
    tf_context = context.context()
    require_keras_internals(tf_context, ["_seed"])
    tf_seed = tf_context._seed
    tf_rng = getattr(tf_context, "_rng", None)
    tf_rng_state = tf_rng.getstate() if tf_seed is not None else None
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        for name, value in keras_state.items():
            global_state.set_global_attribute(name, value)
        tf.random.set_seed(tf_seed)
        if tf_rng_state is not None:
            tf_context._rng.setstate(tf_rng_state)


def list_layer_as_one_operation(model, layer, blocks_of_layer=()):
    """Lists `layer` (a model inside the functional `model`) as one entry
    of `model`'s operations.

    `summary()` (and `plot_model`) list a functional model's private
    `_operations`, not its `layers`: for a head built on
    `BertBackbone.outputs_at` they would show every layer of the backbone
    and the index arithmetic around its last block. The operations `layer`
    contributes (its layers, the operations that feed them, and the slices
    of the outputs of `blocks_of_layer`) are listed as `layer`, where the
    first of them was. Only the listing changes: the graph runs from its
    nodes, and `layers` (which sets the weight layout) is not touched.
    """
    require_keras_internals(model, ("_operations", "_nodes_by_depth"))
    operations = model._operations
    inner_layers = {id(inner) for inner in layer.layers}
    if not any(id(op) in inner_layers for op in operations):
        return  # the head calls the backbone whole
    blocks = {id(block) for block in blocks_of_layer}
    nodes = [n for level in model._nodes_by_depth.values() for n in level]

    def producers(node):
        return [
            tensor._keras_history.operation
            for tensor in keras.tree.flatten(node.input_tensors)
        ]

    inside = set(inner_layers)
    pending = [n for n in nodes if id(n.operation) in inner_layers]
    while pending:  # operations that compute what the backbone reads
        for op in producers(pending.pop()):
            if not isinstance(op, keras.layers.Layer) and (
                id(op) not in inside
            ):
                inside.add(id(op))
                pending += [n for n in nodes if n.operation is op]
    for node in nodes:  # slices of the blocks' outputs
        if not isinstance(node.operation, keras.layers.Layer) and all(
            id(op) in blocks for op in producers(node)
        ):
            inside.add(id(node.operation))
    listed = []
    for op in operations:
        if id(op) not in inside:
            listed.append(op)
        elif not any(seen is layer for seen in listed):
            listed.append(layer)
    # Not through `setattr`, which would track the list as sublayers.
    object.__setattr__(model, "_operations", listed)
