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
    that memory stays bounded, RESULTS.md's `tokenizer_memory`): the result
    is that of one call, for ids, offsets, single texts and pairs, and each
    of the four calls does go through the chunks."""
    from keras_bert.text import eager_chunks

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    vocabulary += ["##b", "c", "."]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=6)
    texts = ["a bb c.", "", "c c c c c c c", "ab", "b. a", "x", "a"] * 3
    other = list(reversed(texts))
    inputs = texts if as_list else tf.constant(texts)
    pair = other if as_list else tf.constant(other)
    calls = {
        "tokenizer": lambda: tokenizer(inputs),
        "tokenize_with_offsets": lambda: tokenizer.tokenize_with_offsets(
            inputs
        ),
        "preprocessor": lambda: preprocessor(inputs),
        "preprocessor pair": lambda: preprocessor((inputs, pair)),
    }

    whole = {name: call() for name, call in calls.items()}
    monkeypatch.setattr(eager_chunks, "EAGER_CHUNK", 4)
    chunked_calls = []
    concat = eager_chunks.concat_chunks
    monkeypatch.setattr(
        eager_chunks,
        "concat_chunks",
        lambda *a: chunked_calls.append(1) or concat(*a),
    )
    for name, call in calls.items():
        chunked_calls.clear()
        chunked = call()
        assert chunked_calls, f"{name} did not go in chunks"
        flat = tf.nest.flatten(whole[name], expand_composites=True)
        chunked = tf.nest.flatten(chunked, expand_composites=True)
        assert len(flat) == len(chunked)
        for a, b in zip(flat, chunked):
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_chunks_are_let_go_as_they_are_joined(monkeypatch):
    """`concat_chunks` copies each chunk's result into the joined output
    and drops it before making the next: no earlier chunk's tensors are
    alive when a chunk is made, so memory never holds every chunk's result
    beside the joined one. Dense and ragged results, any structure, join
    as `tf.concat` would."""
    import weakref

    from keras_bert.text import eager_chunks

    monkeypatch.setattr(eager_chunks, "EAGER_CHUNK", 3)

    def make(texts):
        ids = tf.ragged.constant(
            [[ord(c) for c in text] for text in texts], tf.int32
        )
        lengths = tf.constant([[len(t), -len(t)] for t in texts], tf.int64)
        return {"ids": ids, "pair": (lengths, ids * 2)}

    alive = []

    def function(texts):
        assert all(ref() is None for ref in alive), "an earlier chunk lives"
        outputs = make(texts)
        alive.extend(
            weakref.ref(t)
            for t in tf.nest.flatten(outputs, expand_composites=True)
        )
        return outputs

    texts = ["ab", "", "cde", "f", "", "", "ghij", "k"]
    joined = eager_chunks.concat_chunks(function, texts)
    assert len(alive) == 3 * 5  # three chunks of five tensors
    expected = [make(texts[start : start + 3]) for start in range(0, 8, 3)]
    expected = tf.nest.map_structure(
        lambda *parts: tf.concat(parts, axis=0), *expected
    )
    assert isinstance(joined["ids"], tf.RaggedTensor)
    for a, b in zip(
        tf.nest.flatten(expected, expand_composites=True),
        tf.nest.flatten(joined, expand_composites=True),
    ):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("resizable", [True, False])
def test_joined_rows_become_a_tensor_without_a_copy(monkeypatch, resizable):
    """The joined output is written once, in memory TensorFlow then takes
    as the tensor's own buffer: no second copy of the output exists, also
    after the buffer grew past its first guess. Without mremap (macOS, the
    BSDs; `resizable=False`) a full buffer moves to a bigger map instead of
    growing in place, with the same result."""
    from keras_bert.text import eager_chunks

    if not resizable:
        monkeypatch.setattr(eager_chunks, "_resize_map", lambda *args: False)
    rows = eager_chunks._GrowingArray(tf.int32, (2,), capacity=1)
    for start in range(0, 6000, 2000):
        rows.append(np.arange(start, start + 2000).reshape(1000, 2))
    tensor = rows.to_tensor()
    np.testing.assert_array_equal(
        tensor.numpy(), np.arange(6000).reshape(3000, 2)
    )
    # Writing the buffer changes the tensor: they are the same memory.
    np.frombuffer(rows._map, np.int32, 1)[0] = -7
    assert tensor.numpy()[0, 0] == -7
