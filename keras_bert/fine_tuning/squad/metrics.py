"""SQuAD v1.1 and v2.0's official scores: `keras_bert.training.
squad_metrics`, here under the fine-tuning job's name (a question
answerer's own `evaluate` reads the same module on its lower floor)."""

from keras_bert.training.squad_metrics import exact_match
from keras_bert.training.squad_metrics import normalize_answer
from keras_bert.training.squad_metrics import squad_v1_metrics
from keras_bert.training.squad_metrics import squad_v2_metrics
from keras_bert.training.squad_metrics import token_f1

__all__ = [
    "exact_match",
    "normalize_answer",
    "squad_v1_metrics",
    "squad_v2_metrics",
    "token_f1",
]
