"""Reading corpora, and bad input: each case skipped with a count or a
clear error."""

import collections
import gzip
import logging
import os

import pytest

from keras_bert.data import PretrainingInstanceCreator
from keras_bert.data import expand_input_files
from keras_bert.data import read_documents
from keras_bert.data import split_sentences
from tests.data import pretraining_helpers as helpers


def write(directory, name, content):
    path = os.path.join(directory, name)
    if isinstance(content, str):
        content = content.encode("utf-8")
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(content)
    return path


def test_sentence_format_documents_split_on_blank_lines(tmp_path):
    path = write(tmp_path, "a.txt", "One.\nTwo.\n\n\nThree.\nFour.\n")
    assert list(read_documents([path])) == [
        ["One.", "Two."],
        ["Three.", "Four."],
    ]


def test_gzip_is_read_transparently(tmp_path):
    path = write(tmp_path, "a.txt.gz", "One.\nTwo.\n")
    assert list(read_documents([path])) == [["One.", "Two."]]


def test_text_format_splits_sentences(tmp_path):
    path = write(
        tmp_path, "a.txt", "It works. Does it?\nYes, e.g. here.\n\nNew one."
    )
    (document,) = read_documents([path], input_format="text")
    assert document == ["It works.", "Does it?", "Yes, e.g. here.", "New one."]
    assert split_sentences('He said "Go." Then "went".') == [
        'He said "Go."',
        'Then "went".',
    ]


def test_globs_and_commas_expand_sorted(tmp_path):
    for name in ("b.txt", "a.txt", "c.dat"):
        write(tmp_path, name, "x\n")
    pattern = f"{tmp_path}/*.txt,{tmp_path}/c.dat"
    names = [os.path.basename(p) for p in expand_input_files(pattern)]
    assert names == ["a.txt", "b.txt", "c.dat"]


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        expand_input_files(f"{tmp_path}/nothing-here*.txt")
    with pytest.raises(FileNotFoundError, match="gone.txt"):
        list(read_documents([str(tmp_path / "gone.txt")]))


def test_bad_format_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="input_format='csv'"):
        list(read_documents([], input_format="csv"))


def test_empty_file_is_counted_and_skipped(tmp_path):
    empty = write(tmp_path, "empty.txt", "")
    blank = write(tmp_path, "blank.txt", "\n\n  \n")
    good = write(tmp_path, "good.txt", "One.\nTwo.\n")
    stats = collections.Counter()
    documents = list(read_documents([empty, blank, good], stats=stats))
    assert documents == [["One.", "Two."]]
    assert stats["empty_files"] == 2 and stats["files"] == 3


def test_invalid_utf8_bytes_are_replaced_and_counted(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="absl")
    # As the tokenizer decodes text: one bad byte never drops a line.
    path = write(
        tmp_path, "bad.txt", b"Good one.\n\xff\xfe bad \xc3\n Also good.\n"
    )
    stats = collections.Counter()
    assert list(read_documents([path], stats=stats)) == [
        ["Good one.", "\ufffd\ufffd bad \ufffd", "Also good."]
    ]
    assert stats["invalid_utf8_lines"] == 1
    assert "Line 2 of" in caplog.text and "U+FFFD" in caplog.text


def make_creator(max_seq_length=16):
    return PretrainingInstanceCreator(
        helpers.synthetic_tokenizer(),
        max_seq_length=max_seq_length,
        dupe_factor=2,
    )


def test_one_sentence_documents_are_counted_and_skipped():
    creator = make_creator()
    documents = [
        ["the cat sat ."],
        ["the dog ran .", "it was happy ."],
        ["a bird sang ."],
        ["the fish swim .", "then it was sad ."],
    ]
    instances = list(creator.create_instances(documents))
    assert instances
    assert creator.stats["one_sentence_documents"] == 2
    assert {i.a_document for i in instances} == {0, 1}


def test_lines_longer_than_max_seq_length_are_truncated():
    creator = make_creator(max_seq_length=12)
    long_sentence = " ".join(["the cat sat on a mat"] * 20)
    documents = [[long_sentence, long_sentence], ["a dog .", "it ran ."]]
    instances = list(creator.create_instances(documents))
    assert instances
    assert all(len(i.token_ids) <= 12 for i in instances)
    assert creator.stats["long_sentences"] == 2


def test_a_corpus_of_one_document_is_a_clear_error():
    with pytest.raises(ValueError, match="at least two documents"):
        list(make_creator().create_instances([["a cat .", "a dog ."]]))
