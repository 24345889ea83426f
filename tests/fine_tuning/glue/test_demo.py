"""The DEMO sample is written in MNLI's exact layout and reads as MNLI."""

import collections
import os

from keras_bert.fine_tuning.glue.demo import write_mnli_demo
from keras_bert.fine_tuning.glue.tasks import get_glue_task
from keras_bert.fine_tuning.glue.tsv import read_glue_tsv


def test_demo_reads_as_mnli_and_says_it_is_a_demo(tmp_path):
    directory = write_mnli_demo(str(tmp_path), num_train=90, num_eval=30)
    task = get_glue_task("mnli")
    assert sorted(os.listdir(directory)) == sorted(
        split.filename for split in task.splits.values()
    )
    note = (tmp_path / "DEMO_README.txt").read_text()
    assert "DEMO" in note and "not a benchmark" in note
    for split_name, split in task.splits.items():
        with open(os.path.join(directory, split.filename)) as f:
            lines = f.read().splitlines()
        assert tuple(lines[0].split("\t")) == split.columns
        assert all(line.split("\t")[3] == "demo" for line in lines[1:])
        examples = read_glue_tsv(task, split_name, str(tmp_path))
        assert len(examples["idx"]) == len(lines) - 1

    train = read_glue_tsv(task, "train", str(tmp_path))
    assert len(train["idx"]) == 90
    counts = collections.Counter(train["label"].tolist())
    assert set(counts) == {0, 1, 2} and min(counts.values()) >= 20


def test_matched_and_mismatched_use_different_people(tmp_path):
    write_mnli_demo(str(tmp_path))
    matched = read_glue_tsv("mnli", "validation_matched", str(tmp_path))
    mismatched = read_glue_tsv("mnli", "validation_mismatched", str(tmp_path))
    subjects = lambda e: {" ".join(p.split()[:2]) for p in e["premise"]}  # noqa: E731
    assert not subjects(matched) & subjects(mismatched)


def test_demo_is_deterministic(tmp_path):
    write_mnli_demo(str(tmp_path / "a"))
    write_mnli_demo(str(tmp_path / "b"))
    for name in ["train.tsv", "test_mismatched.tsv"]:
        a = (tmp_path / "a" / "MNLI" / name).read_text()
        assert a == (tmp_path / "b" / "MNLI" / name).read_text()
