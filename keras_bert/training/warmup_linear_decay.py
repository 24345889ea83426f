"""BERT's learning-rate schedule: linear warmup, then linear decay to 0."""

import keras
from absl import logging
from keras import ops


def _warmup_linear_decay(learning_rate, step, warmup_steps, total_steps):
    """`learning_rate` times the warmup/decay fraction at `step` (tensors or
    numbers; the fraction rises to 1 over `warmup_steps`, then falls to 0
    at `total_steps`)."""
    step = ops.cast(step, "float32")
    warmup_steps = ops.cast(warmup_steps, "float32")
    total_steps = ops.cast(total_steps, "float32")
    warmup = step / ops.maximum(warmup_steps, 1.0)
    decay = (total_steps - step) / ops.maximum(total_steps - warmup_steps, 1.0)
    fraction = ops.where(step < warmup_steps, warmup, decay)
    return learning_rate * ops.clip(fraction, 0.0, 1.0)


@keras.saving.register_keras_serializable(package="keras_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Rises linearly from 0 to `learning_rate`, then falls linearly to 0.

    The schedule of BERT's fine-tuning and pre-training: over the first
    `warmup_steps` the rate grows to its peak, and it reaches 0 at
    `total_steps` (and stays there).

    Args:
        learning_rate: float. The peak rate.
        total_steps: int. Steps of the whole run.
        warmup_steps: int. Steps of the warmup. Defaults to `0`.

    Example:
    ```python
    schedule = WarmupLinearDecay(2e-5, total_steps=1000, warmup_steps=100)
    float(schedule(50))  # 1e-05
    optimizer = keras_bert.training.create_adamw(schedule)
    ```
    """

    def __init__(self, learning_rate, total_steps, warmup_steps=0):
        if total_steps <= 0 or not 0 <= warmup_steps <= total_steps:
            raise ValueError(
                "Expected 0 <= warmup_steps <= total_steps and total_steps "
                f"> 0. Received: warmup_steps={warmup_steps}, "
                f"total_steps={total_steps}"
            )
        self.learning_rate = learning_rate
        self.total_steps = total_steps
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        return _warmup_linear_decay(
            self.learning_rate, step, self.warmup_steps, self.total_steps
        )

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
        }


@keras.saving.register_keras_serializable(package="keras_bert")
class FitWarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`WarmupLinearDecay` laid over the updates of each `fit`.

    What a task model's `compile(optimizer="auto")` trains with: the
    number of updates is not known when the model is compiled, so each
    `fit` of a `keras_bert.models.Task` lays the schedule out afresh as
    its first epoch begins, over the updates that `fit` runs (its steps
    per epoch times its epochs, counted by Keras; one step is one update,
    with gradient accumulation too): the rate rises from 0 to its peak
    over the first `warmup_fraction` of them and falls to 0 at the last.
    A second `fit` warms up and decays again over its own updates. The
    layout lives in variables, so a new one needs no retrace. Before any
    `fit` (or for a `fit` whose number of steps Keras cannot know, such as
    a dataset of unknown size) the rate is the peak.

    Args:
        learning_rate: float. The peak rate.
        warmup_fraction: float in [0, 1]. Share of each `fit`'s updates
            spent warming up. Defaults to `0.1`.
        lora_learning_rate: float or `None`. The peak rate for a `fit` of
            a model whose backbone has LoRA on (`BertBackbone.enable_lora`);
            `None`: `learning_rate`.

    Example:
    ```python
    schedule = keras_bert.training.FitWarmupLinearDecay(2e-5)
    schedule.lay_out(first_step=0, total_steps=100)
    float(schedule(5)), float(schedule(10)), float(schedule(100))
    # (1e-05, 2e-05, 0.0)
    optimizer = keras_bert.training.create_adamw(schedule)
    ```
    """

    def __init__(
        self, learning_rate, warmup_fraction=0.1, lora_learning_rate=None
    ):
        if not 0 <= warmup_fraction <= 1:
            raise ValueError(
                "Received an invalid value for argument `warmup_fraction`, "
                "expected a share of the updates in [0, 1]. Received: "
                f"warmup_fraction={warmup_fraction!r}"
            )
        self.learning_rate = learning_rate
        self.warmup_fraction = warmup_fraction
        self.lora_learning_rate = lora_learning_rate
        # [peak, first step, warmup steps, total steps]; total 0: no fit
        # has laid the schedule out yet, the rate is the peak.
        self.layout = keras.Variable(
            [float(learning_rate), 0.0, 0.0, 0.0],
            dtype="float32",
            trainable=False,
            name="fit_schedule_layout",
        )

    def lay_out(self, first_step, total_steps, lora=False):
        """Lays the schedule over `total_steps` updates from `first_step`
        (the optimizer's `iterations` when the `fit` starts); `lora`: the
        model trains LoRA weights (the peak is `lora_learning_rate`).
        `total_steps=None` (unknown): the rate stays at the peak."""
        peak = self.learning_rate
        if lora and self.lora_learning_rate is not None:
            peak = self.lora_learning_rate
        total = total_steps or 0
        self.layout.assign(
            [
                float(peak),
                float(first_step),
                float(int(self.warmup_fraction * total)),
                float(total),
            ]
        )

    def __call__(self, step):
        peak, first_step, warmup_steps, total_steps = ops.unstack(
            ops.convert_to_tensor(self.layout)
        )
        step = ops.cast(step, "float32") - first_step
        scheduled = _warmup_linear_decay(peak, step, warmup_steps, total_steps)
        return ops.where(total_steps > 0, scheduled, peak)

    def callback(self):
        """A `keras.callbacks.Callback` that lays this schedule over the
        updates of the `fit` it is passed to (`keras_bert.models.Task.fit`
        adds it)."""
        return _LayOutOverFit(self)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "warmup_fraction": self.warmup_fraction,
            "lora_learning_rate": self.lora_learning_rate,
        }


class _LayOutOverFit(keras.callbacks.Callback):
    """Lays a `FitWarmupLinearDecay` over the updates of one `fit`, as its
    first epoch begins (when Keras knows the steps and the first epoch)."""

    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule
        self.laid_out = False

    def on_epoch_begin(self, epoch, logs=None):
        if self.laid_out:
            return
        self.laid_out = True
        steps = self.params.get("steps")
        total = steps * (self.params["epochs"] - epoch) if steps else None
        if total is None:
            logging.warning(
                "The learning rate stays at its peak in this fit: Keras "
                "does not know its number of steps. Pass steps_per_epoch "
                "for BERT's warmup and linear decay."
            )
        backbone = getattr(self.model, "backbone", None)
        self.schedule.lay_out(
            int(self.model.optimizer.iterations),
            total,
            lora=getattr(backbone, "lora_rank", None) is not None,
        )
