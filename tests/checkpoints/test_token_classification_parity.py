"""BertTokenClassifier against transformers.BertForTokenClassification.

Real all-MiniLM-L6-v2 weights with a non-zero 9-tag head (CoNLL-2003 tags,
drawn with a fixed seed and saved), in both directions: a `transformers`
checkpoint loaded by us (by class and by `"auto"`), and ours saved with
`save_huggingface` and loaded by `transformers` with no missing or
unexpected weights. Logits are compared, as the maximum over elements, at
every non-padding position; the label names travel as `id2label`.
"""

import json

import numpy as np
import pytest

from tests.checkpoints.conftest import encode_with_huggingface
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers

require_references()

TOLERANCE = 1e-5
# The drawn head's weight scale: larger than a fine-tuned tagger's (whose
# kernel starts at std `initializer_range`, 0.02, and stays near it), yet
# small enough for TOLERANCE: the backbone's float32 rounding reaches the
# logits scaled by the head, and a head several times larger would take it
# past TOLERANCE on its own.
HEAD_STDDEV = 0.05

TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
TAGS += ["B-MISC", "I-MISC"]

SENTENCES = [
    "Émile Zola lived in Paris, France.",
    "Angela Merkel met Barack Obama in Berlin on 12 May 2015.",
    "北京是中国的首都。",
    "Three 🐈 cats from São Paulo sat on the mat 😀.",
    "The United Nations headquarters is in New York City. " * 3,
    "Ok.",
]
PAIRS = [("Où est la gare?", "La gare est à côté de l'église.")]


@pytest.fixture(scope="module")
def tagging_inputs(minilm_dir):
    inputs = encode_with_huggingface(minilm_dir, SENTENCES, PAIRS)
    assert (inputs["padding_mask"] == 0).any()  # real padding
    return inputs


@pytest.fixture(scope="module")
def torch_tagger_dir(minilm_dir, tmp_path_factory):
    """MiniLM as a BertForTokenClassification with a drawn, saved head."""
    import torch

    model = transformers.BertForTokenClassification.from_pretrained(
        minilm_dir,
        num_labels=len(TAGS),
        id2label=dict(enumerate(TAGS)),
        label2id={tag: i for i, tag in enumerate(TAGS)},
    )
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        model.classifier.weight.copy_(
            torch.randn(model.classifier.weight.shape, generator=generator)
            * HEAD_STDDEV
        )
        model.classifier.bias.copy_(torch.linspace(-0.4, 0.4, len(TAGS)) + 0.05)
    directory = str(tmp_path_factory.mktemp("minilm_tagger_torch"))
    model.save_pretrained(directory)
    return directory


def torch_logits(directory, inputs):
    import torch

    model = transformers.BertForTokenClassification.from_pretrained(
        directory
    ).eval()
    with torch.no_grad():
        return model(**torch_inputs(inputs)).logits.numpy()


def assert_logits_match(model, inputs, expected):
    ours = model(inputs, training=False).numpy()
    assert ours.shape == expected.shape == (*inputs["token_ids"].shape, 9)
    real = inputs["padding_mask"] == 1
    diff = max_abs_diff(ours[real], expected[real])
    print(f"logits max-abs-diff at {real.sum()} non-padding positions: {diff}")
    assert diff <= TOLERANCE
    assert np.abs(expected[real]).max() > 0.1  # a real, non-zero head
    return diff


def test_loads_a_transformers_token_classification_checkpoint(
    torch_tagger_dir, tagging_inputs
):
    from keras_bert import BertTokenClassifier

    model = BertTokenClassifier.from_checkpoint(torch_tagger_dir)
    assert model.num_classes == len(TAGS)
    assert model.labels == TAGS
    assert_logits_match(
        model, tagging_inputs, torch_logits(torch_tagger_dir, tagging_inputs)
    )


def test_auto_loads_a_transformers_checkpoint_as_a_token_classifier(
    torch_tagger_dir, tagging_inputs
):
    import keras_bert

    model = keras_bert.checkpoints.load_checkpoint(torch_tagger_dir, "auto")
    assert type(model) is keras_bert.BertTokenClassifier
    assert model.labels == TAGS
    assert_logits_match(
        model, tagging_inputs, torch_logits(torch_tagger_dir, tagging_inputs)
    )


def test_transformers_loads_what_we_save(minilm_dir, tagging_inputs, tmp_path):
    import keras_bert

    model = keras_bert.BertTokenClassifier.from_checkpoint(
        minilm_dir, labels=TAGS
    )
    rng = np.random.default_rng(1)
    model.output_dense.kernel.assign(
        rng.normal(0, HEAD_STDDEV, (384, len(TAGS)))
    )
    model.output_dense.bias.assign(rng.normal(0, 0.3, (len(TAGS),)))
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    keras_bert.checkpoints.save_huggingface(model, tokenizer, str(tmp_path))
    with open(tmp_path / "config.json") as file:
        config = json.load(file)
    assert config["architectures"] == ["BertForTokenClassification"]

    torch_model, info = transformers.BertForTokenClassification.from_pretrained(
        str(tmp_path), output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert not info["mismatched_keys"], info
    assert torch_model.config.id2label == dict(enumerate(TAGS))
    assert torch_model.config.label2id == {t: i for i, t in enumerate(TAGS)}
    assert torch_model.num_labels == len(TAGS)
    assert_logits_match(
        model, tagging_inputs, torch_logits(str(tmp_path), tagging_inputs)
    )
