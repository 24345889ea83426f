"""Hugging Face layouts: safetensors, pytorch_model.bin, shards, prefixes,
old LayerNorm names, tied copies and task heads.

Tiny random checkpoints written by `transformers` itself, so the layout is
the reference's, not ours.
"""

import json
import logging
import os

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file
from safetensors.numpy import save_file

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert import BertMaskedLM
from keras_bert.checkpoints import read_checkpoint
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import run_torch_backbone
from tests.checkpoints.conftest import torch
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers
from tests.helpers import backbone_inputs

require_references()

TOLERANCE = 1e-5


def tiny_config(**overrides):
    config = {
        "vocab_size": 50,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 32,
        "max_position_embeddings": 16,
        **overrides,
    }
    return transformers.BertConfig(**config)


def save_tiny(transformers_class, directory, seed=0, **save_kwargs):
    """A tiny random `transformers_class`, saved to `directory`."""
    torch.manual_seed(seed)
    model = transformers_class(tiny_config()).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                parameter.add_(0.1 * torch.randn_like(parameter))
    model.save_pretrained(directory, **save_kwargs)
    return model


def _inputs():
    return backbone_inputs(batch_size=3, sequence_length=9, seed=3)


def _check_pretraining_parity(model, reference):
    inputs = _inputs()
    positions = np.tile(np.arange(9, dtype="int32"), (3, 1))
    outputs = model({**inputs, "masked_positions": positions})
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs))
    real = inputs["padding_mask"].astype(bool)
    mlm = outputs["mlm_logits"].numpy()
    assert (
        max_abs_diff(mlm[real], expected.prediction_logits.numpy()[real])
        <= TOLERANCE
    )
    assert (
        max_abs_diff(outputs["nsp_logits"], expected.seq_relationship_logits)
        <= TOLERANCE
    )


@pytest.fixture(scope="module")
def pretraining_dir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("pretraining"))
    return directory, save_tiny(transformers.BertForPreTraining, directory)


def test_safetensors_pretraining_checkpoint(pretraining_dir):
    directory, reference = pretraining_dir
    _check_pretraining_parity(
        BertMaskedLM.from_checkpoint(directory), reference
    )


def test_pytorch_bin_with_old_layer_norm_names_and_tied_copies(
    pretraining_dir, tmp_path
):
    """The layout of the original `bert-base-uncased/pytorch_model.bin`."""
    _, reference = pretraining_dir
    state = reference.state_dict()
    renamed = {}
    for name, tensor in state.items():
        name = name.replace("LayerNorm.weight", "LayerNorm.gamma")
        name = name.replace("LayerNorm.bias", "LayerNorm.beta")
        renamed[name] = tensor.clone()
    assert "cls.predictions.decoder.weight" in renamed
    assert "bert.embeddings.LayerNorm.gamma" in renamed
    torch.save(renamed, tmp_path / "pytorch_model.bin")
    reference.config.to_json_file(tmp_path / "config.json")
    _check_pretraining_parity(
        BertMaskedLM.from_checkpoint(str(tmp_path)), reference
    )


def test_sharded_safetensors(pretraining_dir, tmp_path):
    directory, reference = pretraining_dir
    tensors = load_file(os.path.join(directory, "model.safetensors"))
    names = sorted(tensors)
    shards = {
        "model-1.safetensors": names[:20],
        "model-2.safetensors": names[20:],
    }
    weight_map = {}
    for shard, shard_names in shards.items():
        save_file({n: tensors[n] for n in shard_names}, tmp_path / shard)
        weight_map.update(dict.fromkeys(shard_names, shard))
    with open(tmp_path / "model.safetensors.index.json", "w") as file:
        json.dump({"weight_map": weight_map}, file)
    reference.config.to_json_file(tmp_path / "config.json")
    _check_pretraining_parity(
        BertMaskedLM.from_checkpoint(str(tmp_path)), reference
    )


def test_bert_model_without_prefix_loads_into_backbone(tmp_path):
    reference = save_tiny(transformers.BertModel, str(tmp_path))
    names = load_file(str(tmp_path / "model.safetensors"))
    assert not any(name.startswith("bert.") for name in names)
    backbone = BertBackbone.from_checkpoint(str(tmp_path))
    inputs = _inputs()
    expected_sequence, expected_pooled = run_torch_backbone(reference, inputs)
    outputs = backbone(inputs)
    real = inputs["padding_mask"].astype(bool)
    assert (
        max_abs_diff(
            outputs["sequence_output"].numpy()[real], expected_sequence[real]
        )
        <= TOLERANCE
    )
    assert max_abs_diff(outputs["pooled_output"], expected_pooled) <= TOLERANCE


def test_backbone_skips_pretraining_heads_and_says_so(pretraining_dir, caplog):
    directory, _ = pretraining_dir
    with caplog.at_level(logging.INFO):
        backbone = BertBackbone.from_checkpoint(directory)
    assert "cls.seq_relationship.weight" in caplog.text
    assert isinstance(backbone, BertBackbone)


def test_masked_lm_from_encoder_only_checkpoint_warns(tmp_path, caplog):
    save_tiny(transformers.BertModel, str(tmp_path))
    with caplog.at_level(logging.WARNING):
        BertMaskedLM.from_checkpoint(str(tmp_path))
    assert "no masked-LM head (cls.predictions)" in caplog.text
    assert "no next-sentence head (cls.seq_relationship)" in caplog.text


