"""SentencePooling: cls, mean and max over real tokens, optionally unit.

Checked against numbers worked out by hand; a row with no real token;
float32 out of bfloat16 in; config and `.keras` round trips; bad
arguments named.
"""

import keras
import numpy as np
import pytest

from keras_bert.layers import SentencePooling
from tests.helpers import assert_config_complete
from tests.helpers import run_serialization_test

TOKENS = np.array(
    [
        [[1.0, 2.0], [3.0, -4.0], [9.0, 9.0]],  # third token is padding
        [[0.0, 3.0], [4.0, 0.0], [-2.0, 1.0]],
    ],
    "float32",
)
MASK = np.array([[1, 1, 0], [1, 1, 1]])


@pytest.mark.parametrize(
    "pooling, expected",
    [
        ("cls", [[1.0, 2.0], [0.0, 3.0]]),
        ("mean", [[2.0, -1.0], [2 / 3, 4 / 3]]),
        ("max", [[3.0, 2.0], [4.0, 3.0]]),
    ],
)
def test_hand_computed(pooling, expected):
    pooled = np.asarray(SentencePooling(pooling)(TOKENS, MASK))
    np.testing.assert_allclose(pooled, expected, rtol=1e-6)
    unit = np.asarray(SentencePooling(pooling, normalize=True)(TOKENS, MASK))
    expected = np.array(expected)
    np.testing.assert_allclose(
        unit, expected / np.linalg.norm(expected, axis=1, keepdims=True), 1e-6
    )


def test_a_row_without_real_tokens_gives_zeros_for_mean():
    mask = np.array([[0, 0, 0], [1, 0, 0]])
    pooled = np.asarray(SentencePooling("mean", normalize=True)(TOKENS, mask))
    np.testing.assert_array_equal(pooled[0], [0.0, 0.0])


def test_float32_from_bfloat16():
    tokens = keras.ops.cast(TOKENS, "bfloat16")
    assert SentencePooling("max")(tokens, MASK).dtype == "float32"


def test_config_round_trip():
    layer = SentencePooling("max", normalize=True)
    assert_config_complete(layer)
    assert run_serialization_test(layer).normalize is True


def test_keras_file_round_trip(tmp_path):
    tokens = keras.Input((None, 2))
    mask = keras.Input((None,), dtype="int32")
    model = keras.Model(
        [tokens, mask], SentencePooling("mean", True)(tokens, mask)
    )
    model.save(tmp_path / "pooling.keras")
    restored = keras.models.load_model(tmp_path / "pooling.keras")
    np.testing.assert_array_equal(
        restored([TOKENS, MASK]), model([TOKENS, MASK])
    )


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="pooling='avg'"):
        SentencePooling("avg")
    with pytest.raises(ValueError, match="normalize=1"):
        SentencePooling("mean", normalize=1)
