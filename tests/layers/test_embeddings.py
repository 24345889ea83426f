"""PositionEmbedding, SegmentEmbedding and BertEmbedding."""

import keras
import numpy as np
import pytest

from keras_bert.layers import BertEmbedding
from keras_bert.layers import PositionEmbedding
from keras_bert.layers import SegmentEmbedding
from keras_bert.serving.runtime.embedding import served_embedding
from tests.helpers import assert_config_complete
from tests.helpers import run_layer_saving_test
from tests.helpers import run_serialization_test


def test_position_embedding_returns_rows_by_position():
    layer = PositionEmbedding(max_sequence_length=6, hidden_dim=3)
    layer.build(None)
    table = np.arange(18, dtype="float32").reshape(6, 3)
    layer.embeddings.assign(table)
    out = keras.ops.convert_to_numpy(layer(np.zeros((2, 4), "int32")))
    assert out.shape == (2, 4, 3)
    np.testing.assert_array_equal(out[0], table[:4])
    np.testing.assert_array_equal(out[1], table[:4])


def test_position_embedding_rejects_too_long_sequences():
    layer = PositionEmbedding(max_sequence_length=4, hidden_dim=3)
    with pytest.raises(ValueError, match="max_sequence_length=4"):
        layer(np.zeros((1, 5), "int32"))


def test_segment_embedding_looks_up_rows_and_checks_range():
    layer = SegmentEmbedding(num_segments=2, hidden_dim=2)
    layer.build(None)
    layer.embeddings.assign([[1.0, 2.0], [3.0, 4.0]])
    out = keras.ops.convert_to_numpy(layer(np.array([[0, 1, 1]])))
    np.testing.assert_array_equal(out, [[[1, 2], [3, 4], [3, 4]]])
    with pytest.raises(ValueError, match=r"segment_ids.*\[0, 2\).*value 2"):
        layer(np.array([[0, 2]]))


@pytest.mark.parametrize(
    "layer",
    [
        PositionEmbedding(max_sequence_length=8, hidden_dim=4),
        SegmentEmbedding(num_segments=3, hidden_dim=4),
        BertEmbedding(vocabulary_size=10, hidden_dim=4, max_sequence_length=8),
    ],
    ids=lambda layer: type(layer).__name__,
)
def test_config_is_complete_and_round_trips(layer):
    assert_config_complete(layer)
    run_serialization_test(layer)


def test_invalid_arguments_name_the_value():
    with pytest.raises(ValueError, match="max_sequence_length=0"):
        PositionEmbedding(max_sequence_length=0, hidden_dim=4)
    with pytest.raises(ValueError, match="vocabulary_size=-1"):
        BertEmbedding(vocabulary_size=-1, hidden_dim=4)
    with pytest.raises(ValueError, match="dropout=1.5"):
        BertEmbedding(vocabulary_size=5, hidden_dim=4, dropout=1.5)


def test_bert_embedding_matches_hand_computation():
    layer = BertEmbedding(
        vocabulary_size=5, hidden_dim=3, max_sequence_length=4, dropout=0.5
    )
    token_ids = np.array([[1, 4, 2]])
    segment_ids = np.array([[0, 1, 1]])
    layer(token_ids, segment_ids)
    rng = np.random.default_rng(7)
    tokens = rng.normal(size=(5, 3)).astype("float32")
    segments = rng.normal(size=(2, 3)).astype("float32")
    positions = rng.normal(size=(4, 3)).astype("float32")
    gamma = rng.normal(size=(3,)).astype("float32")
    beta = rng.normal(size=(3,)).astype("float32")
    layer.token_embedding.embeddings.assign(tokens)
    layer.segment_embedding.embeddings.assign(segments)
    layer.position_embedding.embeddings.assign(positions)
    layer.layer_norm.gamma.assign(gamma)
    layer.layer_norm.beta.assign(beta)

    summed = tokens[[1, 4, 2]] + segments[[0, 1, 1]] + positions[:3]
    mean = summed.mean(-1, keepdims=True)
    var = ((summed - mean) ** 2).mean(-1, keepdims=True)
    expected = (summed - mean) / np.sqrt(var + 1e-12) * gamma + beta

    # Inference: dropout is off, the result is exactly the formula.
    out = layer(token_ids, segment_ids, training=False)
    np.testing.assert_allclose(out[0], expected, rtol=1e-5, atol=1e-6)
    # Training: dropout zeroes some entries and scales the rest by 1/(1-p).
    out = keras.ops.convert_to_numpy(
        layer(token_ids, segment_ids, training=True)
    )
    kept = out != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_allclose(out[kept], (expected[None] * 2)[kept], rtol=1e-5)


@pytest.mark.parametrize("quantized", [False, True])
def test_the_served_call_computes_the_inference_call(quantized):
    """`served_embedding` (what a served copy's embedding runs, as its
    `served_call`) gives the inference `call`'s outputs, with a float or
    an int8 WordPiece table (random weights)."""
    layer = BertEmbedding(vocabulary_size=30, hidden_dim=8, dropout=0.5)
    token_ids = np.array([[2, 29, 7, 0], [5, 5, 1, 0]], "int32")
    segment_ids = np.array([[0, 0, 1, 1], [0, 1, 1, 0]], "int32")
    layer(token_ids, segment_ids)
    rng = np.random.default_rng(5)
    layer.set_weights([rng.normal(size=w.shape) for w in layer.get_weights()])
    if quantized:
        layer.token_embedding.quantize("int8")
    expected = layer(token_ids, segment_ids, training=False)
    layer.served_call = served_embedding
    served = layer(token_ids, segment_ids, training=False)
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-5)
    # In training the layer's own call runs (dropout 0.5 here).
    trained = layer(token_ids, segment_ids, training=True)
    assert np.abs(np.asarray(trained) - np.asarray(expected)).max() > 0.1


def test_bert_embedding_rejects_out_of_range_token_ids():
    layer = BertEmbedding(vocabulary_size=10, hidden_dim=4)
    with pytest.raises(ValueError, match=r"token_ids.*\[0, 10\).*value 10"):
        layer(np.array([[1, 10]]), np.array([[0, 0]]))
    with pytest.raises(ValueError, match="value -3"):
        layer(np.array([[1, -3]]), np.array([[0, 0]]))


def test_bert_embedding_saves_and_loads():
    layer = BertEmbedding(
        vocabulary_size=10, hidden_dim=4, max_sequence_length=8
    )
    run_layer_saving_test(
        layer, np.array([[1, 2, 3]], "int32"), np.array([[0, 0, 1]], "int32")
    )


def test_weights_are_not_shared_between_layers():
    # An unseeded Keras initializer repeats itself for equal shapes; each
    # weight must get its own draw.
    a = BertEmbedding(vocabulary_size=8, hidden_dim=8, max_sequence_length=8)
    a(np.array([[1]]), np.array([[0]]))
    assert not np.allclose(
        a.token_embedding.embeddings.numpy(),
        a.position_embedding.embeddings.numpy(),
    )


def test_position_and_segment_embeddings_save_and_load():
    run_layer_saving_test(
        PositionEmbedding(max_sequence_length=8, hidden_dim=4),
        np.array([[3, 1, 2]], "int32"),
    )
    run_layer_saving_test(
        SegmentEmbedding(num_segments=2, hidden_dim=4),
        np.array([[0, 1, 1]], "int32"),
    )
