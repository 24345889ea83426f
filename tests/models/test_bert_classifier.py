"""BertClassifier: classification and regression heads."""

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config


def test_logits_shape_and_dtype():
    model = BertClassifier(
        BertBackbone(**tiny_backbone_config()), num_classes=3
    )
    logits = model(backbone_inputs(batch_size=4))
    assert logits.shape == (4, 3)
    assert logits.dtype == "float32"


def test_logits_are_the_head_on_the_backbones_pooled_output():
    """The last block runs on [CLS] only (BertBackbone.outputs_at); the
    logits are those of the full backbone's pooled output."""
    backbone = BertBackbone(**tiny_backbone_config())
    model = BertClassifier(backbone, num_classes=3)
    inputs = backbone_inputs(batch_size=4, sequence_length=9)
    pooled = backbone(inputs)["pooled_output"]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(model(inputs)),
        keras.ops.convert_to_numpy(model.output_dense(pooled)),
        atol=1e-6,
    )


def _keyword_task(n=96, seed=0):
    """Label 1 iff token 7 occurs in the sequence."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(8, 30, size=(n, 8)).astype("int32")
    labels = rng.integers(0, 2, size=(n,)).astype("int32")
    where = rng.integers(1, 8, size=(n,))
    tokens[labels == 1, where[labels == 1]] = 7
    tokens[:, 0] = 2  # [CLS]
    features = {
        "token_ids": tokens,
        "segment_ids": np.zeros_like(tokens),
        "padding_mask": np.ones_like(tokens),
    }
    return features, labels


def _small_backbone(dtype="float32"):
    return BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=32,
            hidden_dim=32,
            num_heads=4,
            intermediate_dim=64,
            dropout=0.0,
            dtype=dtype,
        )
    )


@pytest.mark.parametrize(
    "dtype",
    ["float32", pytest.param("mixed_bfloat16", marks=pytest.mark.slow)],
)
def test_fit_learns_a_small_classification_task(dtype):
    keras.utils.set_random_seed(1)
    model = BertClassifier(_small_backbone(dtype), num_classes=2, dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    features, labels = _keyword_task()
    history = model.fit(features, labels, batch_size=16, epochs=25, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert history.history["accuracy"][-1] > 0.9


def test_regression_with_one_class():
    keras.utils.set_random_seed(2)
    model = BertClassifier(_small_backbone(), num_classes=1, dropout=0.0)
    assert isinstance(model.loss, keras.losses.MeanSquaredError)
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    features, labels = _keyword_task()
    scores = labels.astype("float32") * 5.0
    history = model.fit(features, scores, batch_size=16, epochs=25, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.25 * losses[0], losses


def test_save_load_and_config():
    model = BertClassifier(
        BertBackbone(**tiny_backbone_config()), num_classes=4, dropout=0.3
    )
    assert_config_complete(model)
    restored = run_model_saving_test(model, backbone_inputs())
    assert restored.dropout == 0.3
    assert restored.num_classes == 4


def test_invalid_num_classes():
    backbone = BertBackbone(**tiny_backbone_config())
    with pytest.raises(ValueError, match="num_classes=0"):
        BertClassifier(backbone, num_classes=0)
