"""Original Google BERT (TF1) checkpoints: names, activation, heads.

The tests write real TF1 checkpoints with `tf.compat.v1` variables and a
`Saver`, under the original variable names (`tests/checkpoints/
google_writer.py`, a name table independent of the library's).
"""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert import BertMaskedLM
from keras_bert.checkpoints import read_checkpoint
from keras_bert.checkpoints.google_reader import google_to_huggingface_name
from keras_bert.checkpoints.google_reader import huggingface_to_google_name
from keras_bert.checkpoints.weight_map import weight_map
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import run_torch_backbone
from tests.checkpoints.conftest import torch
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers
from tests.checkpoints.google_writer import google_config
from tests.checkpoints.google_writer import google_variables
from tests.checkpoints.google_writer import write_google_checkpoint
from tests.helpers import backbone_inputs

require_references()

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def minilm_google_dir(minilm_dir, tmp_path_factory):
    """MiniLM's weights as Google would have released them."""
    with open(os.path.join(minilm_dir, "config.json")) as file:
        config = json.load(file)
    state = load_file(os.path.join(minilm_dir, "model.safetensors"))
    directory = str(tmp_path_factory.mktemp("minilm_google"))
    variables = google_variables(state, config["num_hidden_layers"], False)
    write_google_checkpoint(
        directory,
        variables,
        google_config(config),
        optimizer_slots=["bert/pooler/dense/kernel"],
    )
    return directory


@pytest.fixture(scope="module")
def minilm_google_backbone(minilm_google_dir):
    return BertBackbone.from_checkpoint(minilm_google_dir)


def test_minilm_google_checkpoint_matches_transformers(
    minilm_dir, minilm_google_backbone, minilm_inputs
):
    backbone = minilm_google_backbone
    # Google's "gelu" is the tanh approximation: Hugging Face's "gelu_new".
    assert backbone.activation == "gelu_approximate"
    reference = transformers.BertModel.from_pretrained(
        minilm_dir, hidden_act="gelu_new"
    ).eval()
    expected_sequence, expected_pooled = run_torch_backbone(
        reference, minilm_inputs
    )
    outputs = backbone(minilm_inputs, training=False)
    real = minilm_inputs["padding_mask"].astype(bool)
    sequence_diff = max_abs_diff(
        outputs["sequence_output"].numpy()[real], expected_sequence[real]
    )
    pooled_diff = max_abs_diff(outputs["pooled_output"], expected_pooled)
    print(f"Google-format MiniLM sequence_output max-abs-diff: {sequence_diff}")
    print(f"Google-format MiniLM pooled_output max-abs-diff: {pooled_diff}")
    assert sequence_diff <= TOLERANCE
    assert pooled_diff <= TOLERANCE


def test_minilm_google_checkpoint_equals_huggingface_weights(
    minilm_google_backbone, minilm_backbone
):
    for ours, theirs in zip(
        minilm_google_backbone.weights, minilm_backbone.weights, strict=True
    ):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_optimizer_slots_and_global_step_are_not_read(minilm_google_dir):
    checkpoint = read_checkpoint(minilm_google_dir)
    assert checkpoint.format == "google"
    sources = set(checkpoint.source_names.values())
    assert "bert/pooler/dense/kernel" in sources
    assert not any("adam" in name or "global_step" in name for name in sources)


def _tiny_pretraining_checkpoint(directory, hidden_act="gelu_new"):
    config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=24,
        hidden_act=hidden_act,
    )
    torch.manual_seed(0)
    model = transformers.BertForPreTraining(config).eval()
    # Non-trivial biases and LayerNorm parameters, so a swap would show.
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                parameter.add_(0.1 * torch.randn_like(parameter))
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    write_google_checkpoint(
        directory,
        google_variables(state, config.num_hidden_layers),
        # Google spells the tanh approximation "gelu".
        google_config(
            config.to_dict(),
            "gelu" if hidden_act == "gelu_new" else hidden_act,
        ),
        optimizer_slots=["cls/predictions/output_bias"],
    )
    return model


def test_pretraining_heads_load_and_match_transformers(tmp_path):
    reference = _tiny_pretraining_checkpoint(str(tmp_path))
    model = BertMaskedLM.from_checkpoint(str(tmp_path))
    inputs = backbone_inputs(batch_size=3, sequence_length=10, seed=1)
    inputs["token_ids"] = inputs["token_ids"] % 40
    positions = np.tile(np.arange(10, dtype="int32"), (3, 1))
    outputs = model({**inputs, "masked_positions": positions})
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs))
    assert (
        max_abs_diff(outputs["mlm_logits"], expected.prediction_logits)
        <= TOLERANCE
    )
    assert (
        max_abs_diff(outputs["nsp_logits"], expected.seq_relationship_logits)
        <= TOLERANCE
    )


