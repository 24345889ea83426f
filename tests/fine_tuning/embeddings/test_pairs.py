"""Reading pairs and STS files; a missing column names the file, the
columns found and the fix."""

import json

import pytest

from keras_bert.fine_tuning.embeddings import read_pairs
from keras_bert.fine_tuning.embeddings import read_sts
from keras_bert.fine_tuning.embeddings import squad_question_paragraph_pairs
from keras_bert.fine_tuning.embeddings import write_pairs_jsonl


def test_jsonl_and_tsv_give_the_same_pairs(tmp_path):
    pairs = [("a question?", "its passage."), ("another", "one more")]
    jsonl = tmp_path / "pairs.jsonl"
    assert write_pairs_jsonl(pairs, str(jsonl)) == 2
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(
        "id\tanchor\tpositive\n1\ta question?\tits passage.\n"
        "2\tanother\tone more\n\n"
    )
    assert read_pairs(str(jsonl)) == pairs
    assert read_pairs(str(tsv)) == pairs


def test_a_jsonl_file_without_positive(tmp_path):
    path = tmp_path / "pairs.jsonl"
    rows = [{"anchor": "q", "positive": "p"}, {"query": "q", "passage": "p"}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ValueError) as error:
        read_pairs(str(path))
    message = str(error.value)
    for part in (str(path), "line 2", "no columns `anchor`, `positive`"):
        assert part in message
    assert "['query', 'passage']" in message
    assert (
        "Set --text_column to the column of `anchor` and --text_b_column"
        " to the column of `positive` (e.g. --text_column=query)" in message
    )


def test_a_tsv_file_without_anchor(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("question\tpositive\nq\tp\n")
    with pytest.raises(ValueError, match=r"pairs.tsv, line 1: no column "
                       r"`anchor`; columns found: \['question', 'positive'\]"
                       r".*--text_column"):  # fmt: skip
        read_pairs(str(path))


def test_an_empty_text_is_an_error(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"anchor": " ", "positive": "p"}) + "\n")
    with pytest.raises(ValueError, match=r"line 1: an empty"):
        read_pairs(str(path))


def test_an_empty_file_is_an_error(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n")
    with pytest.raises(ValueError, match="holds no pairs"):
        read_pairs(str(path))


def test_sts_tsv_in_glue_layout(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text(
        "index\tgenre\tsentence1\tsentence2\tscore\n"
        "0\tmain\tA man.\tA person.\t4.2\n1\tmain\tA cat.\tA car.\t0.5\n"
    )
    assert read_sts(str(path)) == (
        ["A man.", "A cat."],
        ["A person.", "A car."],
        [4.2, 0.5],
    )
    path.write_text("sentence1\tsentence2\tscore\na\tb\thigh\n")
    with pytest.raises(ValueError, match="score` is not a number"):
        read_sts(str(path))


def test_squad_pairs(tmp_path):
    path = tmp_path / "squad.json"
    paragraph = {
        "context": "Paris is in France.",
        "qas": [{"question": " Where is Paris? "}, {"question": "What?"}],
    }
    path.write_text(json.dumps({"data": [{"paragraphs": [paragraph]}]}))
    assert squad_question_paragraph_pairs(str(path)) == [
        ("Where is Paris?", "Paris is in France."),
        ("What?", "Paris is in France."),
    ]
