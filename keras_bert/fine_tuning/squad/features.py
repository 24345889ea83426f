"""SQuAD windows and labels: `keras_bert.text.squad_features`, here under
the fine-tuning job's name (a question answerer's own `fit` reads the same
module on its lower floor)."""

from keras_bert.text.squad_features import INPUT_NAMES
from keras_bert.text.squad_features import LABEL_NAMES
from keras_bert.text.squad_features import TRAINING_NAMES
from keras_bert.text.squad_features import check_window_arguments
from keras_bert.text.squad_features import make_windows
from keras_bert.text.squad_features import squad_dataset
from keras_bert.text.squad_features import squad_features
from keras_bert.text.squad_features import trainable_examples

__all__ = [
    "INPUT_NAMES",
    "LABEL_NAMES",
    "TRAINING_NAMES",
    "check_window_arguments",
    "make_windows",
    "squad_dataset",
    "squad_features",
    "trainable_examples",
]
