"""quantized_copy: int8 copies of every model, the original untouched,
where oneDNN's int8 kernel runs; refused, naming it, where it does not."""

import numpy as np
import pytest

import keras_bert
from keras_bert.serving import quantized_copy
from tests.helpers import backbone_inputs
from tests.helpers import served_or_refused
from tests.helpers import tiny_backbone_config

# Tolerance against the float model (tiny random weights, hidden 16):
# weights and inputs of each matmul to 1/127.5 of their range.
TOLERANCE = 0.05


def _backbone():
    return keras_bert.BertBackbone(
        **tiny_backbone_config(hidden_dim=16, intermediate_dim=32)
    )


def _copy_or_refusal(model):
    return served_or_refused("int8", lambda: quantized_copy(model))


def test_quantized_backbone_is_close_and_the_original_untouched():
    backbone = _backbone()
    inputs = backbone_inputs()
    expected = backbone(inputs)
    copy = _copy_or_refusal(backbone)
    if copy is None:
        return
    assert copy.transformer_layers[0].qkv_dense.quantization_mode == "int8"
    assert copy.token_embedding.quantization_mode == "int8"
    assert backbone.transformer_layers[0].qkv_dense.quantization_mode is None
    got = copy(inputs)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(
            np.asarray(got[name]), np.asarray(expected[name]), atol=TOLERANCE
        )


@pytest.mark.slow  # 4-9 s; quantized_copy stays in the default suite
def test_quantized_masked_lm_reads_its_int8_tied_table():
    model = keras_bert.BertMaskedLM(_backbone())
    inputs = dict(backbone_inputs(), masked_positions=np.array([[1], [2]]))
    expected = np.asarray(model(inputs)["mlm_logits"])
    copy = _copy_or_refusal(model)
    if copy is None:
        return
    got = np.asarray(copy(inputs)["mlm_logits"])
    np.testing.assert_allclose(got, expected, atol=TOLERANCE)


@pytest.mark.slow  # 4-9 s; quantized_copy stays in the default suite
def test_lora_is_merged_before_quantizing():
    backbone = _backbone()
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    backbone.enable_lora(rank=2)
    dense = backbone.transformer_layers[0].qkv_dense
    dense.lora_kernel_b.assign(np.full(dense.lora_kernel_b.shape, 0.1))
    inputs = backbone_inputs()
    expected = np.asarray(classifier(inputs))
    copy = _copy_or_refusal(classifier)
    if copy is None:
        return
    assert copy.backbone.lora_rank is None
    np.testing.assert_allclose(
        np.asarray(copy(inputs)), expected, atol=TOLERANCE
    )


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="quantize='int4'"):
        quantized_copy(_backbone(), "int4")
