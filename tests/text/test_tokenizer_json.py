"""`BertTokenizer.from_checkpoint` on a directory with a Hugging Face
`tokenizer.json` and no `vocab.txt`, as `transformers` 5 saves one.

Tiny hand-written `tokenizer.json` files here; the real MiniLM one, saved
by the installed `transformers`, is compared with its `vocab.txt` and with
`transformers` in tests/checkpoints/test_transformers_saved_directory.py.
"""

import json
import logging
import os

import pytest

import keras_bert
from keras_bert.text import tokenizer_json
from tests.text.references import TINY_VOCABULARY

TEXTS = [
    "The quick brown foxes jumped over the lazy dog.",
    "A b! é e 日本 [MASK] unknownword",
    "Tȟe FOX, jumpedjumped",
]


def tokenizer_json_config(
    vocabulary=TINY_VOCABULARY, lowercase=True, strip_accents=None, **model
):
    """What `transformers` 5 writes for a BERT tokenizer, trimmed to the
    parts keras_bert reads; the ids in reverse order, as a JSON map need
    not list them by id."""
    return {
        "normalizer": {
            "type": "BertNormalizer",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": strip_accents,
            "lowercase": lowercase,
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            **model,
            "vocab": {
                token: index
                for index, token in reversed(list(enumerate(vocabulary)))
            },
        },
    }


def write(directory, config, name="tokenizer.json"):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w") as file:
        json.dump(config, file)
    return str(directory)


def ids(tokenizer, texts=TEXTS):
    return tokenizer(texts).to_list()


def test_the_vocabulary_comes_in_id_order_and_tokenizes_as_vocab_txt(
    tmp_path,
):
    directory = write(tmp_path / "json", tokenizer_json_config())
    from_json = keras_bert.BertTokenizer.from_checkpoint(directory)
    assert from_json.get_vocabulary() == TINY_VOCABULARY
    from_vocab_txt = keras_bert.BertTokenizer.from_checkpoint(
        keras_bert.BertTokenizer(TINY_VOCABULARY).save_vocabulary(
            str(tmp_path / "txt")
        )
    )
    assert ids(from_json) == ids(from_vocab_txt)
    assert ids(from_json)[0] == [5, 6, 7, 8, 9, 15, 16, 17, 5, 18, 19, 10]
    # The file itself may be passed too.
    by_file = keras_bert.BertTokenizer.from_checkpoint(
        os.path.join(directory, "tokenizer.json")
    )
    assert ids(by_file) == ids(from_json)


def test_vocab_txt_wins_when_both_are_there(tmp_path):
    directory = write(
        tmp_path, tokenizer_json_config(vocabulary=TINY_VOCABULARY[:6])
    )
    keras_bert.BertTokenizer(TINY_VOCABULARY).save_vocabulary(directory)
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(directory)
    assert tokenizer.get_vocabulary() == TINY_VOCABULARY


def test_casing_and_wordpiece_settings_come_from_the_file(tmp_path):
    config = tokenizer_json_config(
        lowercase=False,
        strip_accents=True,
        max_input_chars_per_word=5,
        unk_token="[MASK]",
    )
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(
        write(tmp_path, config)
    )
    assert tokenizer.lowercase is False and tokenizer.strip_accents is True
    assert tokenizer.max_input_chars_per_word == 5
    assert tokenizer.unk_token == "[MASK]"
    # "The" is no token when cased; "jumped" has 6 characters; é loses its
    # accent: each of the first two becomes the unknown token, [MASK].
    assert ids(tokenizer, ["The jumped é"]) == [[4, 4, 21]]
    # Arguments override the file.
    overridden = keras_bert.BertTokenizer.from_checkpoint(
        str(tmp_path), lowercase=True, max_input_chars_per_word=100
    )
    assert ids(overridden, ["The jumped"]) == [[5, 15, 16]]


