"""Reading a user's classification files: JSONL and TSV, one label or many."""

import json

import pytest

from keras_bert.fine_tuning.classify import read_classification_examples


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def jsonl(rows):
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_jsonl_single_and_multi_label(tmp_path):
    single = write(tmp_path, "a.jsonl", jsonl(
        [{"text": "good film", "label": "pos"}, {"text": "dull", "label": 0}]
    ))  # fmt: skip
    examples = read_classification_examples(single)
    assert examples.texts[0].tolist() == ["good film", "dull"]
    assert examples.labels == ["pos", "0"]
    assert examples.label_set == ["0", "pos"]
    multi = write(tmp_path, "b.jsonl", jsonl(
        [{"text": "Rome beat Milan", "labels": ["ORG", "LOC", "ORG"]},
         {"text": "quiet day", "labels": []}]
    ) + "\n")  # fmt: skip
    examples = read_classification_examples(multi, multi_label=True)
    assert examples.labels == [["ORG", "LOC"], []]
    assert examples.label_set == ["LOC", "ORG"]


def test_tsv_single_multi_and_pairs(tmp_path):
    path = write(
        tmp_path, "t.tsv",
        "text\tlabels\nRome beat Milan\tORG, LOC\nquiet day\t\n",
    )  # fmt: skip
    examples = read_classification_examples(path, multi_label=True)
    assert examples.labels == [["ORG", "LOC"], []]
    pairs = write(
        tmp_path, "p.tsv",
        'text_a\ttext_b\tlabel\nA "man" sleeps.\tA man rests.\tentailment\n',
    )  # fmt: skip
    examples = read_classification_examples(pairs)
    assert [side.tolist() for side in examples.texts] == [
        ['A "man" sleeps.'], ["A man rests."]
    ]  # fmt: skip
    assert examples.labels == ["entailment"]


@pytest.mark.parametrize(
    "name, text, multi_label, message",
    [
        ("e.jsonl", "", False, "no examples"),
        ("e.tsv", "text\tlabel\n", False, "no examples"),
        ("m.jsonl", jsonl([{"text": "a", "labels": ["X"]}]), False,
         "line 1: no `label`.*pass --multi_label"),
        ("l.jsonl", jsonl([{"text": "a", "label": ["X", "Y"]}]), False,
         "`label` is a list.*--multi_label"),
        ("s.jsonl", jsonl([{"text": "a", "labels": "X"}]), True,
         "`labels` is 'X', not a list"),
        ("n.jsonl", jsonl([{"text": "a", "label": "X"}, {"label": "Y"}]),
         False, "line 2: no text in `text`"),
        ("x.jsonl", '{"text": "a", "label": "X"}\nnot json\n', False,
         "line 2: not JSON"),
        ("c.tsv", "sentence\tlabel\na\tX\n", False,
         r"no text column; columns found: \[.sentence., .label.\]\. Set "
         "--text_column"),
        ("b.tsv", "text\tlabel\na\t\n", False, "line 2: an empty `label`"),
    ],
)  # fmt: skip
def test_bad_files_name_the_line_and_the_fix(
    tmp_path, name, text, multi_label, message
):
    path = write(tmp_path, name, text)
    with pytest.raises(ValueError, match=message):
        read_classification_examples(path, multi_label=multi_label)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="No such file: .*nothing.jsonl"):
        read_classification_examples(str(tmp_path / "nothing.jsonl"))
