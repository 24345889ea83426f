import gc
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(autouse=True, scope="module")
def _release_keras_state():
    """Frees each test module's models and graphs before the next module.

    The whole suite runs in one process; without this, Keras' global state
    keeps every module's models alive and the process grows by gigabytes.
    """
    yield
    import keras

    keras.backend.clear_session()
    gc.collect()
