"""Token classification (named entities): data, windows, scores, entities.

- `conll`: reading and writing CoNLL column files; tag schemes.
- `features`: words → WordPiece windows with labels on each word's first
  sub-token, as TensorFlow ops; each word's one prediction.
- `metrics`: entity-level precision, recall and F1 as `conlleval`.
- `entities`: `find_entities`, raw text → entities with a Keras model.
- `job`: `NerFineTuning`, the job `recipes/ner.py` runs (its
  `--features` mode trains `keras_bert.models.FrozenFeaturesTagger`).
- `predictions`: a file of raw text or CoNLL words → one JSON line of
  words, tags and entities per sentence (`recipes/ner.py --predict_file`).

The raw-text function a `BertTokenClassifier` exports and runs in
`predict` (the same entities in graph ops) is in
`keras_bert.decoding.entities`.
"""

from keras_bert.fine_tuning.ner.conll import convert_tags
from keras_bert.fine_tuning.ner.conll import label_list
from keras_bert.fine_tuning.ner.conll import read_conll
from keras_bert.fine_tuning.ner.conll import write_conll_predictions
from keras_bert.fine_tuning.ner.entities import find_entities
from keras_bert.fine_tuning.ner.job import NerFineTuning
from keras_bert.training.ner_features import make_windows
from keras_bert.training.ner_features import ner_features
from keras_bert.training.ner_metrics import entity_scores
from keras_bert.training.ner_metrics import get_entities

__all__ = [
    "NerFineTuning",
    "convert_tags",
    "entity_scores",
    "find_entities",
    "get_entities",
    "label_list",
    "make_windows",
    "ner_features",
    "read_conll",
    "write_conll_predictions",
]
