"""A multi-label BertClassifier against transformers'
`BertForSequenceClassification(problem_type="multi_label_classification")`.

Real all-MiniLM-L6-v2 weights with a non-zero 4-label head (drawn with a
fixed seed), both ways through a save and a load: a `transformers`
checkpoint loaded by us (by class and by `"auto"`: `problem_type` makes
the model multi-label, `id2label` names the labels), and ours saved with
`save_huggingface` and loaded by `transformers` (no missing or unexpected
weights, the same `problem_type` and names). Logits are compared as the
maximum over elements, singles and pairs with padding.
"""

import json

import numpy as np
import pytest

from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers

require_references()

TOLERANCE = 1e-5
# Larger than a fine-tuned head's scale (std 0.02), small enough that the
# backbone's float32 rounding, scaled by the head, stays under TOLERANCE.
HEAD_STDDEV = 0.05
NAMES = ["LOC", "MISC", "ORG", "PER"]
PROBLEM = "multi_label_classification"


def torch_logits(directory, inputs):
    import torch

    model = transformers.BertForSequenceClassification.from_pretrained(
        directory
    ).eval()
    assert model.config.problem_type == PROBLEM
    with torch.no_grad():
        return model(**torch_inputs(inputs)).logits.numpy()


def assert_logits_match(model, inputs, expected):
    ours = model(inputs, training=False).numpy()
    assert ours.shape == expected.shape == (len(inputs["token_ids"]), 4)
    diff = max_abs_diff(ours, expected)
    print(f"multi-label logits max-abs-diff over {ours.size}: {diff}")
    assert diff <= TOLERANCE
    assert np.abs(expected).max() > 0.1  # a real, non-zero head


@pytest.mark.slow
def test_loads_a_transformers_multi_label_checkpoint(
    minilm_dir, minilm_inputs, tmp_path
):
    import torch

    import keras_bert

    reference = transformers.BertForSequenceClassification.from_pretrained(
        minilm_dir, num_labels=4, problem_type=PROBLEM,
        id2label=dict(enumerate(NAMES)),
        label2id={name: i for i, name in enumerate(NAMES)},
    )  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        reference.classifier.weight.copy_(
            torch.randn(reference.classifier.weight.shape, generator=generator)
            * HEAD_STDDEV
        )
        reference.classifier.bias.copy_(torch.tensor([-0.3, 0.1, 0.2, -0.1]))
    reference.save_pretrained(str(tmp_path))
    expected = torch_logits(str(tmp_path), minilm_inputs)

    model = keras_bert.BertClassifier.from_checkpoint(str(tmp_path))
    assert model.multi_label and model.label_names == NAMES
    assert model.thresholds == [0.5] * 4
    assert_logits_match(model, minilm_inputs, expected)
    auto = keras_bert.checkpoints.load_checkpoint(str(tmp_path), "auto")
    assert type(auto) is keras_bert.BertClassifier and auto.multi_label
    assert_logits_match(auto, minilm_inputs, expected)


@pytest.mark.slow
def test_transformers_loads_what_we_save(minilm_dir, minilm_inputs, tmp_path):
    import keras_bert

    model = keras_bert.BertClassifier.from_checkpoint(
        minilm_dir, num_classes=4, multi_label=True, label_names=NAMES
    )
    rng = np.random.default_rng(1)
    model.output_dense.kernel.assign(rng.normal(0, HEAD_STDDEV, (384, 4)))
    model.output_dense.bias.assign(rng.normal(0, 0.3, (4,)))
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    keras_bert.checkpoints.save_huggingface(model, tokenizer, str(tmp_path))
    with open(tmp_path / "config.json") as file:
        config = json.load(file)
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["problem_type"] == PROBLEM

    torch_model, info = (
        transformers.BertForSequenceClassification.from_pretrained(
            str(tmp_path), output_loading_info=True
        )
    )
    assert not any(info.values()), info
    assert torch_model.config.id2label == dict(enumerate(NAMES))
    assert_logits_match(
        model, minilm_inputs, torch_logits(str(tmp_path), minilm_inputs)
    )
