"""Broken or unsupported checkpoints fail loudly, naming the problem, and
load nothing."""

import json
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file
from safetensors.numpy import save_file

from keras_bert import BertBackbone
from keras_bert import BertMaskedLM
from keras_bert.checkpoints import read_checkpoint
from keras_bert.checkpoints.load_checkpoint import assign_checkpoint
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch
from tests.checkpoints.test_huggingface_checkpoints import save_tiny
from tests.checkpoints.test_huggingface_checkpoints import transformers

require_references()

QUERY = "bert.encoder.layer.1.attention.self.query.weight"
INTERMEDIATE = "bert.encoder.layer.0.intermediate.dense.weight"


@pytest.fixture(scope="module")
def good_dir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("good"))
    save_tiny(transformers.BertForPreTraining, directory)
    return directory


def _copy(good_dir, tmp_path, edit_tensors=None, edit_config=None):
    directory = str(tmp_path / "broken")
    shutil.copytree(good_dir, directory)
    weights = os.path.join(directory, "model.safetensors")
    if edit_tensors:
        tensors = load_file(weights)
        edit_tensors(tensors)
        save_file(tensors, weights)
    if edit_config:
        path = os.path.join(directory, "config.json")
        with open(path) as file:
            config = json.load(file)
        edit_config(config)
        with open(path, "w") as file:
            json.dump(config, file)
    return directory


def _error(model_class, directory):
    with pytest.raises(ValueError) as error:
        model_class.from_checkpoint(directory)
    return str(error.value)


def test_removed_tensor_is_named(good_dir, tmp_path):
    directory = _copy(good_dir, tmp_path, lambda t: t.pop(QUERY))
    message = _error(BertBackbone, directory)
    assert "Missing from the checkpoint (1)" in message
    assert f"{QUERY}: model expects shape (16, 16)" in message
    assert "no weight was loaded" in message


def test_wrong_shape_is_named_with_both_shapes(good_dir, tmp_path):
    def edit(tensors):
        tensors[INTERMEDIATE] = np.zeros((31, 16), "float32")

    message = _error(BertBackbone, _copy(good_dir, tmp_path, edit))
    assert (
        f"{INTERMEDIATE}: checkpoint has shape (31, 16), model expects (32, 16)"
        in message
    )


def test_every_problem_is_listed_at_once(good_dir, tmp_path):
    def edit(tensors):
        tensors.pop(QUERY)
        tensors.pop("bert.pooler.dense.bias")
        tensors[INTERMEDIATE] = np.zeros((31, 16), "float32")
        # A third layer the config does not have.
        tensors["bert.encoder.layer.2.output.dense.bias"] = np.zeros(
            16, "float32"
        )

    message = _error(BertBackbone, _copy(good_dir, tmp_path, edit))
    assert "4 problem(s)" in message
    for name in (QUERY, "bert.pooler.dense.bias", INTERMEDIATE):
        assert name in message
    assert "Unexpected in the checkpoint (1)" in message
    assert "bert.encoder.layer.2.output.dense.bias: shape (16,)" in message


def test_config_with_fewer_layers_than_weights(good_dir, tmp_path):
    directory = _copy(
        good_dir,
        tmp_path,
        edit_config=lambda c: c.update(num_hidden_layers=1),
    )
    message = _error(BertBackbone, directory)
    assert "Unexpected in the checkpoint (16)" in message
    assert "bert.encoder.layer.1.output.LayerNorm.bias" in message


def test_partial_head_is_an_error_but_not_for_a_backbone(good_dir, tmp_path):
    name = "cls.predictions.transform.dense.weight"
    directory = _copy(good_dir, tmp_path, lambda t: t.pop(name))
    message = _error(BertMaskedLM, directory)
    assert f"{name}: model expects shape (16, 16)" in message
    BertBackbone.from_checkpoint(directory)  # the head is not its business


def test_untied_decoder_is_refused(good_dir, tmp_path):
    def edit(tensors):
        embeddings = tensors["bert.embeddings.word_embeddings.weight"]
        tensors["cls.predictions.decoder.weight"] = embeddings + 1.0

    message = _error(BertMaskedLM, _copy(good_dir, tmp_path, edit))
    assert "cls.predictions.decoder.weight differs from" in message
    assert "ties the output projection" in message


def test_failed_load_leaves_the_model_untouched(good_dir, tmp_path):
    def edit(tensors):
        tensors[INTERMEDIATE] = np.zeros((31, 16), "float32")

    checkpoint = read_checkpoint(_copy(good_dir, tmp_path, edit))
    model = BertMaskedLM(BertBackbone(**checkpoint.backbone_config))
    before = [w.numpy().copy() for w in model.weights]
    with pytest.raises(ValueError):
        assign_checkpoint(model, checkpoint)
    for value, weight in zip(before, model.weights, strict=True):
        np.testing.assert_array_equal(value, weight.numpy())


