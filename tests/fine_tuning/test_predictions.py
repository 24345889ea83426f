"""What the recipes' `--predict_file` share: the finished run, the default
predictions path, the JSONL written."""

import json

import pytest

from keras_bert import files
from keras_bert.fine_tuning.predictions import check_predict_file
from keras_bert.fine_tuning.predictions import finished_run
from keras_bert.fine_tuning.predictions import predictions_path
from keras_bert.fine_tuning.predictions import write_jsonl


def test_the_default_path_is_named_after_the_file():
    assert predictions_path("runs/ner", "data/new.sentences.txt") == (
        "runs/ner/predictions_new.sentences.jsonl"
    )
    assert predictions_path("runs/ner", "new.txt", "out.jsonl") == "out.jsonl"
    # Not over the run's own predictions of its eval split.
    assert predictions_path("runs/a", "glue/validation.jsonl") == (
        "runs/a/predictions_validation_file.jsonl"
    )


def test_rows_are_json_lines_unescaped(tmp_path):
    path = str(tmp_path / "out" / "p.jsonl")
    assert write_jsonl(path, iter([{"text": "Zürich"}, {"choice": 1}])) == 2
    text = files.read_text(path)
    assert text.splitlines()[0] == '{"text": "Zürich"}'
    assert [json.loads(line) for line in text.splitlines()][1] == {"choice": 1}


def test_a_run_without_its_best_weights_is_not_finished(tmp_path):
    with pytest.raises(ValueError, match="No such file: .*new.txt"):
        check_predict_file(str(tmp_path / "new.txt"))
    files.write_json(str(tmp_path / "results.json"), {"config": {}})
    with pytest.raises(
        ValueError,
        match=f"No finished run in {tmp_path}: .*best.weights.h5 does not "
        "exist.*--train_file",
    ):
        finished_run(str(tmp_path))
    (tmp_path / "best.weights.h5").write_bytes(b"")
    assert finished_run(str(tmp_path)) == {"config": {}}
