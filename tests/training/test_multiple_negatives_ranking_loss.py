"""`MultipleNegativesRankingLoss` against sentence-transformers' own, by
hand, and as a Keras loss (config, saving, errors)."""

import keras
import numpy as np
import pytest

from keras_bert.training import MultipleNegativesRankingLoss
from tests.helpers import assert_config_complete


def _sentence_transformers_loss(embeddings, scale):
    """sentence-transformers' loss of `(batch, columns, hidden)` columns."""
    torch = pytest.importorskip("torch")
    losses = pytest.importorskip(
        "sentence_transformers.sentence_transformer.losses"
    )
    loss = losses.MultipleNegativesRankingLoss(
        model=torch.nn.Module(), scale=scale
    )
    columns = [
        torch.tensor(embeddings[:, c]) for c in range(embeddings.shape[1])
    ]
    return loss.compute_loss_from_embeddings(columns, None).item()


# Importing sentence-transformers takes seconds.
@pytest.mark.slow
@pytest.mark.parametrize("columns", [2, 3])
@pytest.mark.parametrize("scale", [20.0, 5.0])
def test_equals_sentence_transformers_on_random_embeddings(columns, scale):
    rng = np.random.default_rng(columns)
    for dtype, tolerance in (("float64", 1e-6), ("float32", 1e-6)):
        embeddings = rng.normal(size=(16, columns, 8)).astype(dtype)
        expected = _sentence_transformers_loss(embeddings, scale)
        actual = float(
            MultipleNegativesRankingLoss(scale, dtype=dtype)(
                np.zeros(16), embeddings
            )
        )
        # float32: both sides round to float32 (a loss near 10 has a
        # spacing of 1e-6); float64 agrees to 1e-12.
        assert abs(actual - expected) <= tolerance * max(1.0, abs(expected))


def test_hand_computed_value():
    # Anchors (1, 0), (0, 1); positives (1, 0), (1, 1): cosines
    # [[1, 1/sqrt(2)], [0, 1/sqrt(2)]], the right one on the diagonal.
    embeddings = np.array(
        [[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [1.0, 1.0]]], "float32"
    )
    cosine = np.array([[1.0, 2**-0.5], [0.0, 2**-0.5]])
    scores = 2.0 * cosine
    per_example = np.log(np.exp(scores).sum(1)) - np.diag(scores)
    loss = MultipleNegativesRankingLoss(scale=2.0)
    np.testing.assert_allclose(
        float(loss(np.zeros(2), embeddings)), per_example.mean(), rtol=1e-6
    )


@pytest.mark.slow
def test_in_batch_negatives_are_the_batch_it_is_given():
    """The loss of two halves is not the loss of the whole: each replica
    of a `tf.distribute` strategy sees its own half's negatives, and
    averaging the halves' means is what a replica-wise run computes."""
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(8, 2, 4)).astype("float32")
    loss = MultipleNegativesRankingLoss()
    halves = [
        float(loss(np.zeros(4), part)) for part in np.split(embeddings, 2)
    ]
    whole = float(loss(np.zeros(8), embeddings))
    assert abs(np.mean(halves) - whole) > 1e-3
    expected = np.mean(
        [
            _sentence_transformers_loss(part, 20.0)
            for part in np.split(embeddings, 2)
        ]
    )
    np.testing.assert_allclose(np.mean(halves), expected, rtol=1e-6)


def test_a_zero_embedding_gives_a_finite_loss():
    embeddings = np.zeros((3, 2, 4), "float32")
    assert np.isfinite(
        float(MultipleNegativesRankingLoss()(np.zeros(3), embeddings))
    )


@pytest.mark.parametrize("scale", [0, -1.0, "20", True])
def test_rejects_a_bad_scale(scale):
    with pytest.raises(ValueError, match=r"scale=.*positive|positive.*scale="):
        MultipleNegativesRankingLoss(scale)


def test_rejects_a_single_column():
    with pytest.raises(ValueError, match=r"num_columns >= 2.*\(4, 1, 8\)"):
        MultipleNegativesRankingLoss()(np.zeros(4), np.ones((4, 1, 8)))


def test_config_and_saving_round_trip(tmp_path):
    loss = MultipleNegativesRankingLoss(scale=7.5, name="mnrl")
    assert_config_complete(loss)
    restored = MultipleNegativesRankingLoss.from_config(loss.get_config())
    assert restored.get_config() == loss.get_config()
    inputs = keras.Input((2, 4))
    model = keras.Model(inputs, keras.layers.Identity()(inputs))
    model.compile(optimizer="sgd", loss=loss)
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert reloaded.loss.scale == 7.5
    embeddings = np.random.default_rng(1).normal(size=(4, 2, 4))
    np.testing.assert_allclose(
        float(reloaded.loss(np.zeros(4), embeddings)),
        float(loss(np.zeros(4), embeddings)),
    )
