"""MaskedLMHead: gather first, tied output projection, float32 logits."""

import math

import keras
import numpy as np
import pytest

from keras_bert.layers import MaskedLMHead
from tests.helpers import assert_config_complete
from tests.helpers import run_layer_saving_test
from tests.helpers import run_serialization_test


def _tied_head(vocab=7, hidden=4, **kwargs):
    embedding = keras.layers.Embedding(vocab, hidden)
    embedding.build((None,))
    return MaskedLMHead(vocab, token_embedding=embedding, **kwargs), embedding


def test_head_matches_hand_computation():
    head, embedding = _tied_head()
    rng = np.random.default_rng(5)
    sequence = rng.normal(size=(2, 5, 4)).astype("float32")
    positions = np.array([[1, 3], [0, 4]])
    head(sequence, positions)
    kernel = rng.normal(size=(4, 4)).astype("float32")
    bias = rng.normal(size=(4,)).astype("float32")
    gamma = rng.normal(size=(4,)).astype("float32")
    beta = rng.normal(size=(4,)).astype("float32")
    out_bias = rng.normal(size=(7,)).astype("float32")
    head.dense.set_weights([kernel, bias])
    head.layer_norm.set_weights([gamma, beta])
    head.output_bias.assign(out_bias)
    table = embedding.embeddings.numpy()

    gathered = np.take_along_axis(sequence, positions[:, :, None], axis=1)
    h = gathered @ kernel + bias
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    mean = h.mean(-1, keepdims=True)
    var = ((h - mean) ** 2).mean(-1, keepdims=True)
    h = (h - mean) / np.sqrt(var + 1e-12) * gamma + beta
    expected = h @ table.T + out_bias

    actual = keras.ops.convert_to_numpy(head(sequence, positions))
    assert actual.shape == (2, 2, 7)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


def test_output_projection_is_tied_to_the_embedding():
    head, embedding = _tied_head()
    sequence = np.random.default_rng(0).normal(size=(1, 3, 4)).astype("float32")
    before = keras.ops.convert_to_numpy(head(sequence, np.array([[2]])))
    embedding.embeddings.assign(embedding.embeddings * 2.0)
    after = keras.ops.convert_to_numpy(head(sequence, np.array([[2]])))
    assert not np.allclose(before, after)
    # The head owns no copy of the vocabulary matrix.
    assert all(w.shape != (7, 4) for w in head._trainable_variables)


def test_vocabulary_size_must_match_embedding():
    embedding = keras.layers.Embedding(7, 4)
    with pytest.raises(ValueError, match="vocabulary_size=8.*input_dim=7"):
        MaskedLMHead(8, token_embedding=embedding)


def test_logits_are_float32_under_mixed_precision():
    embedding = keras.layers.Embedding(7, 4, dtype="mixed_bfloat16")
    embedding.build((None,))
    head = MaskedLMHead(7, token_embedding=embedding, dtype="mixed_bfloat16")
    out = head(np.ones((1, 3, 4), "float32"), np.array([[0, 1]]))
    assert out.dtype == "float32"


def test_untied_head_and_config_round_trip():
    head = MaskedLMHead(7, activation="gelu_approximate")
    head(np.ones((1, 3, 4), "float32"), np.array([[0, 1]]))
    assert head.output_embeddings.shape == (7, 4)
    assert_config_complete(head)
    run_serialization_test(head)


def test_tied_head_saves_and_loads():
    head, _ = _tied_head()
    assert_config_complete(head)
    sequence = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    run_layer_saving_test(head, sequence, np.array([[0, 2], [1, 1]], "int32"))


def test_already_gathered_hidden_states_need_no_positions():
    head, _ = _tied_head()
    rng = np.random.default_rng(2)
    sequence = rng.normal(size=(2, 5, 4)).astype("float32")
    positions = np.array([[1, 3], [0, 4]])
    gathered = np.take_along_axis(sequence, positions[:, :, None], axis=1)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(head(gathered)),
        keras.ops.convert_to_numpy(head(sequence, positions)),
        atol=1e-6,
    )
    assert head.compute_output_shape((2, 2, 4)) == (2, 2, 7)
