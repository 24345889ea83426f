"""Running `BertMaskedLM` pre-training: checkpoints, resume, export."""

import os
import time

import keras
import tensorflow as tf
from absl import logging

from keras_bert.training.distribution import remove_write_directory
from keras_bert.training.distribution import skip_trained_steps
from keras_bert.training.distribution import support_distributed_fit
from keras_bert.training.distribution import write_directory
from keras_bert.training.fault_tolerance import PreemptionCheckpoint
from keras_bert.training.strategies import check_fit_support
from keras_bert.training.strategies import is_chief
from keras_bert.validation import check_positive_int

CHECKPOINT_DIR = "checkpoints"
TENSORBOARD_DIR = "tensorboard"


def pretrain(
    model,
    dataset,
    model_dir,
    num_train_steps,
    steps_per_checkpoint=1000,
    validation_data=None,
    validation_steps=None,
    callbacks=(),
    verbose="auto",
):
    """Trains `model` for `num_train_steps`, resuming from `model_dir`.

    Works the same under every `tf.distribute` strategy `fit` supports:
    the model's own (the one it was built under) is used. One Keras
    "epoch" is one checkpoint interval of `steps_per_checkpoint` steps.
    A `tf.train.Checkpoint` of the weights *and* the optimizer (its step
    counter, hence the learning-rate schedule, and its moments) is saved
    every interval and when any worker receives SIGTERM
    (`keras_bert.training.PreemptionCheckpoint`); the processes then exit
    with code 42. Calling `pretrain` again with the same `model_dir`
    restores the latest checkpoint, skips the batches already trained on
    and trains exactly the remaining steps: after a SIGTERM nothing is
    lost, after a crash or SIGKILL at most one interval. A finished run
    re-run does nothing. TensorBoard logs (losses, MLM and NSP accuracy,
    learning rate) go to `model_dir/tensorboard`. Only the chief of a
    multi-worker run writes into `model_dir`.

    Args:
        model: a compiled `keras_bert.BertMaskedLM` (built under the
            strategy's scope if one is used).
        dataset: `tf.data.Dataset` of global batches `(features, labels)`,
            repeating, in a fixed order for an exact resume (fixed seeds);
            set its auto-shard policy for multi-worker runs
            (`keras_bert.training.with_auto_shard_policy`).
        model_dir: str. Where checkpoints and logs go.
        num_train_steps: int. Total steps of the run, a multiple of
            `steps_per_checkpoint`.
        steps_per_checkpoint: int. Defaults to `1000`.
        validation_data, validation_steps: optional, passed to `fit` (run
            at every checkpoint).
        callbacks: extra Keras callbacks.
        verbose: `fit`'s verbosity. Defaults to `"auto"` (progress bar).

    Returns:
        A dict: `resumed_from_step`, `final_step`, `steps_this_run`,
        `seconds`, `steps_per_second` and `history` (per-interval metrics
        of this run).

    Example:
    ```python
    model = keras_bert.BertMaskedLM(backbone)
    pretrain(model, dataset, "runs/tiny", num_train_steps=100,
             steps_per_checkpoint=20)
    ```
    """
    check_positive_int("num_train_steps", num_train_steps)
    check_positive_int("steps_per_checkpoint", steps_per_checkpoint)
    if num_train_steps % steps_per_checkpoint:
        rounded = -(-num_train_steps // steps_per_checkpoint)
        raise ValueError(
            f"num_train_steps={num_train_steps} is not a multiple of "
            f"steps_per_checkpoint={steps_per_checkpoint}; checkpoints fall "
            "on interval ends. Use e.g. num_train_steps="
            f"{rounded * steps_per_checkpoint}."
        )
    strategy = model.distribute_strategy
    check_fit_support(strategy)
    support_distributed_fit(model)
    if is_chief(strategy):
        tf.io.gfile.makedirs(model_dir)
    checkpoint = PreemptionCheckpoint(
        os.path.join(model_dir, CHECKPOINT_DIR),
        steps_per_checkpoint,
        final_step=num_train_steps,
    )
    resumed_from_step = checkpoint.restore(model)
    remaining = num_train_steps - resumed_from_step
    if resumed_from_step:
        logging.info(
            "Resuming from the checkpoint at step %d in %s.",
            resumed_from_step,
            model_dir,
        )
    if remaining <= 0:
        return {
            "resumed_from_step": resumed_from_step,
            "final_step": resumed_from_step,
            "steps_this_run": 0,
            "seconds": 0.0,
            "steps_per_second": 0.0,
            "history": {},
        }
    tensorboard_dir = os.path.join(model_dir, TENSORBOARD_DIR)
    tensorboard_write_dir = write_directory(tensorboard_dir, strategy)
    all_callbacks = [
        checkpoint,
        keras.callbacks.TensorBoard(
            tensorboard_write_dir,
            update_freq=summary_frequency(steps_per_checkpoint),
        ),
        *callbacks,
    ]
    start = time.perf_counter()
    # After a SIGTERM the run stops between interval ends: the first
    # epoch then ends off the usual boundaries, and `checkpoint` stops
    # training at exactly `num_train_steps`.
    # Epochs are numbered on from the resumed step, so that TensorBoard's
    # per-interval curves of a resumed run continue the earlier ones.
    initial_epoch = resumed_from_step // steps_per_checkpoint
    try:
        history = model.fit(
            skip_trained_steps(dataset, resumed_from_step, strategy),
            initial_epoch=initial_epoch,
            epochs=initial_epoch + -(-remaining // steps_per_checkpoint),
            steps_per_epoch=steps_per_checkpoint,
            validation_data=validation_data,
            validation_steps=validation_steps,
            callbacks=all_callbacks,
            verbose=verbose,
        )
    finally:  # also on the preemption exit (SystemExit)
        remove_write_directory(tensorboard_write_dir, tensorboard_dir)
    seconds = time.perf_counter() - start
    final_step = int(model.optimizer.iterations.numpy())
    steps_this_run = final_step - resumed_from_step
    logging.info(
        "Trained steps %d to %d in %.1f s.",
        resumed_from_step,
        final_step,
        seconds,
    )
    return {
        "resumed_from_step": resumed_from_step,
        "final_step": final_step,
        "steps_this_run": steps_this_run,
        "seconds": seconds,
        "steps_per_second": steps_this_run / seconds if seconds else 0.0,
        "history": {
            k: [float(x) for x in v] for k, v in history.history.items()
        },
    }


def summary_frequency(steps_per_checkpoint, at_most=100):
    """Steps between TensorBoard's batch summaries: a divisor of the interval.

    Keras' condition for writing batch summaries (every `update_freq`
    steps) also gates the epoch summaries, which are written at the end of
    each interval: with 100 and intervals of 250, every other interval's
    curves went missing. The largest divisor of the interval up to
    `at_most` keeps every interval.
    """
    return max(
        d
        for d in range(1, min(at_most, steps_per_checkpoint) + 1)
        if steps_per_checkpoint % d == 0
    )