def test_sequence_classification_checkpoint(tmp_path):
    torch.manual_seed(0)
    reference = transformers.BertForSequenceClassification(
        tiny_config(num_labels=5)
    ).eval()
    reference.save_pretrained(str(tmp_path))
    classifier = BertClassifier.from_checkpoint(str(tmp_path))
    assert classifier.num_classes == 5
    inputs = _inputs()
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs)).logits
    assert max_abs_diff(classifier(inputs), expected) <= TOLERANCE
    with pytest.raises(ValueError, match=r"classifier.weight: checkpoint has "):
        BertClassifier.from_checkpoint(str(tmp_path), num_classes=2)


def test_classifier_from_backbone_checkpoint_needs_num_classes(tmp_path):
    save_tiny(transformers.BertModel, str(tmp_path))
    with pytest.raises(ValueError, match=r"num_classes=\.\.\."):
        BertClassifier.from_checkpoint(str(tmp_path))
    classifier = BertClassifier.from_checkpoint(str(tmp_path), num_classes=4)
    assert classifier.num_classes == 4


def test_config_overrides(pretraining_dir):
    directory, _ = pretraining_dir
    backbone = BertBackbone.from_checkpoint(directory, dropout=0.0)
    assert backbone.dropout == 0.0
    assert backbone.layer_norm_epsilon == 1e-12


def test_read_checkpoint_uses_huggingface_names(pretraining_dir):
    directory, _ = pretraining_dir
    checkpoint = read_checkpoint(directory)
    assert checkpoint.format == "huggingface"
    assert checkpoint.tensors["bert.pooler.dense.weight"].shape == (16, 16)
    assert checkpoint.backbone_config["num_heads"] == 4


def test_bfloat16_safetensors_are_read_without_torch(tmp_path):
    torch.manual_seed(0)
    reference = transformers.BertModel(tiny_config()).to(torch.bfloat16)
    reference.save_pretrained(str(tmp_path))
    backbone = BertBackbone.from_checkpoint(str(tmp_path))
    weight = reference.embeddings.word_embeddings.weight
    expected = weight.detach().float().numpy()
    np.testing.assert_array_equal(backbone.token_embedding.embeddings, expected)
    assert backbone.token_embedding.embeddings.dtype == "float32"


def test_masked_lm_checkpoint_without_pooler(tmp_path, caplog):
    """`BertForMaskedLM` saves no pooler: the MLM head still loads."""
    reference = save_tiny(transformers.BertForMaskedLM, str(tmp_path))
    names = load_file(str(tmp_path / "model.safetensors"))
    assert not any("pooler" in name for name in names)
    with caplog.at_level(logging.WARNING):
        model = BertMaskedLM.from_checkpoint(str(tmp_path))
    assert "no pooler (bert.pooler" in caplog.text
    # Freshly drawn, as the warning says (not left at zeros like the
    # encoder weights are before their assignment).
    pooler = model.backbone.pooler_dense.kernel.numpy()
    assert 0.01 < pooler.std() < 0.03
    inputs = _inputs()
    positions = np.tile(np.arange(9, dtype="int32"), (3, 1))
    logits = model({**inputs, "masked_positions": positions})["mlm_logits"]
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs)).logits.numpy()
    real = inputs["padding_mask"].astype(bool)
    assert max_abs_diff(logits.numpy()[real], expected[real]) <= TOLERANCE


def test_auto_model_class(pretraining_dir, tmp_path):
    from keras_bert.checkpoints import load_checkpoint

    directory, _ = pretraining_dir
    assert type(load_checkpoint(directory, "auto")) is BertMaskedLM
    save_tiny(transformers.BertModel, str(tmp_path / "encoder"))
    assert type(load_checkpoint(str(tmp_path / "encoder"), "auto")) is (
        BertBackbone
    )
    save_tiny(transformers.BertForSequenceClassification, str(tmp_path / "c"))
    assert type(load_checkpoint(str(tmp_path / "c"), "auto")) is BertClassifier


def test_argument_errors(pretraining_dir):
    from keras_bert.checkpoints import load_checkpoint

    directory, _ = pretraining_dir
    with pytest.raises(
        ValueError,
        match="`num_classes` applies to BertClassifier and "
        "BertTokenClassifier only",
    ):
        load_checkpoint(directory, BertBackbone, num_classes=2)
    with pytest.raises(TypeError, match="model_class='bert'"):
        load_checkpoint(directory, "bert")


def test_mixed_precision_load(pretraining_dir):
    directory, _ = pretraining_dir
    full = BertBackbone.from_checkpoint(directory)
    mixed = BertBackbone.from_checkpoint(directory, dtype="mixed_bfloat16")
    assert mixed.embedding.dtype_policy.name == "mixed_bfloat16"
    for ours, theirs in zip(mixed.weights, full.weights, strict=True):
        assert ours.dtype == "float32"
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_encoder_weights_are_assigned_not_drawn_first(
    pretraining_dir, monkeypatch
):
    """Only the weights a checkpoint may lack (pooler, heads) are drawn
    at random: the encoder's would be overwritten (0.6 s for MiniLM)."""
    drawn = []
    draw = keras.initializers.TruncatedNormal.__call__

    def counting(self, shape, dtype=None):
        drawn.append(tuple(shape))
        return draw(self, shape, dtype)

    monkeypatch.setattr(
        keras.initializers.TruncatedNormal, "__call__", counting
    )
    directory, _ = pretraining_dir
    backbone = BertBackbone.from_checkpoint(directory)
    assert drawn == [(16, 16)]  # the pooler's kernel, loaded after
    tensors = read_checkpoint(directory).tensors
    np.testing.assert_array_equal(
        backbone.token_embedding.embeddings.numpy(),
        tensors["bert.embeddings.word_embeddings.weight"],
    )
    drawn.clear()
    BertBackbone(**backbone.get_config())  # a fresh model is drawn whole
    assert len(drawn) > 10
