"""Reading multiple-choice files: SWAG's CSV layout and JSONL."""

import json

import numpy as np
import pytest

from keras_bert.fine_tuning.multiple_choice import read_multiple_choice
from keras_bert.fine_tuning.multiple_choice import write_swag_csv

# SWAG's own header (its val.csv), extra columns and all.
SWAG = (
    ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,"
    "ending0,ending1,ending2,ending3,label\n"
    '0,anetv_1,5,"Students lower their eyes. A woman","Students lower '
    'their eyes.","A woman",gold,"smiles.","sings.","cries.","runs.",0\n'
    '1,anetv_2,6,x,"He rides a bike.","He",gen,"falls.","stops.",'
    '"waves.","sleeps.",3\n'
)


def test_swag_pairs_sent1_with_sent2_and_each_ending(tmp_path):
    path = tmp_path / "val.csv"
    path.write_text(SWAG, encoding="utf-8")
    examples = read_multiple_choice(str(path))
    assert examples["contexts"].tolist() == [
        "Students lower their eyes.",
        "He rides a bike.",
    ]
    # transformers' run_swag.py: f"{sent2} {ending_i}".
    assert examples["choices"].tolist()[0] == [
        "A woman smiles.", "A woman sings.", "A woman cries.", "A woman runs.",
    ]  # fmt: skip
    np.testing.assert_array_equal(examples["labels"], [0, 3])
    assert examples["labels"].dtype == np.int32


def test_jsonl_and_any_number_of_choices(tmp_path):
    path = tmp_path / "train.jsonl"
    rows = [
        {"context": "Pick one.", "choices": ["a", "b", "c", "d", "e"],
         "label": 4},
        {"context": "Again.", "choices": ["v", "w", "x", "y", "z"],
         "label": 0},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    examples = read_multiple_choice(str(path))
    assert examples["choices"].shape == (2, 5)
    np.testing.assert_array_equal(examples["labels"], [4, 0])


def test_write_swag_csv_reads_back(tmp_path):
    path = str(tmp_path / "built.csv")
    write_swag_csv(path, ["Q1?", "Q2, with a comma?"],
                   [["a", "b"], ['say "x"', "d"]], [1, 0])  # fmt: skip
    examples = read_multiple_choice(path)
    assert examples["contexts"].tolist() == ["Q1?", "Q2, with a comma?"]
    assert examples["choices"].tolist() == [["a", "b"], ['say "x"', "d"]]
    np.testing.assert_array_equal(examples["labels"], [1, 0])


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"context": "c", "choices": ["a", "b"], "label": 0}',
          '{"context": "c", "choices": ["a", "b", "c"], "label": 0}'],
         r"line 2: 3 choices, where the file's first example has 2"),
        (['{"context": "c", "choices": ["a"], "label": 0}'],
         r"line 1: 1 choice\(s\); an example needs at least 2"),
        (['{"context": "c", "choices": [], "label": 0}'], r"0 choice"),
        (['{"context": "c", "choices": ["a", "b"], "label": 2}'],
         r"label 2; expected the index of the right choice, 0 to 1"),
        (['{"context": "c", "choices": ["a", "b"]}'], r"line 1: no label"),
        (['{"context": "c", "choices": "ab", "label": 0}'],
         r"`choices` must be a list of strings"),
        (['{"text": "c"}'], r"expected an object with a `context`"),
        (["not json"], r"line 1: not JSON"),
    ],
)  # fmt: skip
def test_bad_jsonl_names_the_line_and_the_fix(tmp_path, lines, message):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message):
        read_multiple_choice(str(path))


def test_bad_swag_columns_are_named(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("sent1,sent2,ending0,ending2,label\na,b,c,d,0\n")
    with pytest.raises(ValueError, match=r"numbered from 0 without gaps"):
        read_multiple_choice(str(path))
    path.write_text("sent1,ending0,ending1,label\na,c,d,0\n")
    with pytest.raises(ValueError, match=r"no column \['sent2'\]"):
        read_multiple_choice(str(path))


def test_unlabelled_files_read_when_labels_are_not_required(tmp_path):
    path = tmp_path / "test.csv"
    path.write_text("sent1,sent2,ending0,ending1,label\na,b,c,d,\n")
    with pytest.raises(ValueError, match="no label"):
        read_multiple_choice(str(path))
    examples = read_multiple_choice(str(path), require_labels=False)
    np.testing.assert_array_equal(examples["labels"], [-1])
