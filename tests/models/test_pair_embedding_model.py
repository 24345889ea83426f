"""`PairEmbeddingModel`: both sides through one embedder, the in-batch
negatives loss by default, config and saving."""

import warnings

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.models import PairEmbeddingModel
from keras_bert.training import MultipleNegativesRankingLoss
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config


def _model(scale=20.0):
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    return PairEmbeddingModel(keras_bert.BertTextEmbedder(backbone), scale)


def _inputs():
    # Anchors shorter than positives: each side has its own length.
    return {
        "anchor": backbone_inputs(batch_size=3, sequence_length=4, seed=1),
        "positive": backbone_inputs(batch_size=3, sequence_length=9, seed=2),
    }


def test_stacks_the_embedders_outputs():
    model = _model()
    inputs = _inputs()
    outputs = keras.ops.convert_to_numpy(model(inputs))
    assert outputs.shape == (3, 2, 8)
    for column, key in enumerate(("anchor", "positive")):
        np.testing.assert_allclose(
            outputs[:, column],
            keras.ops.convert_to_numpy(model.embedder(inputs[key])),
            atol=1e-6,
        )
    assert model.backbone is model.embedder.backbone


@pytest.mark.slow
def test_compiles_with_the_in_batch_negatives_loss_and_trains():
    model = _model(scale=5.0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    assert isinstance(model.loss, MultipleNegativesRankingLoss)
    assert model.loss.scale == 5.0
    history = model.fit(_inputs(), np.zeros(3), epochs=3, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0]


def test_trains_without_keras_missing_a_gradient():
    """The embedder's backbone pooler, which embeddings never read, is
    frozen: Keras has no trainable variable without a gradient to warn
    about ("Gradients do not exist for variables ['pooler_dense/...']")."""
    model = _model()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    pooler = model.backbone.pooler_dense.kernel
    before = keras.ops.convert_to_numpy(pooler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(_inputs(), np.zeros(3), epochs=1, verbose=0)
    assert [str(w.message) for w in caught] == []
    assert not any("pooler" in v.path for v in model.trainable_variables)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(pooler), before)


def test_rejects_gradient_accumulation():
    with pytest.raises(ValueError, match="gradient_accumulation_steps=4"):
        _model().compile(gradient_accumulation_steps=4)


def test_names_missing_inputs():
    with pytest.raises(ValueError, match=r"Missing: \['positive'\]"):
        _model()({"anchor": backbone_inputs()})


def test_rejects_a_bad_scale():
    with pytest.raises(ValueError, match="scale=0"):
        _model(scale=0)


def test_config_and_saving_round_trip():
    model = _model(scale=7.0)
    assert_config_complete(model)
    restored = run_model_saving_test(model, _inputs())
    assert restored.scale == 7.0
    assert isinstance(restored.embedder, keras_bert.BertTextEmbedder)