def test_the_normalizer_outranks_tokenizer_config_json(tmp_path):
    """The order `read_casing` keeps for every Hugging Face directory."""
    directory = write(tmp_path, tokenizer_json_config(lowercase=False))
    write(tmp_path, {"do_lower_case": True}, "tokenizer_config.json")
    assert not keras_bert.BertTokenizer.from_checkpoint(directory).lowercase
    other_normalizer = tokenizer_json_config()
    other_normalizer["normalizer"] = None
    write(tmp_path, other_normalizer)
    write(tmp_path, {"do_lower_case": False}, "tokenizer_config.json")
    assert not keras_bert.BertTokenizer.from_checkpoint(directory).lowercase


def test_a_pipeline_that_is_not_berts_is_named_in_a_warning(tmp_path, caplog):
    config = tokenizer_json_config()
    config["normalizer"]["handle_chinese_chars"] = False
    config["pre_tokenizer"] = {"type": "WhitespaceSplit"}
    with caplog.at_level(logging.WARNING):
        keras_bert.BertTokenizer.from_checkpoint(write(tmp_path, config))
    assert "normalizer handle_chinese_chars=False" in caplog.text
    assert "pre_tokenizer WhitespaceSplit" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        keras_bert.BertTokenizer.from_checkpoint(
            write(tmp_path, tokenizer_json_config())
        )
    assert caplog.text == ""


def test_read_through_tf_io_gfile():
    directory = "ram://tokenizer_json_test/bert"
    keras_bert.files.write_json(
        directory + "/tokenizer.json", tokenizer_json_config()
    )
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(directory)
    assert tokenizer.get_vocabulary() == TINY_VOCABULARY


@pytest.mark.parametrize("model_type", ["BPE", "Unigram", "WordLevel"])
def test_another_model_type_is_refused_by_name(tmp_path, model_type):
    config = tokenizer_json_config()
    config["model"]["type"] = model_type
    with pytest.raises(
        ValueError,
        match=f"holds a {model_type} tokenizer, not a WordPiece one: "
        "keras_bert's BertTokenizer needs a BERT WordPiece vocabulary",
    ) as error:
        keras_bert.BertTokenizer.from_checkpoint(write(tmp_path, config))
    assert isinstance(error.value, tokenizer_json.NotWordPieceError)


@pytest.mark.parametrize(
    "vocab, message",
    [
        ({"[PAD]": 0, "[UNK]": 2}, "token '\\[UNK\\]' has id 2; the 2 ids"),
        (
            {"[PAD]": 0, "[UNK]": 0},
            "'\\[PAD\\]' and '\\[UNK\\]' both have id 0",
        ),
        ({"[PAD]": 0, "[UNK]": -1}, "'\\[UNK\\]' has id -1"),
        ({"[PAD]": 0, "[UNK]": "1"}, "'\\[UNK\\]' has id '1'"),
        ({}, "has no vocabulary"),
    ],
    ids=["gap", "duplicate", "negative", "string", "empty"],
)
def test_ids_must_be_dense(tmp_path, vocab, message):
    config = tokenizer_json_config()
    config["model"]["vocab"] = vocab
    with pytest.raises(ValueError, match=message):
        keras_bert.BertTokenizer.from_checkpoint(write(tmp_path, config))


def test_another_subword_prefix_is_refused(tmp_path):
    config = tokenizer_json_config(continuing_subword_prefix="@@")
    with pytest.raises(
        ValueError, match="continuing_subword_prefix='@@'.*'##' only"
    ):
        keras_bert.BertTokenizer.from_checkpoint(write(tmp_path, config))


def test_a_directory_with_neither_file_names_both(tmp_path):
    write(tmp_path, {"do_lower_case": True}, "tokenizer_config.json")
    with pytest.raises(
        FileNotFoundError, match="No vocab.txt or tokenizer.json in"
    ):
        keras_bert.BertTokenizer.from_checkpoint(str(tmp_path))


def test_docstring_example():
    keras_bert.files.write_json(
        "ram://bert/tokenizer.json",
        {
            "model": {
                "type": "WordPiece",
                "continuing_subword_prefix": "##",
                "vocab": {"[UNK]": 1, "[PAD]": 0, "hello": 2},
            }
        },
    )
    assert tokenizer_json.read_wordpiece("ram://bert/tokenizer.json") == (
        ["[PAD]", "[UNK]", "hello"],
        {},
    )
