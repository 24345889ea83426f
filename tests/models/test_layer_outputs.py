"""`BertBackbone.layer_outputs`: every layer's hidden states (and attention
probabilities), as features, without touching the backbone's own graph."""

import os

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.models.bert_backbone import keras_inputs
from tests.checkpoints.test_docstring_examples import (
    test_example_runs as run_docstring_example,
)
from tests.helpers import backbone_inputs
from tests.helpers import tiny_backbone_config


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.fixture(scope="module")
def backbone():
    return keras_bert.BertBackbone(**tiny_backbone_config(num_layers=3))


def test_hidden_states_are_the_embeddings_then_each_block(backbone):
    inputs = backbone_inputs()
    outputs = backbone.layer_outputs(inputs)
    hidden_states = outputs["hidden_states"]
    assert isinstance(hidden_states, list) and len(hidden_states) == 4
    assert all(h.shape == (2, 6, 8) for h in hidden_states)
    assert "attention_probabilities" not in outputs
    # Layer by layer, as the blocks compute them.
    x = backbone.embedding(inputs["token_ids"], inputs["segment_ids"])
    np.testing.assert_array_equal(_numpy(hidden_states[0]), _numpy(x))
    for block, hidden in zip(backbone.transformer_layers, hidden_states[1:]):
        x = block(x, padding_mask=inputs["padding_mask"])
        np.testing.assert_array_equal(_numpy(hidden), _numpy(x))
    # The last is the backbone's own `sequence_output`.
    expected = backbone(inputs)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(
            _numpy(outputs[name]), _numpy(expected[name])
        )
    np.testing.assert_array_equal(
        _numpy(hidden_states[-1]), _numpy(expected["sequence_output"])
    )


def test_attention_probabilities_on_request(backbone):
    inputs = backbone_inputs()
    outputs = backbone.layer_outputs(
        inputs, return_attention_probabilities=True
    )
    probabilities = outputs["attention_probabilities"]
    assert len(probabilities) == 3
    assert all(p.shape == (2, 2, 6, 6) for p in probabilities)
    probs = np.stack([_numpy(p) for p in probabilities])
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert (probs[:, 0, :, :, 3:] == 0).all()  # row 0's padding keys
    # Asking for them does not change the hidden states.
    plain = backbone.layer_outputs(inputs)["hidden_states"]
    for a, b in zip(outputs["hidden_states"], plain):
        np.testing.assert_array_equal(_numpy(a), _numpy(b))


def test_the_backbone_graph_is_unchanged(backbone):
    """Not asked for, nothing is added: the backbone's outputs and each
    block's single output node are those of a backbone never asked."""
    fresh = keras_bert.BertBackbone(**tiny_backbone_config(num_layers=3))
    backbone.layer_outputs(keras_inputs())
    assert sorted(backbone.output) == ["pooled_output", "sequence_output"]
    assert len(backbone.operations) == len(fresh.operations)
    for block in backbone.transformer_layers:
        assert not isinstance(block.output, (tuple, list))
    assert backbone.get_config() == {
        **fresh.get_config(),
        "name": backbone.name,
    }


def _frozen_tagger():
    """The feature-based approach: a weighted sum of all layers of a frozen
    backbone feeding a trainable tagger."""
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    backbone.trainable = False
    inputs = keras_inputs()
    hidden_states = backbone.layer_outputs(inputs)["hidden_states"]
    stacked = keras.ops.stack(hidden_states, axis=1)  # (b, L + 1, s, h)
    features = keras.layers.Dense(1, use_bias=False, name="layer_weights")(
        keras.ops.moveaxis(stacked, 1, -1)
    )[..., 0]
    logits = keras.layers.Dense(3, name="tagger")(features)
    return backbone, keras.Model(inputs, logits)


def test_a_frozen_backbone_gives_features_to_a_trainable_tagger():
    backbone, tagger = _frozen_tagger()
    trainable = {id(w) for w in tagger.trainable_weights}
    assert len(trainable) == 3  # the layer weights, the tagger's two
    assert not trainable & {id(w) for w in backbone.weights}
    assert tagger(backbone_inputs()).shape == (2, 6, 3)


@pytest.mark.slow
def test_a_frozen_tagger_trains_only_its_head_and_saves(tmp_path):
    backbone, tagger = _frozen_tagger()
    before = [w.copy() for w in backbone.get_weights()]
    tagger.compile(optimizer="sgd", loss="mse")
    data = backbone_inputs()
    tagger.fit(data, np.ones((2, 6, 3)), epochs=1, verbose=0)
    for a, b in zip(before, backbone.get_weights()):
        np.testing.assert_array_equal(a, b)
    path = os.path.join(tmp_path, "tagger.keras")
    tagger.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_array_equal(_numpy(restored(data)), _numpy(tagger(data)))


def test_a_feature_extractor_model_saves_and_loads(tmp_path):
    """A functional model whose outputs are the dict itself (lists in it)."""
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    inputs = keras_inputs()
    extractor = keras.Model(inputs, backbone.layer_outputs(inputs))
    data = backbone_inputs()
    expected = extractor(data)
    assert len(expected["hidden_states"]) == 3
    path = os.path.join(tmp_path, "extractor.keras")
    extractor.save(path)
    actual = keras.models.load_model(path)(data)
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_array_equal(_numpy(a), _numpy(b)),
        actual,
        expected,
    )


def test_bad_inputs_are_named(backbone):
    with pytest.raises(ValueError, match="missing \\['padding_mask'\\]"):
        inputs = backbone_inputs()
        del inputs["padding_mask"]
        backbone.layer_outputs(inputs)
    with pytest.raises(ValueError, match="concrete inputs.*False"):
        backbone.layer_outputs(
            keras_inputs(), return_attention_probabilities=True
        )


def test_docstring_example_runs(tmp_path, monkeypatch):
    run_docstring_example(
        keras_bert.BertBackbone.layer_outputs, tmp_path, monkeypatch
    )
