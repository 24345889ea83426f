"""Token classification (named entities): data, windows, scores, entities.

- `conll`: reading and writing CoNLL column files; tag schemes.
- `features`: words → WordPiece windows with labels on each word's first
  sub-token, as TensorFlow ops; each word's one prediction.
- `metrics`: entity-level precision, recall and F1 as `conlleval`.
- `entities`: `find_entities`, raw text → entities with a Keras model.
- `fine_tuning`: `NerFineTuning`, the task `recipes/ner.py` runs.
- `frozen_features_tagger`: `FrozenFeaturesTagger`, a BiLSTM on a frozen
  BERT's hidden states (the paper's feature-based NER, `ner.py
  --features`).

The raw-text endpoints a `BertTokenClassifier` exports (the same entities
in graph ops) are in `keras_bert.serving.token_classifier`.
"""

from keras_bert.tasks.ner.conll import convert_tags
from keras_bert.tasks.ner.conll import label_list
from keras_bert.tasks.ner.conll import read_conll
from keras_bert.tasks.ner.conll import write_conll_predictions
from keras_bert.tasks.ner.entities import find_entities
from keras_bert.tasks.ner.features import make_windows
from keras_bert.tasks.ner.features import ner_features
from keras_bert.tasks.ner.fine_tuning import NerFineTuning
from keras_bert.tasks.ner.frozen_features_tagger import FrozenFeaturesTagger
from keras_bert.tasks.ner.metrics import entity_scores
from keras_bert.tasks.ner.metrics import get_entities

__all__ = [
    "FrozenFeaturesTagger",
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
