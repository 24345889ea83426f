"""Gradient accumulation: one update from a batch run in K micro-batches.

A model compiled with `gradient_accumulation_steps=K` (every
`keras_bert` task model's `compile` takes it) trains on each batch of
`fit` as on one batch, but runs it as `K` micro-batches one after the
other: the forward and backward pass of a micro-batch ends before the next
one starts, so activations take the memory of a batch `K` times smaller.
The micro-batches' losses are summed, each weighted by its share of the
batch's examples, and the optimizer updates once with the gradient of
that sum. With dropout off, batches of `B * K` with `K` steps give the
weights of batches of `B * K` without, to float rounding
(`tests/training/test_gradient_accumulation.py`; with dropout on, each
micro-batch draws its own masks, so the runs differ as two seeds do), for
both kinds of loss BERT's heads use:

- a mean over the batch's examples (the classifier's and the span head's,
  any Keras loss, regularization losses): the share-weighted sum of the
  micro-batches' means is the whole batch's mean;
- a mean over the labels that count, whose number varies per example
  (`GlobalBatchCrossEntropy`: the token classifier's, leaving out
  `IGNORED_LABEL`, and the masked LM's, leaving out unused slots): the
  step tells the loss which batch its micro-batch belongs to
  (`keras_bert.training.losses.micro_batch_of`), and the loss returns its
  micro-batch's sum over the *whole* batch's count of labels (on all
  replicas), divided by the micro-batch's share, so that the weighted sum
  is again the whole batch's mean (as Hugging Face's Trainer since 4.46
  divides by the accumulated batch's number of labels).

Models that mix the two (`loss_weights` too) get each term right; `fit`'s
loss is the whole batch's. A Keras loss that averages over labels itself
(`SparseCategoricalCrossentropy(ignore_class=...)`,
`reduction="mean_with_sample_weight"`) is still weighted by examples, the
mean of its micro-batches' means (as Keras averages replicas' means):
use `GlobalBatchCrossEntropy` for such a loss. A recipe's `--batch_size=B
--gradient_accumulation_steps=K` therefore trains as `--batch_size=B*K`,
with micro-batches of `B`.

Why not Keras' own `Optimizer(gradient_accumulation_steps=K)`, which
accumulates across `K` calls of `fit`'s step: it sums the same gradients
on one device, but under `MirroredStrategy` its update sits in a `cond`
that contains the all-reduce and fails (Keras 3.15: "`merge_call` called
while defining a new graph"); its learning-rate schedules count
micro-batches, not updates; and a checkpoint between two updates has to hold the
accumulators. Here one `fit` step is one update: `optimizer.iterations`,
schedules, `steps_per_epoch`, checkpoints and resumption all count
updates, a resume point is always an update boundary, and nothing but the
usual optimizer state is saved.

What follows from accumulating inside the step:

- the optimizer clips the accumulated gradient once (global norm of the
  whole batch's gradient, not of each micro-batch), applies weight decay
  once and takes one Adam step, as for the whole batch;
- under mixed precision each micro-batch's loss is scaled by the loss-scale
  optimizer, and an overflow in any of them skips the whole update, as it
  would skip the whole batch's;
- under a `tf.distribute` strategy each replica splits its share of the
  global batch into `K` micro-batches; the gradients cross replicas once
  per update;
- a batch of fewer than `K` examples runs one micro-batch per example;
  micro-batches differ in size by at most one example;
- a variable the loss gives no gradient (a head's unused pooler) is left
  alone, as Keras' own step leaves it;
- the graph holds `K` copies of the forward and backward pass (trace time
  and graph size grow with `K`); XLA (`jit_compile=True`) may reorder the
  micro-batches and lose the memory saving.
"""

import keras
import tensorflow as tf
from keras import tree

from keras_bert.keras_workarounds import require_keras_internals
from keras_bert.training.losses import micro_batch_of


