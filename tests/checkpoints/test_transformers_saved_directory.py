"""A directory the installed `transformers` saves (`save_pretrained` of the
real MiniLM model and tokenizer) loads with its tokenizer.

`transformers` 5 writes `tokenizer.json` and `tokenizer_config.json` and no
`vocab.txt`: the vocabulary then comes from `tokenizer.json`, and must give
the ids of MiniLM's own `vocab.txt` and of `transformers`' tokenizer.
"""

import os

import numpy as np
import pytest

import keras_bert
from tests.checkpoints.conftest import SINGLES
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import transformers

require_references()

SST2_DEV = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "glue", "SST-2",
    "dev.tsv",
)  # fmt: skip


@pytest.fixture(scope="module")
def texts():
    if not os.path.exists(SST2_DEV):
        pytest.skip(f"needs the GLUE SST-2 dev set at {SST2_DEV}")
    with open(SST2_DEV, encoding="utf-8") as file:
        rows = file.read().splitlines()[1:201]
    # Real sentences, then accents, CJK, emoji and special-token text.
    return [row.split("\t")[0] for row in rows] + SINGLES


@pytest.fixture(scope="module")
def saved_dir(minilm_dir, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("transformers_saved"))
    transformers.AutoModel.from_pretrained(minilm_dir).save_pretrained(
        directory
    )
    transformers.AutoTokenizer.from_pretrained(minilm_dir).save_pretrained(
        directory
    )
    names = set(os.listdir(directory))
    assert {"tokenizer.json", "config.json", "model.safetensors"} <= names
    if "vocab.txt" in names:  # transformers 4 writes one: read the other
        os.remove(os.path.join(directory, "vocab.txt"))
    return directory


def test_ids_equal_vocab_txt_and_transformers(saved_dir, minilm_dir, texts):
    from_json = keras_bert.BertTokenizer.from_checkpoint(saved_dir)
    from_vocab_txt = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    assert from_json.get_vocabulary() == from_vocab_txt.get_vocabulary()
    config = {**from_json.get_config(), "name": None}
    assert config == {**from_vocab_txt.get_config(), "name": None}
    ids = from_json(texts).to_list()
    assert ids == from_vocab_txt(texts).to_list()
    reference = transformers.AutoTokenizer.from_pretrained(saved_dir)
    expected = reference(texts, add_special_tokens=False)["input_ids"]
    assert ids == expected


def test_a_task_model_attaches_the_preprocessor_and_predicts(saved_dir, texts):
    model = keras_bert.BertClassifier.from_checkpoint(
        saved_dir, num_classes=2, sequence_length=64
    )
    assert model.preprocessor is not None
    texts = texts[:16]
    reference = transformers.AutoTokenizer.from_pretrained(saved_dir)
    encoded = reference(
        texts, padding="max_length", truncation=True, max_length=64
    )
    ids = {
        "token_ids": np.array(encoded["input_ids"], "int32"),
        "segment_ids": np.array(encoded["token_type_ids"], "int32"),
        "padding_mask": np.array(encoded["attention_mask"], "int32"),
    }
    packed = model.preprocessor(texts)
    for name, expected in ids.items():
        np.testing.assert_array_equal(packed[name].numpy(), expected)
    # Text in, the outputs of transformers' ids out.
    np.testing.assert_allclose(
        model.predict(texts, verbose=0),
        model(ids, training=False).numpy(),
        atol=1e-5,
    )
