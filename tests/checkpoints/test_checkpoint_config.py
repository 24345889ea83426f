"""Config translation: what "gelu" means depends on who wrote the config."""

import pytest

from keras_bert import BertBackbone
from keras_bert.checkpoints.checkpoint_config import (
    backbone_config_from_checkpoint_config,
)
from keras_bert.checkpoints.checkpoint_config import (
    huggingface_config_from_backbone,
)
from keras_bert.models.presets import get_preset_config
from tests.helpers import tiny_backbone_config

BASE = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "initializer_range": 0.02,
}


def _translate(source, **overrides):
    return backbone_config_from_checkpoint_config(
        {**BASE, **overrides}, source, "config.json"
    )


@pytest.mark.parametrize(
    "hidden_act, expected",
    [
        ("gelu", "gelu"),
        ("gelu_python", "gelu"),
        ("gelu_new", "gelu_approximate"),
        ("gelu_pytorch_tanh", "gelu_approximate"),
        ("gelu_fast", "gelu_approximate"),
    ],
)
def test_huggingface_activations(hidden_act, expected):
    assert _translate("huggingface", hidden_act=hidden_act)["activation"] == (
        expected
    )


def test_google_gelu_is_the_tanh_approximation():
    assert _translate("google", hidden_act="gelu")["activation"] == (
        "gelu_approximate"
    )
    with pytest.raises(ValueError, match="hidden_act='gelu_new'"):
        _translate("google", hidden_act="gelu_new")


def test_layer_norm_epsilon():
    assert (
        _translate("huggingface", layer_norm_eps=1e-5)["layer_norm_epsilon"]
        == 1e-5
    )
    # Google's config has no epsilon; its code uses 1e-12.
    assert _translate("google", layer_norm_eps=1e-5)["layer_norm_epsilon"] == (
        1e-12
    )


def test_bert_base_translation():
    config = _translate("huggingface", hidden_act="gelu")
    assert config == {
        "vocabulary_size": 30522,
        "num_layers": 12,
        "num_heads": 12,
        "hidden_dim": 768,
        "intermediate_dim": 3072,
        "max_sequence_length": 512,
        "num_segments": 2,
        "activation": "gelu",
        "dropout": 0.1,
        "attention_dropout": 0.1,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-12,
    }
    preset = get_preset_config("bert_base")
    assert {key: config[key] for key in preset} == preset


def test_missing_key_is_named():
    config = dict(BASE)
    del config["intermediate_size"]
    with pytest.raises(ValueError, match="`intermediate_size` must be a pos"):
        backbone_config_from_checkpoint_config(
            config, "huggingface", "config.json"
        )


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_export_round_trips(activation):
    backbone = BertBackbone(
        **tiny_backbone_config(activation=activation, layer_norm_epsilon=1e-6)
    )
    exported = huggingface_config_from_backbone(backbone)
    config = backbone_config_from_checkpoint_config(
        exported, "huggingface", "config.json"
    )
    for key, value in config.items():
        expected = getattr(backbone, key)
        if key == "attention_dropout" and expected is None:
            expected = backbone.dropout
        assert value == expected, key
