"""served_copy: the one place that applies a serving plan to a copy."""

import os

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.models import backbone_of
from keras_bert.serving import serving_copy
from keras_bert.serving.cpu import this_cpu
from keras_bert.serving.plan import INCOMPATIBLE
from tests.helpers import backbone_inputs
from tests.helpers import on_cpu
from tests.helpers import serves
from tests.helpers import tiny_backbone_config


def _classifier():
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    return keras_bert.BertClassifier(backbone, num_classes=2)


@pytest.mark.parametrize(
    "cpu, implementation",
    [
        # oneDNN on: the remapper's forms.
        (({"avx2", "avx512f", "avx512_vnni"}, True), "serving_graph"),
        # An AVX2-only CPU with oneDNN off: the blocks' own inference.
        (({"avx2"}, False), None),
    ],
)
def test_the_copy_serves_the_plan_and_leaves_the_model(cpu, implementation):
    classifier = _classifier()
    with on_cpu(*cpu):
        copy = serving_copy(classifier)
    assert copy is not classifier
    served = [block.served_call for block in copy.backbone.transformer_layers]
    if implementation is None:
        assert served == [None, None]
    else:
        assert [call.implementation for call in served] == [implementation] * 2
        assert not any(call.frozen for call in served)  # reads its variables
    # Either way the embedding refuses ids out of the vocabulary.
    assert copy.backbone.embedding.served_call is not None
    assert all(
        block.served_call is None
        for block in classifier.backbone.transformer_layers
    )
    assert classifier.backbone.embedding.served_call is None
    inputs = backbone_inputs()
    np.testing.assert_allclose(
        np.asarray(copy(inputs)), np.asarray(classifier(inputs)), atol=2e-6
    )


@pytest.mark.slow  # tens of seconds on two cores
def test_every_option_and_lora_in_one_copy():
    classifier = _classifier()
    classifier.backbone.enable_lora(2)
    dense = classifier.backbone.transformer_layers[0].qkv_dense
    dense.lora_kernel_b.assign(np.full(dense.lora_kernel_b.shape, 0.1))
    inputs = backbone_inputs()
    expected = np.asarray(classifier(inputs))
    options_served = [{}, {"streams": 2}]
    if serves("int8"):
        options_served.append({"quantize": "int8"})
    else:
        with pytest.raises(ValueError, match="oneDNN int8 kernels"):
            serving_copy(classifier, quantize="int8")
    for options in options_served:
        copy = serving_copy(classifier, **options)
        assert copy is not classifier and type(copy) is type(classifier)
        assert copy.backbone.lora_rank is None
        block = copy.backbone.transformer_layers[0]
        served = block.served_call
        if served is None:  # the blocks' own inference (`plan_export`)
            assert not options and not this_cpu().onednn
        else:
            assert served.streams == options.get("streams")
        # int8: weights and inputs of each matmul to 1/127.5 of their range.
        tolerance = 0.05 if "quantize" in options else 2e-6
        np.testing.assert_allclose(
            np.asarray(copy(inputs)), expected, atol=tolerance
        )
    assert classifier.backbone.lora_rank == 2  # unchanged


def test_a_saved_copy_loads_as_the_plain_model(tmp_path):
    """How a copy serves is made, not saved: its `.keras` file is the
    plain model's, the same function."""
    copy = serving_copy(_classifier(), streams=2)
    path = os.path.join(tmp_path, "served.keras")
    copy.save(path)
    loaded = keras.saving.load_model(path)
    assert all(
        block.served_call is None
        for block in loaded.backbone.transformer_layers
    )
    inputs = backbone_inputs()
    np.testing.assert_allclose(
        np.asarray(loaded(inputs)), np.asarray(copy(inputs)), atol=2e-6
    )


def test_a_config_saved_with_streams_loads_without_them():
    """`.keras` files written when `streams` was a constructor argument of
    the block and the backbone (`deprecations.DROPPED_CONFIG_KEYS`)."""
    classifier = _classifier()
    config = classifier.get_config()
    config["backbone"]["config"]["streams"] = 2
    loaded = keras_bert.BertClassifier.from_config(config)
    block = keras_bert.layers.TransformerEncoderBlock.from_config(
        {**loaded.backbone.transformer_layers[0].get_config(), "streams": 2}
    )
    assert block.served_call is None
    assert "streams" not in loaded.backbone.get_config()
    # Passed to a constructor, it is refused as an unknown argument.
    with pytest.raises(ValueError, match="Unrecognized.*'streams': 2"):
        keras_bert.BertBackbone(**tiny_backbone_config(), streams=2)
    with pytest.raises(ValueError, match="Unrecognized.*'streams': 2"):
        keras_bert.layers.TransformerEncoderBlock(2, 8, streams=2)


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
