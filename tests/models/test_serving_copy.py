"""serving_copy: the one pipeline that makes the model an export serves."""

import os

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.models import backbone_of
from keras_bert.models import serving_copy
from keras_bert.models.serving_copy import INCOMPATIBLE
from tests.helpers import backbone_inputs
from tests.helpers import tiny_backbone_config


def _classifier():
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    return keras_bert.BertClassifier(backbone, num_classes=2)


def test_nothing_to_change_returns_the_model():
    classifier = _classifier()
    assert serving_copy(classifier) is classifier


@pytest.mark.slow  # tens of seconds on two cores
def test_every_option_and_lora_in_one_copy():
    classifier = _classifier()
    classifier.backbone.enable_lora(2)
    dense = classifier.backbone.transformer_layers[0].qkv_dense
    dense.lora_kernel_b.assign(np.full(dense.lora_kernel_b.shape, 0.1))
    inputs = backbone_inputs()
    expected = np.asarray(classifier(inputs))
    for options in ({}, {"streams": 2}, {"quantize": "int8"}):
        copy = serving_copy(classifier, **options)
        assert copy is not classifier and type(copy) is type(classifier)
        assert copy.backbone.lora_rank is None
        assert copy.backbone.streams == options.get("streams")
        # int8: weights and inputs of each matmul to 1/127.5 of their range.
        tolerance = 0.05 if "quantize" in options else 2e-6
        np.testing.assert_allclose(
            np.asarray(copy(inputs)), expected, atol=tolerance
        )
    assert classifier.backbone.lora_rank == 2  # unchanged


def test_a_saved_streams_copy_keeps_its_streams(tmp_path):
    copy = serving_copy(_classifier(), streams=2)
    path = os.path.join(tmp_path, "served.keras")
    copy.save(path)
    loaded = keras.saving.load_model(path)
    assert [block.streams for block in loaded.backbone.transformer_layers] == [
        2,
        2,
    ]
    inputs = backbone_inputs()
    np.testing.assert_allclose(
        np.asarray(loaded(inputs)), np.asarray(copy(inputs)), atol=0
    )


def test_incompatible_options_are_refused_by_name_with_the_fix():
    assert ("quantize", "streams") in INCOMPATIBLE
    with pytest.raises(
        ValueError, match="quantize='int8' and streams=2: .*Pass one of them"
    ):
        serving_copy(_classifier(), quantize="int8", streams=2)
    with pytest.raises(ValueError, match="quantize='int4'"):
        serving_copy(_classifier(), quantize="int4")
    with pytest.raises(ValueError, match="streams=3.*num_heads=2"):
        serving_copy(_classifier(), streams=3)


def test_backbone_of():
    classifier = _classifier()
    assert backbone_of(classifier) is classifier.backbone
    assert backbone_of(classifier.backbone) is classifier.backbone
    with pytest.raises(ValueError, match="Dense without a `backbone`"):
        backbone_of(keras.layers.Dense(2))
