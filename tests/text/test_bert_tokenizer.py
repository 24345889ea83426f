import json
import os
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.text import bert_tokenizer
from tests.helpers import assert_config_complete
from tests.helpers import run_serialization_test
from tests.text.references import TINY_VOCABULARY


@pytest.fixture(scope="module")
def tokenizer():
    return keras_bert.BertTokenizer(TINY_VOCABULARY)


def ids(tokenizer, text):
    return tokenizer(text).numpy().tolist()


def test_hand_tokenized_sentence(tokenizer):
    # the quick brown fox ##es jump ##ed . (worked out from TINY_VOCABULARY)
    assert ids(tokenizer, "The quick brown foxes jumped.") == [
        5, 6, 7, 8, 9, 15, 16, 10,
    ]  # fmt: skip


def test_batch_is_ragged_int32(tokenizer):
    out = tokenizer(["the fox", "", "a b ab"])
    assert isinstance(out, tf.RaggedTensor)
    assert out.dtype == tf.int32
    assert out.to_list() == [[5, 8], [], [13, 1, 13, 14]]


def test_unknown_word_is_one_unk(tokenizer):
    # "foxy" splits as fox + ##y, but ##y is missing: the whole word is [UNK].
    assert ids(tokenizer, "foxy fox") == [1, 8]


def test_accents_stripped_when_lowercase(tokenizer):
    assert ids(tokenizer, "É") == [21]
    cased = keras_bert.BertTokenizer(TINY_VOCABULARY, lowercase=False)
    assert ids(cased, "é") == [20]
    assert ids(cased, "The") == [1]


def test_strip_accents_overrides_lowercase():
    keep = keras_bert.BertTokenizer(TINY_VOCABULARY, strip_accents=False)
    assert ids(keep, "É") == [20]


def test_cjk_characters_are_words(tokenizer):
    assert ids(tokenizer, "日本") == [22, 23]


def test_whitespace_and_invisible_characters(tokenizer):
    # No-break and ideographic spaces split; zero-width space and soft
    # hyphen are dropped, joining the word.
    assert ids(tokenizer, "the\u00a0fox\u3000dog") == [5, 8, 19]
    assert ids(tokenizer, "fo\u200bx\u00ades") == [8, 9]


def test_word_length_limit():
    tokenizer = keras_bert.BertTokenizer(
        TINY_VOCABULARY, max_input_chars_per_word=3
    )
    assert ids(tokenizer, "fox foxes") == [8, 1]


def test_special_tokens_in_text(tokenizer):
    assert ids(tokenizer, "the [MASK] fox[SEP]") == [5, 4, 8, 3]
    plain = keras_bert.BertTokenizer(
        TINY_VOCABULARY, special_tokens_in_strings=False
    )
    assert ids(plain, "[MASK]") == [1, 1, 1]


def test_invalid_utf8_is_replaced_then_dropped(tokenizer):
    # Invalid bytes decode to U+FFFD, which text cleaning removes.
    assert ids(tokenizer, b"fo\xffx \xc3") == [8]
    assert ids(tokenizer, b"\x00the\x00") == [5]


def test_ranks(tokenizer):
    assert tokenizer("the fox").shape == (2,)
    out = tokenizer([["the fox", "dog"], ["", "a"]])
    assert out.to_list() == [[[5, 8], [19]], [[], [13]]]


def test_vocabulary_accessors(tokenizer):
    assert tokenizer.vocabulary_size() == len(TINY_VOCABULARY)
    assert tokenizer.vocabulary == TINY_VOCABULARY
    assert tokenizer.token_to_id("fox") == 8
    assert tokenizer.id_to_token(8) == "fox"
    special = (tokenizer.pad_token_id, tokenizer.unk_token_id)
    special += (tokenizer.cls_token_id, tokenizer.sep_token_id)
    assert special + (tokenizer.mask_token_id,) == (0, 1, 2, 3, 4)
    assert all(type(i) is int for i in special)
    assert tokenizer.lowercase is True and tokenizer.strip_accents is None


def test_errors_name_the_bad_value(tokenizer):
    with pytest.raises(ValueError, match="'wolf' is not in the vocabulary"):
        tokenizer.token_to_id("wolf")
    with pytest.raises(ValueError, match="Id 99 is out of range"):
        tokenizer.id_to_token(99)
    with pytest.raises(ValueError, match="'\\[UNK\\]' is not in"):
        keras_bert.BertTokenizer(["a", "b"])
    with pytest.raises(ValueError, match="appears twice"):
        keras_bert.BertTokenizer(TINY_VOCABULARY + ["fox"])
    with pytest.raises(ValueError, match="max_input_chars_per_word=0"):
        keras_bert.BertTokenizer(TINY_VOCABULARY, max_input_chars_per_word=0)
    with pytest.raises(ValueError, match="dtype int32"):
        tokenizer(tf.constant([1, 2]))


def test_detokenize(tokenizer):
    assert tokenizer.detokenize([5, 8, 9, 10]).numpy() == b"the foxes ."
    out = tokenizer.detokenize(tokenizer(["the foxes", "a ab"]))
    assert out.numpy().tolist() == [b"the foxes", b"a ab"]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(strings):
        return tokenizer.detokenize(tokenizer(strings))

    assert round_trip(tf.constant(["The Foxes"])).numpy() == [b"the foxes"]
    assert tokenizer.detokenize([8]).numpy() == b"fox"  # eager after graph


