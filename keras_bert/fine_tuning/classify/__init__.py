"""Classification on a user's own data: single-label or multi-label.

- `examples`: reading JSONL or TSV files of texts and labels
  (`read_classification_examples`).
- `job`: `ClassificationFineTuning`, a train file and an eval file for
  `keras_bert.fine_tuning.run_fine_tuning` (what `recipes/classify.py`
  runs).
"""

from keras_bert.fine_tuning.classify.examples import ClassificationExamples
from keras_bert.fine_tuning.classify.examples import (
    read_classification_examples,
)
from keras_bert.fine_tuning.classify.job import ClassificationFineTuning

__all__ = [
    "ClassificationExamples",
    "ClassificationFineTuning",
    "read_classification_examples",
]
