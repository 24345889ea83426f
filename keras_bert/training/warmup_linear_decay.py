"""BERT's learning-rate schedule: linear warmup, then linear decay to 0."""

import keras
from keras import ops


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
        step = ops.cast(step, "float32")
        warmup = step / max(self.warmup_steps, 1)
        decay = (self.total_steps - step) / max(
            self.total_steps - self.warmup_steps, 1
        )
        fraction = ops.where(step < self.warmup_steps, warmup, decay)
        return self.learning_rate * ops.clip(fraction, 0.0, 1.0)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
        }
