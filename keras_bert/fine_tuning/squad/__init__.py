"""SQuAD v1.1 / v2.0 question answering: data, windows, answers, scores.

- `examples`: reading the official JSON into a dict of example lists.
- `features`: windows and labels built by TensorFlow ops on batches of
  examples, for `tf.data` and for SavedModels that split contexts.
- `postprocess`: answers from start/end logits, output files.
- `metrics`: the official v1.1 and v2.0 exact match and F1.
- `job`: `SquadFineTuning`, the job `recipes/squad.py` runs.

The raw-text function a `BertQuestionAnswerer` exports and runs in
`predict` (the same top answer in graph ops) is in
`keras_bert.decoding.answers`.
"""

from keras_bert.fine_tuning.squad.examples import read_squad_examples
from keras_bert.fine_tuning.squad.features import make_windows
from keras_bert.fine_tuning.squad.features import squad_dataset
from keras_bert.fine_tuning.squad.features import squad_features
from keras_bert.fine_tuning.squad.features import trainable_examples
from keras_bert.fine_tuning.squad.job import SquadFineTuning
from keras_bert.fine_tuning.squad.metrics import squad_v1_metrics
from keras_bert.fine_tuning.squad.metrics import squad_v2_metrics
from keras_bert.fine_tuning.squad.postprocess import compute_predictions
from keras_bert.fine_tuning.squad.postprocess import write_predictions

__all__ = [
    "SquadFineTuning",
    "compute_predictions",
    "make_windows",
    "read_squad_examples",
    "squad_dataset",
    "squad_features",
    "squad_v1_metrics",
    "squad_v2_metrics",
    "trainable_examples",
    "write_predictions",
]
