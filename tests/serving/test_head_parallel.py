"""head_parallel_copy: the same model, its blocks inferring as streams."""

import numpy as np
import pytest

import keras_bert
from keras_bert.serving import head_parallel_copy

TOLERANCE = 2e-6


def _backbone():
    return keras_bert.BertBackbone(
        vocabulary_size=50,
        num_layers=2,
        num_heads=3,
        hidden_dim=12,
        intermediate_dim=20,
        max_sequence_length=16,
    )


def _inputs():
    rng = np.random.default_rng(0)
    return {
        "token_ids": rng.integers(5, 50, (3, 7)).astype("int32"),
        "segment_ids": np.zeros((3, 7), "int32"),
        "padding_mask": np.array(
            [[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5]
        ),
    }


def test_classifier_copy_predicts_the_same():
    classifier = keras_bert.BertClassifier(_backbone(), num_classes=3)
    copy = head_parallel_copy(classifier, streams=2)
    assert type(copy) is keras_bert.BertClassifier
    inputs = _inputs()
    np.testing.assert_allclose(
        copy.predict(inputs, verbose=0),
        classifier.predict(inputs, verbose=0),
        atol=TOLERANCE,
    )
    assert [
        block.served_call.streams for block in copy.backbone.transformer_layers
    ] == [2, 2]
    # The model itself is unchanged.
    assert all(
        block.served_call is None
        for block in classifier.backbone.transformer_layers
    )


def test_backbone_copy_sequence_output_on_real_tokens():
    backbone = _backbone()
    copy = head_parallel_copy(backbone, streams=3)
    inputs = _inputs()
    real = inputs["padding_mask"][..., None]
    expected = backbone(inputs)["sequence_output"]
    outputs = copy(inputs)["sequence_output"]
    np.testing.assert_allclose(
        np.asarray(outputs) * real, np.asarray(expected) * real, atol=TOLERANCE
    )


def test_masked_lm_copy_reads_masked_positions_the_same():
    model = keras_bert.BertMaskedLM(_backbone())
    inputs = dict(
        _inputs(), masked_positions=np.array([[1, 2], [3, 0], [1, 1]])
    )
    expected = model.predict(inputs, verbose=0)
    outputs = head_parallel_copy(model).predict(inputs, verbose=0)
    assert sorted(outputs) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(outputs[name], expected[name], atol=1e-5)


def test_lora_updates_are_merged_into_the_streams():
    backbone = _backbone()
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    backbone.enable_lora(2)
    rng = np.random.default_rng(4)
    for weight in classifier.trainable_weights:
        if "lora" in weight.path:
            weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))
    inputs = _inputs()
    np.testing.assert_allclose(
        head_parallel_copy(classifier).predict(inputs, verbose=0),
        classifier.predict(inputs, verbose=0),
        atol=TOLERANCE,
    )


def test_bad_streams_and_models_are_refused():
    with pytest.raises(ValueError, match="streams"):
        head_parallel_copy(_backbone(), streams=0)
    with pytest.raises(ValueError, match="streams=4.*num_heads=3"):
        head_parallel_copy(_backbone(), streams=4)
