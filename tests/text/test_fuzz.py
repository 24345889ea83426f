"""Random bytes and text through tokenize -> pack: no crash, invariants hold.

Each hypothesis example is a batch of `BATCH` strings: the pair test packs
`2 * EXAMPLES * BATCH` = 20,000 random strings, the parity test compares
10,000 with the Rust tokenizer, the single-text test packs 5,000.
"""

import collections
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import keras_bert
from tests.text import references

BATCH = 25
EXAMPLES = 400
SEQUENCE_LENGTH = 24

# Mostly short strings, from every Unicode plane and from raw bytes.
any_text = st.text(max_size=60) | st.text(
    st.characters(codec="utf-8"), max_size=300
)
raw_bytes = st.binary(max_size=120)
string_batches = st.lists(any_text | raw_bytes, min_size=BATCH, max_size=BATCH)
fuzz_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
seen = collections.Counter()  # strings per test
EXPECTED = {
    "single": EXAMPLES // 2 * BATCH,
    "pairs": 2 * EXAMPLES * BATCH,
    "parity": EXAMPLES * BATCH,
}


@pytest.fixture(scope="module")
def preprocessor():
    # Special tokens written in the text are treated as plain text here, so
    # that [CLS] and [SEP] appear only where packing puts them.
    tokenizer = keras_bert.BertTokenizer(
        references.minilm_vocab_path(), special_tokens_in_strings=False
    )
    return keras_bert.BertPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH
    )


def to_array(strings):
    return np.array(
        [s.encode("utf-8") if isinstance(s, str) else s for s in strings],
        dtype=object,
    )


def check_invariants(outputs, tokenizer, num_segments):
    token_ids = outputs["token_ids"].numpy()
    segment_ids = outputs["segment_ids"].numpy()
    padding_mask = outputs["padding_mask"].numpy()
    assert token_ids.shape == (BATCH, SEQUENCE_LENGTH)
    assert segment_ids.shape == padding_mask.shape == token_ids.shape
    assert token_ids.min() >= 0
    assert token_ids.max() < tokenizer.vocabulary_size()
    assert np.all(token_ids[:, 0] == tokenizer.cls_token_id)
    num_sep = (token_ids == tokenizer.sep_token_id).sum(axis=1)
    assert np.all(num_sep == num_segments)
    lengths = padding_mask.sum(axis=1)
    positions = np.arange(SEQUENCE_LENGTH)[None, :]
    real = positions < lengths[:, None]
    np.testing.assert_array_equal(padding_mask, real.astype("int32"))
    assert np.all(token_ids[~real] == tokenizer.pad_token_id)
    assert np.all(segment_ids[~real] == 0)
    assert np.all(token_ids[:, 1:] != tokenizer.cls_token_id)
    last = token_ids[np.arange(BATCH), lengths - 1]
    assert np.all(last == tokenizer.sep_token_id)
    # Segment 0 up to and including the first [SEP], then segment 1.
    first_sep = np.argmax(token_ids == tokenizer.sep_token_id, axis=1)
    expected = (num_segments == 2) & (positions > first_sep[:, None]) & real
    np.testing.assert_array_equal(segment_ids, expected.astype("int32"))


@settings(fuzz_settings, max_examples=EXAMPLES // 2)
@given(string_batches)
def test_fuzz_single_texts(preprocessor, strings):
    outputs = preprocessor(to_array(strings))
    check_invariants(outputs, preprocessor.tokenizer, num_segments=1)
    seen["single"] += len(strings)


@fuzz_settings
@given(string_batches, string_batches)
def test_fuzz_pairs(preprocessor, firsts, seconds):
    outputs = preprocessor((to_array(firsts), to_array(seconds)))
    check_invariants(outputs, preprocessor.tokenizer, num_segments=2)
    seen["pairs"] += len(firsts) + len(seconds)


text_batches = st.lists(any_text, min_size=BATCH, max_size=BATCH)


@fuzz_settings
@given(text_batches)
def test_fuzz_matches_reference(strings):
    """Random Unicode text: ids equal to the Rust tokenizer's."""
    tokenizer, reference = _parity_pair()
    ours = tokenizer(strings).to_list()
    theirs = reference.encode_batch(strings, add_special_tokens=False)
    assert ours == [t.ids for t in theirs]
    seen["parity"] += len(strings)


@functools.lru_cache(maxsize=1)
def _parity_pair():
    path = references.minilm_vocab_path()
    return (
        keras_bert.BertTokenizer(path),
        references.reference_tokenizer(path),
    )


def test_fuzz_tests_saw_every_string():
    # Runs last in this file: each fuzz test above that ran saw all its
    # examples (35,000 strings in all).
    if not seen:
        pytest.skip("run with the fuzz tests above")
    for name, count in seen.items():
        assert count >= EXPECTED[name], (name, count)
