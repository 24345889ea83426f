"""Optimizers, schedules, metrics and training utilities."""

from keras_bert.training.metrics import MaskedLMAccuracy
from keras_bert.training.optimizers import create_adamw
from keras_bert.training.optimizers import create_lamb
from keras_bert.training.optimizers import create_optimizer
from keras_bert.training.pretraining import pretrain
from keras_bert.training.pretraining import save_pretrained
from keras_bert.training.strategies import create_strategy
from keras_bert.training.warmup_linear_decay import WarmupLinearDecay

__all__ = [
    "MaskedLMAccuracy",
    "WarmupLinearDecay",
    "create_adamw",
    "create_lamb",
    "create_optimizer",
    "create_strategy",
    "pretrain",
    "save_pretrained",
]
