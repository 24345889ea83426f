"""Optimizers, schedules, metrics and training utilities."""

from keras_bert.training.distribution import file_shard_policy
from keras_bert.training.distribution import num_workers
from keras_bert.training.distribution import remove_write_directory
from keras_bert.training.distribution import skip_trained_steps
from keras_bert.training.distribution import support_distributed_fit
from keras_bert.training.distribution import with_auto_shard_policy
from keras_bert.training.distribution import write_directory
from keras_bert.training.epoch_evaluation import EpochEvaluation
from keras_bert.training.fault_tolerance import PreemptionCheckpoint
from keras_bert.training.gradient_accumulation import (
    check_gradient_accumulation_steps,
)
from keras_bert.training.losses import GlobalBatchCrossEntropy
from keras_bert.training.losses import pretraining_losses
from keras_bert.training.metrics import MaskedLMAccuracy
from keras_bert.training.multi_label_metrics import MultiLabelF1
from keras_bert.training.multi_label_metrics import SubsetAccuracy
from keras_bert.training.multi_label_metrics import multi_label_scores
from keras_bert.training.multi_label_metrics import tune_thresholds
from keras_bert.training.multiple_negatives_ranking_loss import (
    MultipleNegativesRankingLoss,
)
from keras_bert.training.optimizers import TRAINING_DEFAULTS
from keras_bert.training.optimizers import AdamW
from keras_bert.training.optimizers import TrainingDefaults
from keras_bert.training.optimizers import create_adamw
from keras_bert.training.optimizers import create_lamb
from keras_bert.training.optimizers import create_optimizer
from keras_bert.training.optimizers import training_defaults
from keras_bert.training.pretraining import pretrain
from keras_bert.training.progress_logger import ProgressLogger
from keras_bert.training.static_shapes import trace_per_shape
from keras_bert.training.strategies import check_fit_support
from keras_bert.training.strategies import create_strategy
from keras_bert.training.strategies import is_chief
from keras_bert.training.warmup_linear_decay import FitWarmupLinearDecay
from keras_bert.training.warmup_linear_decay import WarmupLinearDecay

__all__ = [
    "AdamW",
    "TRAINING_DEFAULTS",
    "TrainingDefaults",
    "EpochEvaluation",
    "FitWarmupLinearDecay",
    "GlobalBatchCrossEntropy",
    "MaskedLMAccuracy",
    "MultiLabelF1",
    "MultipleNegativesRankingLoss",
    "PreemptionCheckpoint",
    "SubsetAccuracy",
    "ProgressLogger",
    "WarmupLinearDecay",
    "check_fit_support",
    "check_gradient_accumulation_steps",
    "create_adamw",
    "create_lamb",
    "create_optimizer",
    "create_strategy",
    "file_shard_policy",
    "is_chief",
    "multi_label_scores",
    "num_workers",
    "pretrain",
    "pretraining_losses",
    "remove_write_directory",
    "skip_trained_steps",
    "support_distributed_fit",
    "trace_per_shape",
    "training_defaults",
    "tune_thresholds",
    "with_auto_shard_policy",
    "write_directory",
]
