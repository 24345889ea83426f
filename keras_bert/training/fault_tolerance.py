"""Checkpoints that survive preemption, for `fit` under any strategy."""

import signal
import sys

import keras
import tensorflow as tf
from absl import logging

from keras_bert.training.distribution import remove_write_directory
from keras_bert.training.distribution import write_directory
from keras_bert.training.strategies import is_chief
from keras_bert.validation import check_positive_int

# The exit code `PreemptionCheckpointHandler` uses outside Google Cloud:
# "checkpoint saved after a termination signal; restart me".
RESTART_EXIT_CODE = 42


class PreemptionCheckpoint(keras.callbacks.Callback):
    """Saves model and optimizer every N steps and when terminated.

    A `tf.train.Checkpoint` of the model and its optimizer (the weights,
    the optimizer's moments and its step counter, hence the learning-rate
    schedule) is written every `steps_per_checkpoint` optimizer steps and
    at the end of training. `restore()` loads the latest one, so a
    restarted run continues at exactly the step it stopped at.

    During `fit`, a `tf.distribute.experimental.PreemptionCheckpointHandler`
    watches for SIGTERM: when any worker of a run receives it, all workers
    agree on the next step, finish it, save, and the processes exit with
    `RESTART_EXIT_CODE` (42) so a cluster manager restarts them. A SIGKILL
    gives no warning: the run loses the steps since the last periodic
    checkpoint. On Google Cloud CPU and TPU VMs the handler does nothing
    (TensorFlow's choice); only periodic checkpoints protect those runs.

    Only the chief writes into `directory`. Other workers save to a
    throw-away directory (saving can involve every worker) and read from
    `directory`, which must therefore be on storage all workers share
    (e.g. GCS or NFS) in a multi-machine run.

    Args:
        directory: str. Where checkpoints go.
        steps_per_checkpoint: int. Optimizer steps between checkpoints.
        final_step: int or `None`. Stop `fit` once the optimizer has made
            this many steps (counting those before a restart).
        max_to_keep: int. Checkpoints kept. Defaults to `3`.

    Example:
    ```python
    checkpoint = PreemptionCheckpoint("runs/tiny/checkpoints", 100, 1000)
    start = checkpoint.restore(model)
    model.fit(dataset.skip(start), steps_per_epoch=100, epochs=10,
              callbacks=[checkpoint])
    ```
    """

    def __init__(
        self, directory, steps_per_checkpoint, final_step=None, max_to_keep=3
    ):
        super().__init__()
        check_positive_int("steps_per_checkpoint", steps_per_checkpoint)
        self.directory = directory
        self.steps_per_checkpoint = steps_per_checkpoint
        self.final_step = final_step
        self.max_to_keep = max_to_keep
        self._checkpoint = None
        self._handler = None
        self._previous_sigterm_handler = None

    def _track(self, model):
        if self._checkpoint is not None:
            return
        if model.optimizer is None:
            raise ValueError(
                "PreemptionCheckpoint needs a compiled model (it saves the "
                "optimizer's state too). Call `model.compile(...)` first."
            )
        strategy = model.distribute_strategy
        with strategy.scope():
            # Create the optimizer's slots now: a restore before they exist
            # would be deferred and partly lost.
            if not model.optimizer.built:
                model.optimizer.build(model.trainable_variables)
        self._strategy = strategy
        self._checkpoint = tf.train.Checkpoint(
            model=model, optimizer=model.optimizer
        )
        self._manager = tf.train.CheckpointManager(
            self._checkpoint, self.directory, max_to_keep=self.max_to_keep
        )
        if is_chief(strategy):
            self._write_manager = self._manager
        else:
            self._write_manager = tf.train.CheckpointManager(
                self._checkpoint,
                write_directory(self.directory, strategy),
                max_to_keep=1,
            )

    def restore(self, model):
        """Loads the latest checkpoint into `model`, if there is one.

        Args:
            model: the compiled model `fit` will train.

        Returns:
            int, the optimizer step restored (0 without a checkpoint).
        """
        self._track(model)
        path = self._manager.restore_or_initialize()
        step = int(model.optimizer.iterations.numpy())
        if path:
            logging.info("Restored %s (step %d).", path, step)
        return step

    @property
    def latest_checkpoint(self):
        """Path of the newest checkpoint in `directory`, or `None`."""
        return tf.train.latest_checkpoint(self.directory)

    def save(self):
        """Saves now, under the optimizer's step number; returns the path."""
        step = int(self.model.optimizer.iterations.numpy())
        path = self._write_manager.save(checkpoint_number=step)
        if self._write_manager is self._manager:
            logging.info("Saved checkpoint %s.", path)
            return path
        return None

    def set_model(self, model):
        super().set_model(model)
        self._track(model)

    def on_train_begin(self, logs=None):
        self._previous_sigterm_handler = signal.getsignal(signal.SIGTERM)
        self._handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            getattr(self._strategy, "cluster_resolver", None),
            self._manager,
            termination_config=tf.distribute.experimental.TerminationConfig(
                exit_fn=self._exit_for_restart,
                save_fn=lambda *args, **kwargs: self.save(),
            ),
        )

    def _exit_for_restart(self):
        self._close()
        logging.info(
            "Checkpoint saved after a termination signal; exiting with "
            "code %d to be restarted.",
            RESTART_EXIT_CODE,
        )
        sys.exit(RESTART_EXIT_CODE)

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.steps_per_checkpoint == 0:
            self.save()
        # Saves and exits (on every worker) after a SIGTERM to any worker.
        self._handler.save_checkpoint_if_preempted()
        if self.final_step is not None and step >= self.final_step:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.steps_per_checkpoint:
            self.save()
        self._close()

    def _close(self):
        if self._previous_sigterm_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm_handler)
            self._previous_sigterm_handler = None
        if self._write_manager is not self._manager:
            remove_write_directory(
                self._write_manager.directory, self.directory
            )