def test_finetuned_classifier_head_loads(tmp_path):
    _tiny_pretraining_checkpoint(str(tmp_path))
    # Add run_classifier.py's head to the checkpoint.
    checkpoint = read_checkpoint(str(tmp_path))
    variables = {
        checkpoint.source_names[n]: (
            checkpoint.tensors[n].T
            if n in checkpoint.transposed
            else checkpoint.tensors[n]
        )
        for n in checkpoint.tensors
    }
    rng = np.random.default_rng(0)
    variables["output_weights"] = rng.normal(size=(3, 16)).astype("float32")
    variables["output_bias"] = rng.normal(size=(3,)).astype("float32")
    with open(tmp_path / "bert_config.json") as file:
        config = json.load(file)
    directory = str(tmp_path / "classifier")
    write_google_checkpoint(directory, variables, config)
    classifier = BertClassifier.from_checkpoint(directory)
    assert classifier.num_classes == 3
    kernel, bias = classifier.output_dense.get_weights()
    np.testing.assert_array_equal(kernel, variables["output_weights"].T)
    np.testing.assert_array_equal(bias, variables["output_bias"])


def test_missing_tensor_is_named_as_google_spells_it(tmp_path):
    reference = _tiny_pretraining_checkpoint(str(tmp_path / "full"))
    state = {k: v.numpy() for k, v in reference.state_dict().items()}
    variables = google_variables(state, 2)
    del variables["bert/encoder/layer_1/attention/self/key/kernel"]
    variables["bert/encoder/layer_0/output/dense/kernel"] = np.zeros(
        (32, 15), "float32"
    )
    with open(tmp_path / "full" / "bert_config.json") as file:
        config = json.load(file)
    write_google_checkpoint(str(tmp_path / "broken"), variables, config)
    with pytest.raises(ValueError) as error:
        BertBackbone.from_checkpoint(str(tmp_path / "broken"))
    message = str(error.value)
    assert "bert/encoder/layer_1/attention/self/key/kernel" in message
    assert "expects shape (16, 16)" in message
    assert "bert/encoder/layer_0/output/dense/kernel" in message
    assert "checkpoint has shape (32, 15), model expects (32, 16)" in message


def test_relu_is_refused(tmp_path):
    _tiny_pretraining_checkpoint(str(tmp_path), hidden_act="relu")
    with pytest.raises(ValueError, match="hidden_act='relu' is not supported"):
        BertBackbone.from_checkpoint(str(tmp_path))


def test_name_mapping_round_trips_for_every_weight():
    from tests.helpers import tiny_backbone_config

    backbone = BertBackbone(**tiny_backbone_config())
    models = [
        BertMaskedLM(backbone),
        BertClassifier(BertBackbone(**tiny_backbone_config()), num_classes=2),
    ]
    for model in models:
        for specs in weight_map(model).values():
            for spec in specs:
                for name in spec.names:
                    google, transposed = huggingface_to_google_name(name)
                    assert google_to_huggingface_name(google) == (
                        name,
                        transposed,
                    )
    assert huggingface_to_google_name(
        "bert.encoder.layer.11.attention.output.LayerNorm.weight"
    ) == ("bert/encoder/layer_11/attention/output/LayerNorm/gamma", False)


def test_truncated_google_data_file(tmp_path):
    _tiny_pretraining_checkpoint(str(tmp_path))
    (data_file,) = tmp_path.glob("bert_model.ckpt.data-*")
    with open(data_file, "r+b") as file:
        file.truncate(os.path.getsize(data_file) // 2)
    with pytest.raises(ValueError, match="truncated or corrupt") as error:
        BertBackbone.from_checkpoint(str(tmp_path))
    assert "bert_model.ckpt" in str(error.value)


def test_checkpoint_prefix_is_accepted(tmp_path):
    """Google's scripts pass `--init_checkpoint=DIR/bert_model.ckpt`."""
    _tiny_pretraining_checkpoint(str(tmp_path))
    from_prefix = BertMaskedLM.from_checkpoint(
        str(tmp_path / "bert_model.ckpt")
    )
    from_directory = BertMaskedLM.from_checkpoint(str(tmp_path))
    for ours, theirs in zip(
        from_prefix.weights, from_directory.weights, strict=True
    ):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