def test_truncated_safetensors(good_dir, tmp_path):
    directory = _copy(good_dir, tmp_path)
    path = os.path.join(directory, "model.safetensors")
    size = os.path.getsize(path)
    with open(path, "r+b") as file:
        file.truncate(size // 2)
    message = _error(BertBackbone, directory)
    assert "model.safetensors" in message
    assert "truncated or corrupt" in message


def torch_state(good_dir):
    """The good checkpoint's tensors, as torch tensors for torch.save."""
    tensors = load_file(os.path.join(good_dir, "model.safetensors"))
    return {name: torch.tensor(value) for name, value in tensors.items()}


def test_truncated_pytorch_bin(good_dir, tmp_path):
    directory = str(tmp_path / "bin")
    os.makedirs(directory)
    shutil.copy(os.path.join(good_dir, "config.json"), directory)
    state = torch_state(good_dir)
    path = os.path.join(directory, "pytorch_model.bin")
    torch.save(state, path)
    with open(path, "r+b") as file:
        file.truncate(os.path.getsize(path) // 2)
    message = _error(BertBackbone, directory)
    assert "pytorch_model.bin" in message and "truncated or corrupt" in message


class _NotATensor:
    """A pickled object torch.load(weights_only=True) refuses."""


def test_pytorch_bin_with_pickled_objects_is_refused_as_such(
    good_dir, tmp_path
):
    directory = str(tmp_path / "pickled")
    os.makedirs(directory)
    shutil.copy(os.path.join(good_dir, "config.json"), directory)
    state = torch_state(good_dir)
    state["extra"] = _NotATensor()
    torch.save(state, os.path.join(directory, "pytorch_model.bin"))
    message = _error(BertBackbone, directory)
    assert "holds pickled Python objects besides tensors" in message
    assert "model.safetensors" in message
    assert "truncated" not in message


def test_hidden_size_not_divisible_by_heads(good_dir, tmp_path):
    directory = _copy(
        good_dir,
        tmp_path,
        edit_config=lambda c: c.update(num_attention_heads=3),
    )
    message = _error(BertBackbone, directory)
    assert "config.json" in message
    assert "hidden_size=16 is not divisible by num_attention_heads=3" in message


@pytest.mark.parametrize(
    "edit, expected",
    [
        ({"hidden_act": "relu"}, "hidden_act='relu' is not supported"),
        ({"hidden_act": "quick_gelu"}, "hidden_act='quick_gelu'"),
        (
            {"position_embedding_type": "relative_key"},
            "position_embedding_type='relative_key' is not supported",
        ),
        ({"is_decoder": True}, "is_decoder=True is not supported"),
        ({"model_type": "roberta"}, "model_type='roberta' is not supported"),
        ({"vocab_size": 0}, "`vocab_size` must be a positive integer"),
    ],
)
def test_unsupported_configs_are_refused(good_dir, tmp_path, edit, expected):
    directory = _copy(good_dir, tmp_path, edit_config=lambda c: c.update(edit))
    assert expected in _error(BertBackbone, directory)


def test_missing_files(good_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere' does not exist"):
        BertBackbone.from_checkpoint(str(tmp_path / "nowhere"))
    (tmp_path / "a_file").write_text("")
    with pytest.raises(FileNotFoundError, match="a_file' is not a directory"):
        BertBackbone.from_checkpoint(str(tmp_path / "a_file"))
    with pytest.raises(FileNotFoundError, match="neither config.json"):
        BertBackbone.from_checkpoint(str(tmp_path))
    directory = _copy(good_dir, tmp_path)
    os.remove(os.path.join(directory, "model.safetensors"))
    with pytest.raises(FileNotFoundError, match="no weights"):
        BertBackbone.from_checkpoint(directory)


def test_half_a_pooler_is_an_error(good_dir, tmp_path):
    directory = _copy(
        good_dir, tmp_path, lambda t: t.pop("bert.pooler.dense.bias")
    )
    assert "bert.pooler.dense.bias: model expects shape (16,)" in _error(
        BertBackbone, directory
    )


def test_corrupt_config_json(good_dir, tmp_path):
    directory = _copy(good_dir, tmp_path)
    with open(os.path.join(directory, "config.json"), "w") as file:
        file.write('{"vocab_size": 50, "hidden_')
    message = _error(BertBackbone, directory)
    assert "config.json is not valid JSON" in message


def test_foreign_names_get_a_hint(good_dir, tmp_path):
    def edit(tensors):
        for name in list(tensors):
            tensors["model/" + name.replace(".", "/")] = tensors.pop(name)

    message = _error(BertBackbone, _copy(good_dir, tmp_path, edit))
    assert "None of the encoder's tensors is in the checkpoint" in message
    assert "model/bert/" in message
