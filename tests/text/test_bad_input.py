"""Hostile input: invalid UTF-8, NUL bytes, megabyte strings, mixed batches.

Documented behaviour: invalid UTF-8 sequences are decoded as U+FFFD, which
BERT's text cleaning drops (so `b"fo\\xffx"` reads as `"fox"`), exactly
what Hugging Face does with `bytes.decode("utf-8", "replace")`; NUL is a
control character and is dropped too. Nothing raises and nothing hangs.
"""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests.text import references

MEGABYTE = 1 << 20


@pytest.fixture(scope="module")
def tokenizer():
    return keras_bert.BertTokenizer(references.minilm_vocab_path())


@pytest.fixture(scope="module")
def reference():
    return references.reference_tokenizer(references.minilm_vocab_path())


def megabyte_strings():
    return {
        "words": ("the quick brown fox jumps. " * 40000)[:MEGABYTE],
        "one_word": "x" * MEGABYTE,
        "punctuation": "!?." * (MEGABYTE // 3),
        "cjk": "日本語" * (MEGABYTE // 9),
        "hangul_and_accents": "한국어 café " * (MEGABYTE // 16),
        "whitespace": " \u3000\u00a0\n" * (MEGABYTE // 7),
        "invisible": "\u200b\x00\ufeff" * (MEGABYTE // 7),
    }


@pytest.mark.parametrize("name", sorted(megabyte_strings()))
def test_megabyte_strings_match_reference(tokenizer, reference, name):
    text = megabyte_strings()[name]
    ours = tokenizer(text).numpy().tolist()
    assert ours == reference.encode(text, add_special_tokens=False).ids


def test_batch_mixing_empty_and_huge(tokenizer, reference):
    huge = "tokenization of a long document " * 30000
    batch = ["", huge, "", " ", "a", huge[:1000], "", "x" * 200000]
    ours = tokenizer(batch).to_list()
    theirs = reference.encode_batch(batch, add_special_tokens=False)
    assert ours == [t.ids for t in theirs]
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=16)
    outputs = preprocessor((batch, batch[::-1]))
    assert outputs["token_ids"].shape == (len(batch), 16)


def test_invalid_utf8_and_nul_bytes(tokenizer):
    fox = tokenizer("fox").numpy().tolist()
    for raw in [b"fo\xffx", b"f\x00ox", b"\xc3fox", b"fox\xf0\x9f", b"f\xedox"]:
        assert tokenizer(raw).numpy().tolist() == fox, raw
    everything_invalid = bytes(range(0x80, 0x100)) * 100
    assert tokenizer(everything_invalid).numpy().tolist() == []
    all_bytes = np.array([bytes([b]) for b in range(256)], dtype=object)
    assert tokenizer(all_bytes).shape[0] == 256


def test_empty_batch(tokenizer):
    assert tokenizer(np.array([], dtype=object)).to_list() == []
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=8)
    outputs = preprocessor(np.array([], dtype=object))
    assert outputs["token_ids"].shape == (0, 8)


@pytest.mark.parametrize("as_list", [True, False])
def test_big_eager_batches_are_made_in_chunks_with_the_same_result(
    monkeypatch, as_list
):
    """Many strings in one eager call are tokenized a chunk at a time (so
    that memory stays bounded, benchmarks/tokenizer_memory.py): the result
    is that of one call, for ids, offsets, single texts and pairs."""
    from keras_bert.text import bert_tokenizer

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    vocabulary += ["##b", "c", "."]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=6)
    texts = ["a bb c.", "", "c c c c c c c", "ab", "b. a", "x", "a"] * 3
    other = list(reversed(texts))

    def run():
        inputs = texts if as_list else tf.constant(texts)
        pair = other if as_list else tf.constant(other)
        return (
            tokenizer(inputs),
            tokenizer.tokenize_with_offsets(inputs),
            preprocessor(inputs),
            preprocessor((inputs, pair)),
        )

    whole = run()
    monkeypatch.setattr(bert_tokenizer, "EAGER_CHUNK", 4)
    calls = []
    concat = bert_tokenizer.concat_chunks
    monkeypatch.setattr(
        bert_tokenizer,
        "concat_chunks",
        lambda *a: calls.append(1) or concat(*a),
    )
    chunked = run()
    assert calls  # it did go in chunks
    flat = tf.nest.flatten(whole, expand_composites=True)
    for a, b in zip(flat, tf.nest.flatten(chunked, expand_composites=True)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
