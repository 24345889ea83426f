"""benchmarks/task_race.py's tasks: record names, summaries over seeds
and the data they build."""

import json
import os
import types

import pytest

from benchmarks import common
from benchmarks.tasks import long_documents
from benchmarks.tasks import multi_label
from benchmarks.tasks import multiple_choice

BENCHMARKS = os.path.join(common.REPO, "benchmarks")


def committed(task):
    return common.read_records(os.path.join(BENCHMARKS, task.RECORDS))


def test_spread_and_paired_difference():
    assert common.spread([81.25]) == "81.25"
    assert common.spread([1.0, 3.0]) == "2.00 ± 1.41"
    ours, theirs = {0: 2.0, 1: 5.0, 2: 9.0}, {0: 1.0, 1: 1.0}
    assert common.paired_difference(ours, theirs, float) == (
        "+1.00 (seed 0), +4.00 (seed 1); mean +2.50 ± 2.12"
    )
    assert common.paired_difference({0: 2.0}, theirs, float) == "+1.00"
    assert common.paired_difference({3: 2.0}, theirs, float) is None


def test_seed_rows_add_mean_and_sd_for_two_seeds():
    def cells(r):
        return [(r["f1"], "{:.2f}"), (r["core"], None)]

    one = common.seed_rows("torch", {0: dict(f1=80.0, core=0)}, cells)
    assert one == ["| torch | 80.00 | 0 |"]
    two = common.seed_rows(
        "torch", {1: dict(f1=82.0, core=1), 0: dict(f1=80.0, core=0)}, cells
    )
    assert two == [
        "| torch, seed 0 | 80.00 | 0 |",
        "| torch, seed 1 | 82.00 | 1 |",
        "| torch, mean ± sd over seeds 0, 1 | 81.00 ± 1.41 |  |",
    ]


def test_a_record_named_with_its_seed_replaces_a_legacy_one():
    legacy = dict(contestant="torch", settings=dict(seed=0), f1=1)
    named = dict(contestant="torch", seed=0, f1=2)
    other = dict(contestant="torch", seed=1, f1=3)
    grouped = common.by_seed([legacy, named, other])
    assert {s: r["f1"] for s, r in grouped["torch"].items()} == {0: 2, 1: 3}


@pytest.mark.parametrize(
    "task, flag_values, contestant, name",
    [
        (
            multiple_choice,
            dict(seed=3, train_questions=1000, dev_questions=0),
            "torch",
            "torch_train1000_devall_seed3",
        ),
        (
            multi_label,
            dict(seed=1, group_by_length=False),
            "keras_bert",
            "keras_bert_ungrouped_seed1",
        ),
        (long_documents, dict(seed=4), "torch_windows", "torch_windows_seed4"),
    ],
)
def test_record_names_hold_the_seed(
    monkeypatch, task, flag_values, contestant, name
):
    monkeypatch.setattr(task, "FLAGS", types.SimpleNamespace(**flag_values))
    assert task.record_name(contestant) == name


def with_seed(record, seed, **changes):
    return dict(json.loads(json.dumps(record)), seed=seed, **changes)


def test_a_summary_of_two_seeds_shows_mean_and_sd():
    records = committed(long_documents)
    windows = next(r for r in records if r["contestant"] == "torch_windows")
    text = long_documents.summarize(
        records + [with_seed(windows, 1, accuracy=0.8)]
    )
    assert "| torch_windows, seed 0 | 81.6 | 600 | 299 |" in text
    assert "| torch_windows, seed 1 | 80.0 | 600 | 299 |" in text
    assert "| torch_windows, mean ± sd over seeds 0, 1 | 80.8 ± 1.1 |" in text
    assert "| torch_truncation | 71.2 | 600 | 299 |" in text  # one seed

    # Three seeds a side, committed, paired by seed.
    text = multi_label.summarize(committed(multi_label))
    assert (
        "| torch (best epoch), mean ± sd over seeds 0, 1, 2 | 3 ± 0 "
        "| 91.20 ± 0.56 | 90.14 ± 0.72 | 81.88 ± 1.07 |"
    ) in text
    assert (
        "micro F1 (best epochs, threshold 0.5): -0.09 (seed 0), -1.22 "
        "(seed 1), -0.26 (seed 2); mean -0.52 ± 0.61 points"
    ) in text


def test_answer_selection_keeps_the_answer_sentence():
    squad_json = {
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "One is here. Two is there. Three "
                        "sits. Four runs. Five hides.",
                        "qas": [
                            {
                                "question": "What sits?",
                                "answers": [
                                    {"text": "Three", "answer_start": 27}
                                ],
                            }
                        ],
                    }
                ]
            }
        ]
    }
    (example,), skipped = multiple_choice.answer_selection(squad_json)
    question, choices, label = example
    assert skipped == 0 and question == "What sits?"
    assert len(choices) == 4 and choices[label] == "Three sits."
