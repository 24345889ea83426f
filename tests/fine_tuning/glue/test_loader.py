"""Choosing the source of a GLUE split; holding out a dev part."""

import os

import numpy as np
import pytest

from keras_bert.fine_tuning.glue.loader import load_glue
from keras_bert.fine_tuning.glue.loader import missing_glue_data_message
from keras_bert.fine_tuning.glue.loader import split_holdout
from keras_bert.fine_tuning.glue.tasks import get_glue_task
from tests.fine_tuning.glue.fixtures import glue_fixture_dir

# tests/fine_tuning/glue/fixtures.py, written once
FIXTURES = glue_fixture_dir()


def test_data_dir_reads_the_tsv_files():
    examples = load_glue("rte", "train", data_dir=FIXTURES)
    assert examples["sentence1"][0] == "The museum opened in 1990."


def test_missing_data_message_lists_every_file_and_both_ways():
    message = missing_glue_data_message(get_glue_task("cola"), "offline")
    for filename in ["train.tsv", "dev.tsv", "test.tsv"]:
        assert os.path.join("GLUE_DIR", "CoLA", filename) in message
    assert "--data_dir" in message and "tfds build glue/cola" in message


def test_holdout_is_fixed_by_its_seed_and_disjoint():
    examples = {"idx": np.arange(50, dtype="int32"), "label": np.arange(50)}
    train, holdout = split_holdout(examples, 0.2)
    assert len(holdout["idx"]) == 10 and len(train["idx"]) == 40
    assert not set(train["idx"]) & set(holdout["idx"])
    again, _ = split_holdout(examples, 0.2)
    np.testing.assert_array_equal(train["idx"], again["idx"])
    with pytest.raises(ValueError, match="fraction=1.5"):
        split_holdout(examples, 1.5)
