"""Predictions for a file (`recipes/classify.py --predict_file`): what
`write_predictions` writes, and the best model of a finished run."""

import json

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import files
from keras_bert.fine_tuning.classify.predictions import load_finished_classifier
from keras_bert.fine_tuning.classify.predictions import read_texts
from keras_bert.fine_tuning.classify.predictions import write_predictions
from tests.fine_tuning.classify.test_job import VOCABULARY
from tests.helpers import tiny_backbone_config

TEXTS = ["john went to paris", "a quiet day", "fifa hired mary"]


def classifier(multi_label=False, seed=0):
    keras.utils.set_random_seed(seed)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
    )
    model = keras_bert.BertClassifier(
        backbone,
        num_classes=3,
        label_names=["LOC", "ORG", "PER"],
        multi_label=multi_label,
    )
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    return model, keras_bert.BertPreprocessor(tokenizer, sequence_length=16)


def read_lines(path):
    return [json.loads(line) for line in files.read_text(path).splitlines()]


def test_single_label_predictions_are_the_most_probable_label(tmp_path):
    model, preprocessor = classifier()
    source = tmp_path / "new.txt"
    source.write_text("\n".join(TEXTS[:2]) + "\n\n" + TEXTS[2] + "\n")
    output = str(tmp_path / "out" / "predictions.jsonl")
    assert write_predictions(model, preprocessor, str(source), output) == 3
    rows = read_lines(output)
    assert [row["text"] for row in rows] == TEXTS  # input order, no blanks
    logits = model.predict(preprocessor(np.array(TEXTS)), verbose=0)
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    for row, probabilities in zip(rows, expected):
        assert list(row["probabilities"]) == ["LOC", "ORG", "PER"]
        np.testing.assert_allclose(
            list(row["probabilities"].values()), probabilities, atol=1e-5
        )
        assert row["label"] == ["LOC", "ORG", "PER"][probabilities.argmax()]


def test_multi_label_predictions_list_the_names_over_threshold(tmp_path):
    model, preprocessor = classifier(multi_label=True)
    # LOC and PER over threshold whatever the text, ORG never.
    model.thresholds = [1e-6, 1 - 1e-6, 1e-6]
    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    output = str(tmp_path / "predictions.jsonl")
    write_predictions(model, preprocessor, str(source), output)
    rows = read_lines(output)
    assert [row["labels"] for row in rows] == [["LOC", "PER"]] * 3
    assert "label" not in rows[0]


def test_labels_in_the_file_are_ignored_and_pairs_kept(tmp_path):
    source = tmp_path / "pairs.tsv"
    source.write_text(
        "text_a\ttext_b\tlabel\njohn went\tto paris\tLOC\nacme\tfifa\t\n"
    )
    texts = read_texts(str(source))
    assert [list(side) for side in texts] == [
        ["john went", "acme"],
        ["to paris", "fifa"],
    ]
    model, preprocessor = classifier()
    model.pair = False
    with pytest.raises(ValueError, match="holds sentence pairs but the model"):
        write_predictions(
            model, preprocessor, str(source), str(tmp_path / "p.jsonl")
        )


def test_missing_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="No such file: .*missing.txt"):
        read_texts(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="No finished run in .*results.json"):
        load_finished_classifier(str(tmp_path), classifier)


def test_a_finished_run_gives_back_its_best_model(tmp_path):
    trained, preprocessor = classifier(multi_label=True, seed=1)
    trained.save_weights(str(tmp_path / "best.weights.h5"))
    files.write_json(
        str(tmp_path / "results.json"),
        {
            "config": {"lora_rank": 0},
            "best_epoch": 2,
            "label_names": ["LOC", "ORG", "PER"],
            "multi_label": True,
            "thresholds": {"LOC": 0.1, "ORG": 0.2, "PER": 0.3},
        },
    )
    built = []

    def build_model(results):
        built.append(results["label_names"])
        return classifier(multi_label=results["multi_label"], seed=2)

    model, _, results = load_finished_classifier(str(tmp_path), build_model)
    assert built == [["LOC", "ORG", "PER"]] and results["best_epoch"] == 2
    np.testing.assert_allclose(model.thresholds, [0.1, 0.2, 0.3])
    inputs = preprocessor(np.array(TEXTS))
    np.testing.assert_allclose(
        model.predict(inputs, verbose=0),
        trained.predict(inputs, verbose=0),
        atol=1e-6,
    )
