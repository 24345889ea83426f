"""keras-bert: BERT on Keras 3 and TensorFlow."""

import os

# Keras reads its backend once, at import: choose TensorFlow unless the user
# chose something else, then refuse anything but TensorFlow.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        "keras_bert needs the TensorFlow Keras backend (it exports SavedModels "
        "and uses tf.data, tf.distribute and tensorflow-text), but Keras is "
        f"running on the {keras.backend.backend()!r} backend. Set the "
        "environment variable KERAS_BACKEND=tensorflow before Python starts "
        '(or set "backend": "tensorflow" in ~/.keras/keras.json) and import '
        "keras_bert again."
    )

from keras_bert import layers  # noqa: E402
from keras_bert import training  # noqa: E402
from keras_bert.models import BertBackbone  # noqa: E402
from keras_bert.models import BertClassifier  # noqa: E402
from keras_bert.models import BertMaskedLM  # noqa: E402
from keras_bert.version import __version__  # noqa: E402

__all__ = [
    "BertBackbone",
    "BertClassifier",
    "BertMaskedLM",
    "__version__",
    "layers",
    "training",
]
