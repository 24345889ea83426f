"""keras -> Hugging Face -> transformers: same numbers, same parameters,
no missing or unexpected weights."""

import json
import logging
import os
import types

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert import BertMaskedLM
from keras_bert.checkpoints import save_huggingface
from tests.checkpoints.conftest import PAIRS
from tests.checkpoints.conftest import SINGLES
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import run_torch_backbone
from tests.checkpoints.conftest import torch
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers
from tests.helpers import backbone_inputs
from tests.helpers import tiny_backbone_config

require_references()

TOLERANCE = 1e-5


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _load_with_report(transformers_class, path):
    """Loads with transformers; asserts it warned about nothing."""
    records = _Records()
    logger = logging.getLogger("transformers")
    logger.addHandler(records)
    try:
        model, info = transformers_class.from_pretrained(
            path, output_loading_info=True
        )
    finally:
        logger.removeHandler(records)
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        assert not info[key], f"{key}: {sorted(info[key])}"
    assert not info["error_msgs"]
    assert not records.messages, records.messages
    return model.eval()


def _parameter_count(model):
    return sum(p.numel() for p in model.parameters())


def _randomize(model, seed=0):
    """Random values in every variable (biases and LayerNorm included)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(
            rng.normal(0, 0.2, variable.shape).astype(variable.dtype)
        )


def _tiny_inputs():
    return backbone_inputs(batch_size=3, sequence_length=8, seed=2)


@pytest.fixture(scope="module")
def minilm_export(minilm_dir, minilm_backbone, tmp_path_factory):
    from keras_bert import BertTokenizer

    tokenizer = BertTokenizer.from_checkpoint(minilm_dir)
    path = str(tmp_path_factory.mktemp("minilm_hf"))
    save_huggingface(minilm_backbone, tokenizer, path)
    return path


def test_minilm_round_trip_matches(
    minilm_export, minilm_backbone, minilm_inputs
):
    reference = _load_with_report(transformers.BertModel, minilm_export)
    assert _parameter_count(reference) == minilm_backbone.count_params()
    expected_sequence, expected_pooled = run_torch_backbone(
        reference, minilm_inputs
    )
    outputs = minilm_backbone(minilm_inputs, training=False)
    real = minilm_inputs["padding_mask"].astype(bool)
    sequence_diff = max_abs_diff(
        outputs["sequence_output"].numpy()[real], expected_sequence[real]
    )
    pooled_diff = max_abs_diff(outputs["pooled_output"], expected_pooled)
    print(f"keras->HF->transformers sequence_output: {sequence_diff}")
    print(f"keras->HF->transformers pooled_output: {pooled_diff}")
    assert sequence_diff <= TOLERANCE
    assert pooled_diff <= TOLERANCE


def test_minilm_export_reproduces_the_original_tensors(
    minilm_dir, minilm_export
):
    original = load_file(os.path.join(minilm_dir, "model.safetensors"))
    original.pop("embeddings.position_ids")  # a buffer, not a weight
    exported = load_file(os.path.join(minilm_export, "model.safetensors"))
    assert sorted(exported) == sorted(original)
    for name, tensor in original.items():
        np.testing.assert_array_equal(exported[name], tensor, err_msg=name)


def test_minilm_tokenizer_files_tokenize_identically(minilm_dir, minilm_export):
    from keras_bert import BertTokenizer

    original = transformers.AutoTokenizer.from_pretrained(minilm_dir)
    exported = transformers.AutoTokenizer.from_pretrained(minilm_export)
    first = SINGLES + [a for a, _ in PAIRS]
    second = [None] * len(SINGLES) + [b for _, b in PAIRS]
    for a, b in zip(first, second):
        assert exported(a, b)["input_ids"] == original(a, b)["input_ids"]
    ours = BertTokenizer.from_checkpoint(minilm_export)
    assert ours.lowercase is True
    assert list(ours.vocabulary) == list(
        BertTokenizer.from_checkpoint(minilm_dir).vocabulary
    )


def test_exported_config(minilm_export):
    with open(os.path.join(minilm_export, "config.json")) as file:
        config = json.load(file)
    assert config["architectures"] == ["BertModel"]
    assert config["hidden_act"] == "gelu"
    assert config["layer_norm_eps"] == 1e-12
    assert config["num_hidden_layers"] == 6


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_masked_lm_round_trip(tmp_path, activation):
    backbone = BertBackbone(**tiny_backbone_config(activation=activation))
    model = BertMaskedLM(backbone)
    _randomize(model)
    save_huggingface(model, None, str(tmp_path))
    reference = _load_with_report(
        transformers.BertForPreTraining, str(tmp_path)
    )
    assert _parameter_count(reference) == model.count_params()
    inputs = _tiny_inputs()
    positions = np.tile(np.arange(8, dtype="int32"), (3, 1))
    outputs = model({**inputs, "masked_positions": positions})
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs))
    real = inputs["padding_mask"].astype(bool)
    mlm = keras.ops.convert_to_numpy(outputs["mlm_logits"])
    assert (
        max_abs_diff(mlm[real], expected.prediction_logits.numpy()[real])
        <= TOLERANCE
    )
    assert (
        max_abs_diff(outputs["nsp_logits"], expected.seq_relationship_logits)
        <= TOLERANCE
    )

    # And back: keras -> HF -> keras is exact.
    reloaded = BertMaskedLM.from_checkpoint(str(tmp_path))
    assert reloaded.backbone.activation == activation
    for ours, theirs in zip(reloaded.weights, model.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("num_classes", [1, 3])
def test_classifier_round_trip(tmp_path, num_classes):
    classifier = BertClassifier(
        BertBackbone(**tiny_backbone_config()), num_classes=num_classes
    )
    _randomize(classifier)
    save_huggingface(classifier, None, str(tmp_path))
    reference = _load_with_report(
        transformers.BertForSequenceClassification, str(tmp_path)
    )
    assert reference.config.num_labels == num_classes
    assert _parameter_count(reference) == classifier.count_params()
    inputs = _tiny_inputs()
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs)).logits
    assert max_abs_diff(classifier(inputs), expected) <= TOLERANCE
    reloaded = BertClassifier.from_checkpoint(str(tmp_path))
    assert reloaded.num_classes == num_classes
    for ours, theirs in zip(reloaded.weights, classifier.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_label_names_are_written_as_id2label(tmp_path):
    classifier = BertClassifier(
        BertBackbone(**tiny_backbone_config()),
        num_classes=2,
        label_names=["negative", "positive"],
    )
    save_huggingface(classifier, None, str(tmp_path))
    with open(tmp_path / "config.json") as file:
        config = json.load(file)
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    assert config["label2id"] == {"negative": 0, "positive": 1}


def test_refuses_other_models(tmp_path):
    with pytest.raises(TypeError, match="received an object of type Dense"):
        save_huggingface(keras.layers.Dense(2), None, str(tmp_path))


def test_vocabulary_without_special_tokens_is_refused_before_writing(
    tmp_path,
):
    # Any object with the tokenizer's attributes is accepted.
    tokenizer = types.SimpleNamespace(
        vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"],
        lowercase=True,
        strip_accents=None,
    )
    backbone = BertBackbone(**tiny_backbone_config())
    with pytest.raises(ValueError, match=r"has no \[MASK\]"):
        save_huggingface(backbone, tokenizer, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