def test_config_and_serialization(tokenizer):
    assert_config_complete(tokenizer)
    rebuilt = run_serialization_test(tokenizer)
    text = ["The quick brown foxes jumped.", "é 日本 [MASK]"]
    assert rebuilt(text).to_list() == tokenizer(text).to_list()
    restored = keras.layers.deserialize(keras.layers.serialize(tokenizer))
    assert isinstance(restored, keras_bert.BertTokenizer)
    assert restored(text).to_list() == tokenizer(text).to_list()


def test_vocabulary_file_round_trip(tokenizer, tmp_path):
    path = tokenizer.save_vocabulary(str(tmp_path))
    assert os.path.basename(path) == "vocab.txt"
    assert keras_bert.BertTokenizer(path).vocabulary == TINY_VOCABULARY


def test_traceable_in_tf_function_and_tf_data(tokenizer):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(strings):
        return tokenizer(strings)

    assert tokenize(tf.constant(["the fox"])).to_list() == [[5, 8]]
    dataset = tf.data.Dataset.from_tensor_slices(["the fox", "dog"])
    got = [x.numpy().tolist() for x in dataset.map(tokenizer)]
    assert got == [[5, 8], [19]]
    batched = dataset.batch(2).map(tokenizer)
    assert next(iter(batched)).to_list() == [[5, 8], [19]]


def _write_checkpoint(directory, vocabulary, **files):
    os.makedirs(directory, exist_ok=True)
    keras_bert.text.save_vocabulary(
        vocabulary, os.path.join(directory, "vocab.txt")
    )
    for name, content in files.items():
        with open(os.path.join(directory, name), "w") as f:
            json.dump(content, f)
    return directory


def test_from_checkpoint_reads_casing(tmp_path):
    hf_cased = _write_checkpoint(
        str(tmp_path / "hf"),
        TINY_VOCABULARY,
        **{"tokenizer_config.json": {"do_lower_case": False}},
    )
    assert not keras_bert.BertTokenizer.from_checkpoint(hf_cased).lowercase
    fast = _write_checkpoint(
        str(tmp_path / "fast"),
        TINY_VOCABULARY,
        **{
            "tokenizer.json": {
                "normalizer": {
                    "type": "BertNormalizer",
                    "lowercase": True,
                    "strip_accents": False,
                }
            }
        },
    )
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(fast)
    assert tokenizer.lowercase and tokenizer.strip_accents is False
    google = _write_checkpoint(
        str(tmp_path / "cased_L-2_H-8"),
        TINY_VOCABULARY,
        **{"bert_config.json": {"vocab_size": len(TINY_VOCABULARY)}},
    )
    assert not keras_bert.BertTokenizer.from_checkpoint(google).lowercase
    overridden = keras_bert.BertTokenizer.from_checkpoint(google, lowercase=1)
    assert overridden.lowercase is True
    # No name hint: a vocabulary of lower-case words means uncased.
    plain = _write_checkpoint(str(tmp_path / "bert"), TINY_VOCABULARY)
    assert keras_bert.BertTokenizer.from_checkpoint(plain).lowercase
    capitals = TINY_VOCABULARY + ["The", "Fox", "Dog", "Over"]
    plain = _write_checkpoint(str(tmp_path / "bert2"), capitals)
    assert not keras_bert.BertTokenizer.from_checkpoint(plain).lowercase
    with pytest.raises(FileNotFoundError, match="No vocab.txt"):
        keras_bert.BertTokenizer.from_checkpoint(str(tmp_path))


AMINO_ACIDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(
    "ACDEFGHIKLMNPQRSTVWY"
)


def test_from_checkpoint_keeps_the_case_of_an_upper_case_vocabulary(
    tmp_path,
):
    """No tokenizer config, letters upper case only (AntiBERTy's layout):
    cased, even in a directory whose name says "uncased", since lowercased
    text would match none of its letters; one log line says so."""
    directory = _write_checkpoint(
        str(tmp_path / "protein_uncased"), AMINO_ACIDS
    )
    with mock.patch.object(bert_tokenizer.logging, "info") as info:
        tokenizer = keras_bert.BertTokenizer.from_checkpoint(directory)
    assert tokenizer.lowercase is False
    assert tokenizer(["E V Q [MASK]"]).to_list() == [[8, 22, 18, 4]]
    (line,) = [call.args[0] % call.args[1:] for call in info.call_args_list]
    assert "lowercase=False" in line and "upper case only" in line
    # A letter of either case: the name decides, as before.
    mixed = _write_checkpoint(str(tmp_path / "uncased"), AMINO_ACIDS + ["x"])
    assert keras_bert.BertTokenizer.from_checkpoint(mixed).lowercase


def test_output_is_deterministic_numpy_input(tokenizer):
    text = np.array(["the fox", "dog"])
    assert tokenizer(text).to_list() == [[5, 8], [19]]


def test_docstring_example():
    tokenizer = keras_bert.BertTokenizer(TINY_VOCABULARY[:11])
    ids = tokenizer(["The quick brown foxes.", "Tȟe fox!"]).to_list()
    assert ids == [[5, 6, 7, 8, 9, 10], [5, 8, 1]]
    assert tokenizer.detokenize([5, 8, 9]).numpy() == b"the foxes"
