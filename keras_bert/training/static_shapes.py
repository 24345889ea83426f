"""Training steps traced once per batch shape, so static-shape paths run."""

import keras
import tensorflow as tf
from absl import logging

from keras_bert.keras_workarounds import keras_tf_trainer

# More distinct batch shapes than this and the model goes back to Keras'
# own train function, traced once for all shapes: each shape costs a trace
# and XLA compilations, which only pay when few shapes repeat many times.
MAX_SHAPES = 12


def trace_per_shape(model, max_shapes=MAX_SHAPES):
    """Makes `model.fit` trace its training step once per batch shape.

    Keras traces a training step with `reduce_retracing=True`: after two
    batch shapes it traces once more with the sequence axis unknown, and
    every later batch runs that graph. There, `keras_bert.layers.fused_ops`
    (XLA compiles one kernel per shape) cannot apply, and the step runs the
    unfused element-wise ops. Data in a few shapes, each repeated for many
    steps (SQuAD's fixed-length windows and an epoch's smaller last batch,
    or batches padded up to a few lengths with `keras_bert.data.trim_batch`)
    then runs the fused kernels in every step. This model's train function
    (only this model's, and only the train function: evaluation and
    prediction are unfused in any case) does that, through Keras'
    documented override point `make_train_function`. The step itself is
    Keras' `train_step` under the model's distribution strategy, with
    Keras' own reduction of the replicas' logs: the same updates, only
    traced per shape.

    After `max_shapes` distinct shapes (data not bucketed), the model falls
    back to Keras' train function for the rest of the run, with a warning.
    With `steps_per_execution > 1` or `run_eagerly`, Keras' own function is
    used unchanged. Call it after `compile`.

    Args:
        model: a compiled `keras.Model`.
        max_shapes: int. Distinct batch shapes traced before falling back.

    Returns:
        `model`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    classifier.compile(optimizer="adam")
    trace_per_shape(classifier)
    ```
    """
    if keras.backend.backend() != "tensorflow":
        return model
    trainer = keras_tf_trainer()
    keras_make = model.make_train_function

    def make_train_function(force=False):
        if model.train_function is not None and not force:
            return model.train_function
        if model.steps_per_execution != 1 or model.run_eagerly:
            return keras_make(force=force)
        strategy = model.distribute_strategy

        def one_step(data):
            outputs = strategy.run(model.train_step, args=(data,))
            # Looked up at trace time: a multi-worker run swaps it in
            # (`support_distributed_fit`).
            return trainer.reduce_per_replica(
                outputs, strategy, reduction="auto"
            )

        step = tf.function(
            one_step, reduce_retracing=False, jit_compile=model.jit_compile
        )
        shapes = set()

        def function(iterator):
            data = next(iterator)
            shape = tuple(
                tuple(value.shape)
                for value in tf.nest.flatten(data, expand_composites=True)
            )
            shapes.add(shape)
            if len(shapes) > max_shapes:
                logging.warning(
                    "%d distinct batch shapes: tracing the training step "
                    "once for all shapes from now on (the fused kernels no "
                    "longer run). Pad batches to a few lengths (e.g. "
                    "keras_bert.data.trim_batch with multiple=32) or do not "
                    "use trace_per_shape for this data.",
                    len(shapes),
                )
                model.train_function = None
                keras_make(force=True)
                return model.train_function(_prepend(data, iterator))
            return step(data)

        model.train_function = function
        return function

    model.make_train_function = make_train_function
    return model


class _prepend:
    """An iterator yielding `first`, then the rest of `iterator`."""

    def __init__(self, first, iterator):
        self._first = [first]
        self._iterator = iterator

    def __iter__(self):
        return self

    def __next__(self):
        if self._first:
            return self._first.pop()
        return next(self._iterator)
