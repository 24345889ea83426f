"""Optimizers, schedules, metrics and training utilities."""

from keras_bert.training.metrics import MaskedLMAccuracy
from keras_bert.training.optimizers import create_adamw

__all__ = ["MaskedLMAccuracy", "create_adamw"]
