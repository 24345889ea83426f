"""Tags for a file (`recipes/ner.py --predict_file`): raw text or CoNLL
words in, one JSON line per sentence out, as the job predicts them."""

import json

import pytest

import keras_bert
from keras_bert.fine_tuning.ner.entities import find_entities
from keras_bert.fine_tuning.ner.predictions import looks_like_conll
from keras_bert.fine_tuning.ner.predictions import read_sentences
from keras_bert.fine_tuning.ner.predictions import write_ner_predictions
from keras_bert.training.ner_metrics import get_entities
from tests.fine_tuning.ner.test_job import DOCUMENT_STRIDE
from tests.fine_tuning.ner.test_job import SEQUENCE_LENGTH
from tests.fine_tuning.ner.test_job import files  # noqa: F401 (fixture)
from tests.fine_tuning.ner.test_job import ner_task
from tests.fine_tuning.ner.test_job import read_predictions
from tests.fine_tuning.ner.test_job import tokenizer

TEXTS = [
    "John Smith lives in Paris.",
    "Mary works at Acme Corp, in Rome .",
    "The Yorkers play in Berlin and Rome and Paris and London and Rome too",
]


def read_rows(path):
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def test_text_and_conll_files_are_told_apart(tmp_path, files):  # noqa: F811
    text = tmp_path / "new.txt"
    text.write_text("\ufeff" + "\n".join(TEXTS[:2]) + "\n\n" + TEXTS[2])
    assert read_sentences(str(text)) == {"format": "text", "texts": TEXTS}
    _, valid = files
    conll = read_sentences(valid)
    assert conll["format"] == "conll"
    assert conll["words"][0] == ["John", "lives", "in", "Rome", "."]
    assert conll["line"][0] == 3  # after -DOCSTART- and a blank line
    # A word a line, no -DOCSTART-: CoNLL; forced, a text a line.
    words = tmp_path / "words.txt"
    words.write_text("John\nSmith\n\nMary\n")
    assert read_sentences(str(words))["words"] == [["John", "Smith"], ["Mary"]]
    assert read_sentences(str(words), "text")["texts"] == [
        "John",
        "Smith",
        "Mary",
    ]
    assert not looks_like_conll("John lives here\n\nMary works\n")
    # Texts of as many words, a blank line between: no block of words.
    assert not looks_like_conll("John lives here.\n\nMary works there.\n")
    assert looks_like_conll("John B-PER\nlives O\n\nMary B-PER\n")


def test_bad_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="No such file: .*missing.txt"):
        read_sentences(str(tmp_path / "missing.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    with pytest.raises(ValueError, match="empty.txt has no sentences"):
        read_sentences(str(empty))
    with pytest.raises(ValueError, match="holds no sentence"):
        read_sentences(str(empty), "conll")
    with pytest.raises(ValueError, match="Unknown format 'iob'"):
        read_sentences(str(empty), "iob")


@pytest.mark.parametrize("document_context", [False, True])
def test_conll_words_get_the_tags_the_run_writes(
    files,  # noqa: F811
    tmp_path,
    document_context,
):
    options = {"document_context": True, "stride": DOCUMENT_STRIDE}
    task = ner_task(files, **(options if document_context else {}))
    task.load_data()
    model, _ = task.build_model()
    _, valid = files
    output = tmp_path / "predictions.jsonl"
    sentences = read_sentences(valid)
    assert write_ner_predictions(task, model, sentences, str(output)) == 5
    rows = read_rows(output)
    # The tags of the run's predictions_validation.txt, word for word.
    written = task.write_outputs(model, str(tmp_path))["predictions"]
    expected = read_predictions(written["validation"])
    assert [row["words"] for row in rows] == sentences["words"]
    assert [row["tags"] for row in rows] == [
        [predicted for _, _, predicted in lines] for lines in expected
    ]
    assert [row["line"] for row in rows] == sentences["line"]
    assert any(row["entities"] for row in rows)  # untrained, but tagging
    for row in rows:
        assert [
            (entity["type"], entity["start"], entity["end"] - 1)
            for entity in row["entities"]
        ] == get_entities(row["tags"])
        for entity in row["entities"]:
            span = row["words"][entity["start"] : entity["end"]]
            assert entity["entity"] == " ".join(span)
            assert 0 < entity["score"] <= 1


def test_raw_text_gets_the_exported_models_entities(
    files,  # noqa: F811
    tmp_path,
):
    task = ner_task(files)
    task.load_data()
    model, _ = task.build_model()
    output = tmp_path / "predictions.jsonl"
    write_ner_predictions(
        task, model, {"format": "text", "texts": TEXTS}, str(output)
    )
    rows = read_rows(output)
    assert [row["text"] for row in rows] == TEXTS
    assert rows[0]["words"] == ["John", "Smith", "lives", "in", "Paris", "."]
    preprocessor = keras_bert.BertPreprocessor(tokenizer(), SEQUENCE_LENGTH)
    expected = find_entities(model, preprocessor, TEXTS, stride=task.stride)
    assert any(expected)  # untrained, but tagging
    for row, entities in zip(rows, expected):
        assert len(row["tags"]) == len(row["words"])
        assert [
            (e["type"], e["start"], e["end"], e["entity"])
            for e in row["entities"]
        ] == [(e["type"], e["start"], e["end"], e["entity"]) for e in entities]
        for got, entity in zip(row["entities"], entities):
            assert got["score"] == pytest.approx(entity["score"], abs=1e-6)
            assert row["text"][got["start"] : got["end"]] == got["entity"]
