import json
import os
import subprocess
import sys

import pytest

import keras_bert
from keras_bert.text import vocabulary as vocabulary_lib
from tests.text import references

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def test_load_trims_line_ends_like_hugging_face(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\r\n[UNK]  \nfox\n")
    assert vocabulary_lib.load_vocabulary(str(path)) == [
        "[PAD]",
        "[UNK]",
        "fox",
    ]


def test_save_then_load(tmp_path):
    tokens = ["[PAD]", "[UNK]", "日本", "##é"]
    path = str(tmp_path / "sub" / "vocab.txt")
    vocabulary_lib.save_vocabulary(tokens, path)
    assert vocabulary_lib.load_vocabulary(path) == tokens


def test_bad_vocabularies_are_refused():
    with pytest.raises(ValueError, match="empty"):
        vocabulary_lib.check_vocabulary([])
    with pytest.raises(ValueError, match="entry 1 is ' fox'"):
        vocabulary_lib.check_vocabulary(["a", " fox"])


def test_build_vocabulary_layout():
    texts = ["The quick brown fox.", "Foxes jump; dogs don't!"] * 50
    vocabulary = keras_bert.text.build_vocabulary(
        texts, vocabulary_size=60, reserved_tokens=2
    )
    assert vocabulary[:7] == [
        "[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ]  # fmt: skip
    # Every character of the (lower-cased) corpus, and continuation pieces.
    for char in "thequickbrownfx.;!'":
        assert char in vocabulary
    assert any(t.startswith("##") for t in vocabulary)
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    ids = tokenizer(texts).flat_values.numpy()
    assert tokenizer.unk_token_id not in ids
    with pytest.raises(ValueError, match="vocabulary_size=3"):
        keras_bert.text.build_vocabulary(texts, vocabulary_size=3)


def run_recipe(files, vocab_size, output):
    """Runs recipes/build_vocab.py, holding out every 10th line."""
    subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "recipes", "build_vocab.py"),
            "--input=" + ",".join(files),
            f"--vocab_size={vocab_size}",
            "--held_out_fraction=0.1",
            f"--output={output}",
        ],
        check=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO),
    )
    with open(output + ".json") as f:
        return json.load(f)


def test_learned_from_real_corpus_covers_held_out_files():
    """Learned from a slice of Python's docs; tested on other files."""
    files = references.python_doc_files()
    train = [line for path in files[::40] for line in references.read(path)]
    held_out = [
        line for path in files[13::40] for line in references.read(path)
    ]
    vocabulary = keras_bert.text.build_vocabulary(train, 1000)
    assert len(vocabulary) > 500
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    ids = tokenizer(held_out).flat_values.numpy()
    assert ids.size > 10_000
    assert (ids == tokenizer.unk_token_id).mean() < 0.01


@pytest.mark.slow
def test_recipe_on_real_corpus_has_few_unknowns(tmp_path):
    """recipes/build_vocab.py end to end, held-out lines of the corpus."""
    output = str(tmp_path / "vocab.txt")
    files = references.python_doc_files()[::20]
    results = run_recipe(files, 2000, output)
    assert results["words"] > 50_000
    assert results["held_out_tokens"] > 5_000
    assert results["held_out_unk_rate"] < 0.01
    vocabulary = vocabulary_lib.load_vocabulary(output)
    assert len(vocabulary) == results["vocabulary_size"] > 1000
