"""SQuAD answers from start/end logits, and the output files:
`keras_bert.decoding.span_predictions`, here under the fine-tuning job's
name (a question answerer's own `evaluate` reads the same module on its
lower floor)."""

from keras_bert.decoding.span_predictions import NBEST_FILE
from keras_bert.decoding.span_predictions import NULL_ODDS_FILE
from keras_bert.decoding.span_predictions import PREDICTIONS_FILE
from keras_bert.decoding.span_predictions import compute_predictions
from keras_bert.decoding.span_predictions import write_predictions

__all__ = [
    "NBEST_FILE",
    "NULL_ODDS_FILE",
    "PREDICTIONS_FILE",
    "compute_predictions",
    "write_predictions",
]
