"""GLUE submission files: GLUE's names, header, label strings, index order."""

import numpy as np
import pytest

from keras_bert.fine_tuning.glue.submission import write_glue_submission


def _read(path):
    with open(path) as f:
        return [line.split("\t") for line in f.read().splitlines()]


def test_labels_are_written_as_glue_spells_them(tmp_path):
    logits = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    path = write_glue_submission(
        "mnli", "test_mismatched", [0, 1, 2], logits, str(tmp_path)
    )
    assert path.endswith("MNLI-mm.tsv")
    assert _read(path) == [
        ["index", "prediction"],
        ["0", "neutral"],
        ["1", "entailment"],
        ["2", "contradiction"],
    ]
    path = write_glue_submission("cola", "test", [1, 0], [0, 1], str(tmp_path))
    assert path.endswith("CoLA.tsv")
    assert _read(path)[1:] == [["0", "1"], ["1", "0"]]  # sorted by index
    path = write_glue_submission("ax", "test", [0], [2], str(tmp_path))
    assert path.endswith("AX.tsv") and _read(path)[1] == ["0", "contradiction"]


def test_stsb_scores_are_clipped_to_the_scale(tmp_path):
    path = write_glue_submission(
        "stsb",
        "test",
        [0, 1, 2],
        np.array([[-0.4], [2.25], [5.7]]),
        str(tmp_path),
    )
    assert _read(path)[1:] == [["0", "0.000"], ["1", "2.250"], ["2", "5.000"]]


def test_labelled_split_and_length_mismatch_are_errors(tmp_path):
    with pytest.raises(ValueError, match="only test splits"):
        write_glue_submission("rte", "validation", [0], [0], str(tmp_path))
    with pytest.raises(ValueError, match="1 predictions for 2 examples"):
        write_glue_submission("rte", "test", [0, 1], [0], str(tmp_path))
