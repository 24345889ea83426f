"""`recipes/squad.py` end to end on hand-written SQuAD files, tiny model.

The recipe runs in a subprocess (its absl flags would clash with the GLUE
recipe's in this process).
"""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

import keras_bert
from tests.helpers import tiny_backbone_config

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

PARAGRAPHS = [
    (
        "The quick brown fox jumped over the lazy dog in Paris on Monday.",
        [
            ("q1", "Who jumped over the dog?", "The quick brown fox", 0),
            ("q2", "Where did the fox jump?", "Paris", 48),
            ("q3", "When did the fox jump?", "Monday", 57),
        ],
    ),
    (
        "Lyon is a city in France. The river Rhône runs through Lyon, "
        "and the city is known for its food and its old town.",
        [
            ("q4", "Which river runs through Lyon?", "Rhône", 36),
            # A wrong answer_start, as real SQuAD has a few: the reader
            # finds the text nearby.
            ("q5", "What is Lyon known for?", "its food", 90),
        ],
    ),
]
IMPOSSIBLE = ("q6", "Who founded Paris?")


def squad_json(version_2=False):
    data = []
    for context, questions in PARAGRAPHS:
        qas = [
            {
                "id": qid,
                "question": question,
                "answers": [{"text": text, "answer_start": start}],
                **({"is_impossible": False} if version_2 else {}),
            }
            for qid, question, text, start in questions
        ]
        data.append({"context": context, "qas": qas})
    if version_2:
        data[0]["qas"].append(
            {
                "id": IMPOSSIBLE[0],
                "question": IMPOSSIBLE[1],
                "answers": [],
                "is_impossible": True,
            }
        )
    return {
        "version": "v2.0" if version_2 else "1.1",
        "data": [{"title": "Fixture", "paragraphs": data}],
    }


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny Hugging Face checkpoint whose vocabulary covers the texts."""
    text = json.dumps(squad_json(version_2=True)).lower()
    words = set("".join(c if c.isalnum() else f" {c} " for c in text).split())
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=len(vocabulary), max_sequence_length=64
        )
    )
    directory = str(tmp_path_factory.mktemp("tiny_bert"))
    keras_bert.checkpoints.save_huggingface(
        backbone, keras_bert.BertTokenizer(vocabulary), directory
    )
    return directory


def run_recipe(tmp_path, checkpoint, version_2=False, *extra):
    data = tmp_path / "squad.json"
    data.write_text(json.dumps(squad_json(version_2)), encoding="utf-8")
    model_dir, export_dir = tmp_path / "run", tmp_path / "export"
    flags = [
        f"--train_file={data}",
        f"--predict_file={data}",
        f"--init_checkpoint={checkpoint}",
        f"--model_dir={model_dir}",
        f"--export_dir={export_dir}",
        "--max_seq_length=32",
        "--doc_stride=8",
        "--max_query_length=8",
        "--epochs=2",
        "--batch_size=4",
        "--learning_rate=1e-3",
        *extra,
    ]
    if version_2:
        flags.append("--version_2_with_negative")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "recipes", "squad.py"), *flags],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    with open(model_dir / "results.json") as file:
        results = json.load(file)
    return results, model_dir, result.stdout


def contexts_by_id():
    return {
        qid: context
        for context, questions in PARAGRAPHS
        for qid, *_ in questions
    }


@pytest.mark.slow
def test_squad_v1_recipe(tmp_path, checkpoint):
    results, model_dir, stdout = run_recipe(tmp_path, checkpoint)
    assert "SQuAD: best epoch" in stdout
    # results.json: the official scores at the top, every epoch's scores.
    assert 0 <= results["exact_match"] <= results["f1"] <= 100
    assert results["metrics"]["predict"]["f1"] == results["f1"]
    assert [e["epoch"] for e in results["epochs"]] == [1, 2]
    assert results["num_train_questions"] == 5
    assert results["num_predict_windows"] > 5  # contexts span windows
    assert results["config"]["doc_stride"] == 8

    with open(model_dir / "predictions.json") as file:
        predictions = json.load(file)
    contexts = contexts_by_id()
    assert set(predictions) == set(contexts)
    for qid, answer in predictions.items():
        assert answer in contexts[qid]
    with open(model_dir / "nbest_predictions.json") as file:
        nbest = json.load(file)
    for qid, entries in nbest.items():
        assert 1 <= len(entries) <= 20
        assert entries[0]["text"] == predictions[qid]
        assert abs(sum(e["probability"] for e in entries) - 1) < 1e-6
    assert not (model_dir / "null_odds.json").exists()

    # The export answers as the recipe's post-processing did.
    serve = tf.saved_model.load(results["export_dir"]).signatures[
        "serving_default"
    ]
    ids = sorted(contexts)
    questions = {
        qid: question for _, qs in PARAGRAPHS for qid, question, *_ in qs
    }
    outputs = serve(
        question=tf.constant([questions[i] for i in ids]),
        context=tf.constant([contexts[i] for i in ids]),
    )
    for index, qid in enumerate(ids):
        answer = outputs["answer"][index].numpy().decode("utf-8")
        assert answer == predictions[qid], qid
        start, end = int(outputs["start"][index]), int(outputs["end"][index])
        assert contexts[qid][start:end] == answer


@pytest.mark.slow
def test_squad_v2_recipe_writes_null_odds(tmp_path, checkpoint):
    results, model_dir, _ = run_recipe(tmp_path, checkpoint, version_2=True)
    metrics = results["metrics"]["predict"]
    assert metrics["total"] == 6
    assert metrics["HasAns_total"] == 5 and metrics["NoAns_total"] == 1
    assert "best_f1_thresh" in metrics
    assert results["exact_match"] == metrics["exact"]
    with open(model_dir / "null_odds.json") as file:
        null_odds = json.load(file)
    assert set(null_odds) == set(contexts_by_id()) | {IMPOSSIBLE[0]}


def test_bad_flags_fail_before_training(tmp_path, checkpoint):
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "recipes", "squad.py"),
            f"--train_file={tmp_path}/missing.json",
            f"--predict_file={tmp_path}/missing.json",
            f"--init_checkpoint={checkpoint}",
            f"--model_dir={tmp_path}/run",
            "--max_seq_length=32",
            "--doc_stride=30",
            "--max_query_length=8",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode != 0
    assert "doc_stride=30" in result.stderr
