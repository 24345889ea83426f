"""BertMultipleChoice against transformers.BertForMultipleChoice.

Real all-MiniLM-L6-v2 weights with a drawn, non-zero `classifier` (one
score per choice from the pooler output), in both directions: a
`transformers` checkpoint saved by `save_pretrained` and loaded by us, and
ours saved with `save_huggingface` and loaded by `transformers` (no
missing or unexpected weights). Logits `(questions, choices)` are
compared as the maximum over elements; the inputs are transformers'
tokenizer's, padded to the longest pair, so padding is exercised, and our
own raw-text `predict` (our tokenizer, our packing) is compared too.
"""

import json
import os
import shutil

import numpy as np
import pytest

from tests.checkpoints.conftest import encode_with_huggingface
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers

require_references()

# float32 through six blocks, the pooler and a drawn head, two
# implementations whose kernels sum in different orders.
TOLERANCE = 1e-5

QUESTIONS = [
    "Which river flows through Paris?",
    "Who wrote Germinal?",
    "Où se trouve la tour Eiffel ?",
]
CHOICES = [
    ["The Seine flows through Paris.", "The Thames runs by London.",
     "Lyon sits on the Rhône.", "Nobody swims there."],
    ["Émile Zola wrote Germinal in 1885.", "Victor Hugo wrote poems.",
     "It is about coal miners in the north of France.", "日本語 text."],
    ["Elle est à Paris.", "À Lyon.", "Nulle part 🙂",
     "Dans les Alpes, près du Mont Blanc, selon certains guides."],
]  # fmt: skip
NUM_CHOICES = 4


@pytest.fixture(scope="module")
def choice_inputs(minilm_dir):
    pairs = [
        (question, choice)
        for question, row in zip(QUESTIONS, CHOICES)
        for choice in row
    ]
    inputs = encode_with_huggingface(minilm_dir, [], pairs)
    assert (inputs["padding_mask"] == 0).any(axis=1).sum() >= 6
    return {
        name: value.reshape(len(QUESTIONS), NUM_CHOICES, -1)
        for name, value in inputs.items()
    }


def torch_logits(directory, inputs):
    import torch

    model = transformers.BertForMultipleChoice.from_pretrained(directory).eval()
    with torch.no_grad():
        return model(**torch_inputs(inputs)).logits.numpy()


@pytest.fixture(scope="module")
def torch_choice_dir(minilm_dir, tmp_path_factory):
    """MiniLM as a BertForMultipleChoice with a drawn, saved head."""
    import torch

    model = transformers.BertForMultipleChoice.from_pretrained(minilm_dir)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        model.classifier.weight.copy_(
            torch.randn(model.classifier.weight.shape, generator=generator)
            * 0.2
        )
        model.classifier.bias.copy_(torch.tensor([0.3]))
    directory = str(tmp_path_factory.mktemp("minilm_choice_torch"))
    model.save_pretrained(directory)
    # The vocabulary beside it (transformers 5 saves only tokenizer.json).
    shutil.copy(os.path.join(minilm_dir, "vocab.txt"), directory)
    return directory


def assert_logits_match(ours, expected):
    assert ours.shape == expected.shape == (len(QUESTIONS), NUM_CHOICES)
    diff = max_abs_diff(ours, expected)
    print(f"multiple-choice logits max-abs-diff: {diff}")
    assert diff <= TOLERANCE
    assert np.ptp(expected, axis=1).min() > 0.01  # a real, non-zero head


@pytest.mark.slow
def test_loads_a_transformers_multiple_choice_checkpoint(
    torch_choice_dir, choice_inputs
):
    import keras_bert

    model = keras_bert.BertMultipleChoice.from_checkpoint(torch_choice_dir)
    expected = torch_logits(torch_choice_dir, choice_inputs)
    assert_logits_match(model.predict(choice_inputs, verbose=0), expected)
    # Raw text through our own tokenizer and packing: the same logits.
    assert_logits_match(
        model.predict((QUESTIONS, CHOICES), verbose=0), expected
    )


@pytest.mark.slow
def test_transformers_loads_what_we_save(minilm_dir, choice_inputs, tmp_path):
    import keras_bert

    model = keras_bert.BertMultipleChoice.from_checkpoint(minilm_dir)
    rng = np.random.default_rng(1)
    model.output_dense.kernel.assign(rng.normal(0, 0.2, (384, 1)))
    model.output_dense.bias.assign([-0.25])
    keras_bert.checkpoints.save_huggingface(
        model, model.preprocessor.tokenizer, str(tmp_path)
    )
    with open(tmp_path / "config.json") as file:
        assert json.load(file)["architectures"] == ["BertForMultipleChoice"]
    _, info = transformers.BertForMultipleChoice.from_pretrained(
        str(tmp_path), output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert_logits_match(
        model.predict(choice_inputs, verbose=0),
        torch_logits(str(tmp_path), choice_inputs),
    )
