"""Logs training progress every few steps, for long epochs."""

import time

import keras
from absl import logging

from keras_bert.validation import check_positive_int


class ProgressLogger(keras.callbacks.Callback):
    """Logs the step, the running loss and the speed every `every_steps`.

    `fit(verbose=2)` prints one line per epoch, at its end: a fine-tuning
    epoch of BERT-base on a CPU is hours without a sign of life, and a
    progress bar (`verbose=1`) floods log files. This logs one line (with
    `absl.logging`) every `every_steps` training steps: the epoch, the
    step in it, the mean loss of the epoch so far as Keras reports it, and
    the steps per second since the previous line.

    Args:
        steps_per_epoch: int. Steps in an epoch (for "step 100/439").
        every_steps: int. Steps between lines. Defaults to `100`.

    Example:
    ```python
    model.fit(dataset, epochs=3, verbose=2,
              callbacks=[keras_bert.training.ProgressLogger(439, 100)])
    # I... epoch 1 step 100/439: loss 0.8123, 2.41 steps/s
    ```
    """

    def __init__(self, steps_per_epoch, every_steps=100):
        super().__init__()
        check_positive_int("steps_per_epoch", steps_per_epoch)
        check_positive_int("every_steps", every_steps)
        self.steps_per_epoch = steps_per_epoch
        self.every_steps = every_steps
        self.lines = []  # what was logged, for tests and callers

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._since = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        step = batch + 1
        if step % self.every_steps:
            return
        now = time.perf_counter()
        speed = self.every_steps / max(now - self._since, 1e-9)
        self._since = now
        loss = (logs or {}).get("loss")
        loss = "?" if loss is None else f"{float(loss):.4f}"
        line = (
            f"epoch {self._epoch + 1} step {step}/{self.steps_per_epoch}: "
            f"loss {loss}, {speed:.2f} steps/s"
        )
        self.lines.append(line)
        logging.info("%s", line)