def check_gradient_accumulation_steps(
    value, name="gradient_accumulation_steps", error=ValueError
):
    """Returns `value` (an int >= 1), or raises naming `name` and the fix.

    Args:
        value: the number of micro-batches per update received.
        name: str. The argument's name as the caller spells it (a recipe
            passes `--gradient_accumulation_steps`).
        error: the exception class to raise. Defaults to `ValueError`; a
            recipe passes `absl.app.UsageError`.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(
            f"Received an invalid value for argument `{name}`, expected a "
            "positive integer: the micro-batches each batch is run in (1 "
            f"runs it whole). Received: {name}={value!r}"
        )
    return value


def accumulating_train_step(model, data, steps):
    """`model.train_step` for one batch run in `steps` micro-batches.

    Computes each micro-batch's loss and gradients in turn, sums the
    gradients weighted by each micro-batch's share of the examples (a
    `GlobalBatchCrossEntropy` scales its part to match), and applies the
    sum with `model.optimizer` once. Metrics and the loss tracker see
    every micro-batch, weighted by its examples.

    Args:
        model: a compiled `keras.Model` (TensorFlow backend).
        data: the batch `fit` passes to `train_step`.
        steps: int. Micro-batches per batch.

    Returns:
        The metrics' results, as `train_step` returns them.

    Example:
    ```python
    class MyModel(keras.Model):
        def train_step(self, data):
            return accumulating_train_step(self, data, steps=4)
    ```
    """
    require_keras_internals(
        model, ["_compute_loss", "_loss_tracker", "_call_has_training_arg"]
    )
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    first = next(t for t in tree.flatten(x) if t is not None)
    batch = tf.shape(first)[0]
    # A batch of fewer examples than steps runs one micro-batch per example
    # (the steps past them are empty and count for nothing).
    count = tf.minimum(batch, steps)
    variables = model.trainable_weights
    summed = None  # per variable; `None` where the loss has no gradient
    logs = None
    for step in range(steps):
        begin = step * batch // count
        end = tf.where(step < count, (step + 1) * batch // count, begin)
        size = end - begin
        # The next micro-batch starts once this one's gradients exist, so
        # only one micro-batch's activations are alive at a time.
        previous = [g for g in summed or () if g is not None]
        with tf.control_dependencies(previous):
            micro_x, micro_y, micro_weight = tree.map_structure(
                lambda t: None if t is None else t[begin:end],
                (x, y, sample_weight),
            )
        with tf.GradientTape() as tape:
            if model._call_has_training_arg:
                y_pred = model(micro_x, training=True)
            else:
                y_pred = model(micro_x)
            # A mean over counted labels needs the whole batch's count.
            with micro_batch_of(y, micro_y):
                loss = model._compute_loss(
                    x=micro_x,
                    y=micro_y,
                    y_pred=y_pred,
                    sample_weight=micro_weight,
                    training=True,
                )
            # An empty micro-batch's mean is NaN; it counts for nothing.
            model._loss_tracker.update_state(
                tf.where(size > 0, _unscaled_for_distribution(loss), 0.0),
                sample_weight=size,
            )
            if model.optimizer is not None:
                loss = model.optimizer.scale_loss(loss)
        gradients = tape.gradient(loss, variables)
        share = tf.cast(size, "float32") / tf.cast(batch, "float32")
        weighted = [
            None if gradient is None else _weighted(gradient, share, size)
            for gradient in gradients
        ]
        summed = (
            weighted
            if summed is None
            else [
                None if total is None else total + part
                for total, part in zip(summed, weighted)
            ]
        )
        logs = model.compute_metrics(
            micro_x, micro_y, y_pred, sample_weight=micro_weight
        )
    model.optimizer.apply_gradients(zip(summed, variables))
    return logs


def _weighted(gradient, share, size):
    """A micro-batch's gradient times its share of the batch (dense: an
    embedding's `IndexedSlices` are summed into rows, as the optimizer
    would), 0 for an empty micro-batch (whose gradient is NaN)."""
    gradient = tf.convert_to_tensor(gradient)
    return tf.where(
        size > 0,
        gradient * tf.cast(share, gradient.dtype),
        tf.zeros_like(gradient),
    )


def _unscaled_for_distribution(loss):
    """The loss as the tracker records it: Keras divides it by the number
    of replicas for the gradients (as its own `train_step` undoes)."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return loss * tf.cast(replicas, loss.dtype) if replicas > 1 else loss
