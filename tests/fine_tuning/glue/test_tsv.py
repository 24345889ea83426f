"""GLUE's TSV layouts, read from fixtures written in each task's format."""

import os
import shutil

import numpy as np
import pytest

from keras_bert.fine_tuning.glue.tasks import GLUE_TASKS
from keras_bert.fine_tuning.glue.tasks import get_glue_task
from keras_bert.fine_tuning.glue.tsv import read_glue_tsv
from tests.fine_tuning.glue.fixtures import glue_fixture_dir

# tests/fine_tuning/glue/fixtures.py, written once
FIXTURES = glue_fixture_dir()


def test_every_task_and_split_reads_from_its_fixture():
    for task in GLUE_TASKS.values():
        for split_name, split in task.splits.items():
            examples = read_glue_tsv(task, split_name, FIXTURES)
            assert set(examples) == {"idx", "label", *task.text_features}
            count = len(examples["idx"])
            assert count > 0 and all(len(v) == count for v in examples.values())
            if not split.labelled:
                assert np.all(examples["label"] == -1)


def test_fixture_headers_are_the_glue_headers():
    # The registry's column lists are GLUE's; the fixtures must match them.
    for task in GLUE_TASKS.values():
        for split in task.splits.values():
            path = os.path.join(FIXTURES, task.directory, split.filename)
            with open(path, encoding="utf-8") as f:
                first = f.readline().rstrip("\n").split("\t")
            if split.header:
                assert tuple(first) == split.columns, path
            else:
                assert len(first) == len(split.columns), path


def test_cola_train_has_no_header_but_test_has_one():
    train = read_glue_tsv("cola", "train", FIXTURES)
    assert train["sentence"][0] == "The cat sat on the mat."
    assert train["label"].tolist() == [1, 0, 1, 0]
    test = read_glue_tsv("cola", "test", FIXTURES)
    assert test["sentence"].tolist() == ["Birds sing.", "Sing birds the the."]


def test_quotes_are_text_not_quoting():
    cola = read_glue_tsv("cola", "train", FIXTURES)
    assert cola["sentence"][2] == '"Quotes are text," she said.'
    dev = read_glue_tsv("cola", "validation", FIXTURES)
    assert dev["sentence"][2] == 'He wrote "hello.'  # unbalanced quote
    mrpc = read_glue_tsv("mrpc", "train", FIXTURES)
    assert mrpc["sentence1"][3] == 'He called it "a mistake.'


def test_mnli_reads_gold_label_and_sentences_not_parses():
    dev = read_glue_tsv("mnli", "validation_matched", FIXTURES)
    assert dev["premise"][0] == "She opened the door."
    assert dev["hypothesis"][0] == "The door was opened."
    # gold_label, not label1..label5 (row 0 has a "neutral" annotator).
    assert dev["label"].tolist() == [0, 2]
    train = read_glue_tsv("mnli", "train", FIXTURES)
    assert train["label"].tolist() == [0, 2, 1]


def test_qqp_skips_malformed_rows_and_keeps_row_numbers():
    train = read_glue_tsv("qqp", "train", FIXTURES)
    # The question broken over two lines makes two malformed rows (2, 3).
    assert train["idx"].tolist() == [0, 1, 4]
    assert train["question1"][2] == "Is tea healthy?"
    assert train["label"].tolist() == [1, 0, 1]


def test_stsb_scores_are_floats():
    dev = read_glue_tsv("stsb", "validation", FIXTURES)
    np.testing.assert_allclose(dev["label"], [5.0, 0.2, 3.6])
    assert dev["label"].dtype == np.float32


def test_mrpc_and_wnli_labels_are_ids_as_written():
    assert read_glue_tsv("mrpc", "train", FIXTURES)["label"].tolist() == [
        1,
        0,
        1,
        0,
    ]
    assert read_glue_tsv("wnli", "train", FIXTURES)["label"].tolist() == [1, 0]
    rte = read_glue_tsv("rte", "validation", FIXTURES)
    assert rte["label"].tolist() == [0, 1]


def test_unknown_task_lists_the_valid_ones():
    with pytest.raises(ValueError, match="cola, sst2, mrpc, qqp, stsb, mnli"):
        get_glue_task("mnli-m")


def test_unknown_split_lists_the_task_splits():
    with pytest.raises(ValueError, match="validation_matched"):
        read_glue_tsv("mnli", "validation", FIXTURES)


def test_missing_split_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"RTE[/\\]dev\.tsv"):
        read_glue_tsv("rte", "validation", str(tmp_path))


def _write(tmp_path, directory, filename, text):
    os.makedirs(tmp_path / directory, exist_ok=True)
    (tmp_path / directory / filename).write_text(text, encoding="utf-8")
    return str(tmp_path)


def test_label_the_task_does_not_have(tmp_path):
    data_dir = _write(
        tmp_path,
        "RTE",
        "dev.tsv",
        "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\tcontradiction\n",
    )
    with pytest.raises(
        ValueError,
        match="line 2: label 'contradiction'.*entailment, not_entailment",
    ):
        read_glue_tsv("rte", "validation", data_dir)


def test_empty_file(tmp_path):
    data_dir = _write(tmp_path, "SST-2", "dev.tsv", "")
    with pytest.raises(ValueError, match="empty"):
        read_glue_tsv("sst2", "validation", data_dir)
    data_dir = _write(tmp_path, "SST-2", "dev.tsv", "sentence\tlabel\n")
    with pytest.raises(ValueError, match="no examples"):
        read_glue_tsv("sst2", "validation", data_dir)


def test_wrong_header_names_missing_columns(tmp_path):
    data_dir = _write(tmp_path, "SST-2", "dev.tsv", "text\tlabel\nfine .\t1\n")
    with pytest.raises(ValueError, match="no column sentence"):
        read_glue_tsv("sst2", "validation", data_dir)


def test_wrong_field_count_is_an_error_outside_qqp(tmp_path):
    shutil.copytree(os.path.join(FIXTURES, "RTE"), tmp_path / "RTE")
    with open(tmp_path / "RTE" / "dev.tsv", "a", encoding="utf-8") as f:
        f.write("2\tonly one sentence\tentailment\n")
    with pytest.raises(ValueError, match="line 4: expected 4 tab-separated"):
        read_glue_tsv("rte", "validation", str(tmp_path))


def test_reads_the_shared_glue_data_when_present():
    repository = os.path.join(os.path.dirname(__file__), "..", "..", "..")
    shared = os.path.join(repository, "..", "shared", "glue")
    if not os.path.isdir(shared):
        pytest.skip("no shared GLUE directory beside the repository")
    counts = {
        ("rte", "train"): 2490,
        ("rte", "validation"): 277,
        ("sst2", "validation"): 872,
        ("cola", "validation"): 1043,
        ("stsb", "validation"): 1500,
        ("mrpc", "train"): 4076,
    }
    for (task, split), count in counts.items():
        assert len(read_glue_tsv(task, split, shared)["idx"]) == count
