"""Preset architectures and their exact parameter counts."""

import pytest

from keras_bert import BertBackbone
from keras_bert.models import BACKBONE_PRESETS

# The counts stated in keras_bert/models/presets.py; base and large are the
# figures of the BERT release (with pooler, vocab 30522, 512 positions).
EXPECTED_PARAMETERS = {
    "bert_tiny": 4_385_920,
    "bert_mini": 11_170_560,
    "bert_small": 28_763_648,
    "bert_medium": 41_373_184,
    "bert_base": 109_482_240,
    "bert_large": 335_141_888,
}


@pytest.mark.parametrize(
    "name",
    [
        # bert_large allocates and initialises 335M weights (~7 s).
        pytest.param(name, marks=pytest.mark.slow)
        if name == "bert_large"
        else name
        for name in EXPECTED_PARAMETERS
    ],
)
def test_preset_parameter_count(name):
    backbone = BertBackbone.from_preset(name)
    assert backbone.count_params() == EXPECTED_PARAMETERS[name]


def test_every_preset_is_documented_and_counted():
    assert set(BACKBONE_PRESETS) == set(EXPECTED_PARAMETERS)
    import keras_bert.models.presets as presets_module

    for name, count in EXPECTED_PARAMETERS.items():
        assert f"`{name}`" in presets_module.__doc__
        assert f"{count:,}" in presets_module.__doc__


def test_preset_architecture_and_overrides():
    backbone = BertBackbone.from_preset("bert_base", dropout=0.0)
    assert (backbone.num_layers, backbone.hidden_dim, backbone.num_heads) == (
        12,
        768,
        12,
    )
    assert backbone.intermediate_dim == 3072
    assert backbone.dropout == 0.0


def test_unknown_preset_lists_valid_names():
    with pytest.raises(ValueError, match="bert_huge.*bert_tiny.*bert_large"):
        BertBackbone.from_preset("bert_huge")
