"""Choices for a file (`recipes/multiple_choice.py --predict_file`): a
training file's format, labels optional, one JSON line per example."""

import json

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.fine_tuning.multiple_choice import write_swag_csv
from keras_bert.fine_tuning.multiple_choice.predictions import read_questions
from keras_bert.fine_tuning.multiple_choice.predictions import (
    write_choice_predictions,
)
from tests.fine_tuning.multiple_choice.test_job import VOCABULARY
from tests.helpers import tiny_backbone_config

CONTEXTS = ["the cat sat", "the dog ran"]
CHOICES = [["on the mat", "on the moon", "home"], ["home", "on the mat", "sat"]]


def model_and_preprocessor():
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
    )
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
    )
    return keras_bert.BertMultipleChoice(backbone), preprocessor


def test_unlabelled_jsonl_and_csv_are_read(tmp_path):
    source = tmp_path / "new.jsonl"
    source.write_text(
        "".join(
            json.dumps({"context": context, "choices": choices}) + "\n"
            for context, choices in zip(CONTEXTS, CHOICES)
        )
    )
    questions = read_questions(str(source))
    assert questions["choices"].tolist() == CHOICES
    assert questions["labels"].tolist() == [-1, -1]
    swag = str(tmp_path / "new.csv")
    write_swag_csv(swag, CONTEXTS, CHOICES, [0, 2])
    assert read_questions(swag)["contexts"].tolist() == CONTEXTS
    with pytest.raises(ValueError, match="No such file: .*missing.jsonl"):
        read_questions(str(tmp_path / "missing.jsonl"))


def test_each_example_gets_its_most_probable_choice(tmp_path):
    model, preprocessor = model_and_preprocessor()
    swag = str(tmp_path / "new.csv")
    write_swag_csv(swag, CONTEXTS, CHOICES, [0, 2])
    output = str(tmp_path / "out" / "predictions.jsonl")
    written = write_choice_predictions(
        model, preprocessor, read_questions(swag), output
    )
    assert written == 2
    with open(output, encoding="utf-8") as file:
        rows = [json.loads(line) for line in file]
    assert [row["context"] for row in rows] == CONTEXTS
    assert [row["choices"] for row in rows] == CHOICES
    # What the model says on the raw text, softmaxed.
    model.preprocessor = preprocessor
    logits = model.predict((CONTEXTS, CHOICES), verbose=0)
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for row, probabilities, choices in zip(rows, expected, CHOICES):
        np.testing.assert_allclose(
            row["probabilities"], probabilities, atol=2e-6
        )
        assert row["choice"] == probabilities.argmax()
        assert row["choice_text"] == choices[row["choice"]]
