"""keras-bert: BERT on Keras 3 and TensorFlow."""

import os
import sys

_FIX = (
    "Set the environment variable KERAS_BACKEND=tensorflow before Python "
    'starts (or "backend": "tensorflow" in ~/.keras/keras.json) and import '
    "keras_bert again."
)


def _require_tensorflow_backend():
    """keras_bert runs on TensorFlow only: refuse anything else clearly."""
    if "keras" in sys.modules:
        backend = sys.modules["keras"].backend.backend()
    else:
        # Keras reads its backend once, at import. Choose TensorFlow unless
        # the user explicitly asked for another one.
        backend = os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    if backend != "tensorflow":
        raise ImportError(
            "keras_bert needs the TensorFlow Keras backend (it exports "
            "SavedModels and uses tf.data, tf.distribute and "
            f"tensorflow-text), but Keras is set to the {backend!r} backend. "
            + _FIX
        )


_require_tensorflow_backend()

from keras_bert import checkpoints  # noqa: E402
from keras_bert import data  # noqa: E402
from keras_bert import decoding  # noqa: E402
from keras_bert import deprecations  # noqa: E402
from keras_bert import distillation  # noqa: E402
from keras_bert import files  # noqa: E402
from keras_bert import fine_tuning  # noqa: E402
from keras_bert import layers  # noqa: E402
from keras_bert import models  # noqa: E402
from keras_bert import serving  # noqa: E402
from keras_bert import text  # noqa: E402
from keras_bert import training  # noqa: E402
from keras_bert.layers.embedding_similarity import similarity  # noqa: E402
from keras_bert.layers.embedding_similarity import top_k_search  # noqa: E402
from keras_bert.models import BertBackbone  # noqa: E402
from keras_bert.models import BertClassifier  # noqa: E402
from keras_bert.models import BertMaskedLM  # noqa: E402
from keras_bert.models import BertMultipleChoice  # noqa: E402
from keras_bert.models import BertQuestionAnswerer  # noqa: E402
from keras_bert.models import BertTextEmbedder  # noqa: E402
from keras_bert.models import BertTokenClassifier  # noqa: E402
from keras_bert.text import BertPreprocessor  # noqa: E402
from keras_bert.text import BertTokenizer  # noqa: E402
from keras_bert.version import __version__  # noqa: E402

__all__ = [
    "BertBackbone",
    "BertClassifier",
    "BertMaskedLM",
    "BertMultipleChoice",
    "BertQuestionAnswerer",
    "BertTextEmbedder",
    "BertTokenClassifier",
    "BertPreprocessor",
    "BertTokenizer",
    "__version__",
    "checkpoints",
    "data",
    "decoding",
    "distillation",
    "files",
    "fine_tuning",
    "layers",
    "models",
    "serving",
    "similarity",
    "text",
    "top_k_search",
    "training",
]

# The deprecated names, `keras_bert.tasks` among them.
deprecations.install()
