"""`recipes/multiple_choice.py` end to end on tiny files, `bert_tiny`.

The recipe runs in a subprocess (its absl flags would clash with the
other recipes' in this process): SWAG-layout CSV to train on, JSONL to
score; its export then answers raw text as its predictions file says.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.fine_tuning.multiple_choice import write_swag_csv

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

TRAIN = [
    ("the cat sat", "on the", ["mat .", "moon .", "sea ."], 0),
    ("the dog ran", "to the", ["sea .", "park .", "moon ."], 1),
    ("a bird flew", "over the", ["mat .", "park .", "sea ."], 2),
    ("the cat ran", "to the", ["park .", "mat .", "moon ."], 0),
]
EVAL = [
    {"context": "a dog sat", "choices": ["on the mat .", "on the moon .",
                                         "in the sea ."], "label": 0},
    {"context": "the bird flew", "choices": ["to the sea .", "on a mat .",
                                             "to the park ."], "label": 2},
]  # fmt: skip


def _write_train(tmp_path):
    """TRAIN as a SWAG CSV; its path."""
    train = str(tmp_path / "train.csv")
    write_swag_csv(
        train,
        [context for context, _, _, _ in TRAIN],
        [endings for _, _, endings, _ in TRAIN],
        [label for _, _, _, label in TRAIN],
        headers=[header for _, header, _, _ in TRAIN],
    )
    return train


@pytest.mark.slow
def test_recipe_trains_scores_and_exports(tmp_path):
    train = _write_train(tmp_path)
    evaluation = tmp_path / "eval.jsonl"
    evaluation.write_text("\n".join(json.dumps(e) for e in EVAL) + "\n")
    words = {
        word
        for text in [c for c, _, _, _ in TRAIN] + [h for _, h, _, _ in TRAIN]
        + [e for _, _, es, _ in TRAIN for e in es]
        + [e["context"] for e in EVAL] + [c for e in EVAL for c in e["choices"]]
        for word in text.split()
    }  # fmt: skip
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text(
        "\n".join(
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(words)]
        )
    )
    model_dir, export_dir = tmp_path / "run", tmp_path / "export"
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "recipes", "multiple_choice.py"),
            f"--train_file={train}",
            f"--eval_file={evaluation}",
            "--preset=bert_tiny",
            f"--vocabulary={vocabulary}",
            f"--model_dir={model_dir}",
            f"--export_dir={export_dir}",
            "--max_seq_length=16",
            "--epochs=2",
            "--batch_size=2",
            "--learning_rate=1e-3",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "multiple choice: best epoch" in result.stdout

    results = json.loads((model_dir / "results.json").read_text())
    assert results["task"] == "multiple_choice"
    assert results["monitor"] == "validation/accuracy"
    assert results["num_choices"] == 3
    assert results["num_eval_examples"] == {"validation": 2}
    assert results["config"]["max_seq_length"] == 16
    assert [e["epoch"] for e in results["epochs"]] == [1, 2]
    best = results["epochs"][results["best_epoch"] - 1]
    assert results["metrics"] == best["metrics"]
    assert results["export_dir"] == str(export_dir / "1")

    predictions = [
        json.loads(line)
        for line in (model_dir / "predictions_validation.jsonl")
        .read_text()
        .splitlines()
    ]
    assert [p["label"] for p in predictions] == [0, 2]
    accuracy = np.mean([p["choice"] == p["label"] for p in predictions])
    assert accuracy == results["metrics"]["validation"]["accuracy"]

    serve = tf.saved_model.load(results["export_dir"]).signatures[
        "serving_default"
    ]
    served = serve(
        context=tf.constant([e["context"] for e in EVAL]),
        choices=tf.constant([e["choices"] for e in EVAL]),
    )
    np.testing.assert_allclose(
        served["probabilities"].numpy(),
        [p["probabilities"] for p in predictions],
        atol=2e-6,  # the file rounds to 6 decimals
    )
    assert served["choice"].numpy().tolist() == [
        p["choice"] for p in predictions
    ]


@pytest.mark.slow
def test_without_an_eval_file_held_out_rows_are_scored(tmp_path):
    train = str(tmp_path / "train.csv")
    rows = TRAIN * 5  # 20 rows: 5 held out at 0.25
    write_swag_csv(
        train,
        [f"{context} {i}" for i, (context, _, _, _) in enumerate(rows)],
        [endings for _, _, endings, _ in rows],
        [label for _, _, _, label in rows],
    )
    words = {w for c, h, es, _ in TRAIN for w in " ".join([c, h, *es]).split()}
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(words)]
    ))  # fmt: skip
    model_dir = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "recipes", "multiple_choice.py"),
         f"--train_file={train}", "--holdout_fraction=0.25", "--seed=2",
         "--preset=bert_tiny", f"--vocabulary={vocabulary}",
         f"--model_dir={model_dir}", "--max_seq_length=16", "--epochs=1",
         "--batch_size=4"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    assert "held out 5 of 20 examples" in result.stderr
    results = json.loads((model_dir / "results.json").read_text())
    assert list(results["metrics"]) == ["validation"]
    assert results["num_eval_examples"] == {"validation": 5}
    assert results["num_train_examples"] == 15
    assert results["config"]["holdout"]["num_held_out"] == 5
    assert results["config"]["holdout_fraction"] == 0.25


def run_recipe(tmp_path, *flags):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "recipes", "multiple_choice.py"),
         "--preset=bert_tiny", f"--vocabulary={tmp_path / 'vocab.txt'}",
         f"--model_dir={tmp_path / 'run'}", "--max_seq_length=16",
         "--epochs=1", "--batch_size=2", "--learning_rate=1e-3", *flags],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip


@pytest.mark.slow
def test_predict_file_after_training_and_from_the_finished_run(tmp_path):
    train = _write_train(tmp_path)
    words = {w for c, h, es, _ in TRAIN for w in " ".join([c, h, *es]).split()}
    (tmp_path / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(words)]
    ))  # fmt: skip
    # The training format without labels, and four choices, not three.
    questions = tmp_path / "new.jsonl"
    questions.write_text(
        "".join(
            json.dumps({"context": e["context"], "choices": choices}) + "\n"
            for e, choices in zip(
                EVAL,
                [
                    EVAL[0]["choices"] + ["sat ."],
                    EVAL[1]["choices"][::-1] + ["on the mat ."],
                ],
            )
        )
    )
    process = run_recipe(
        tmp_path, f"--train_file={train}", f"--predict_file={questions}"
    )
    assert process.returncode == 0, process.stderr[-4000:]
    after_training = tmp_path / "run" / "predictions_new.jsonl"
    assert "multiple choice: wrote 2 predictions" in process.stdout
    rows = [
        json.loads(line) for line in after_training.read_text().splitlines()
    ]
    assert [row["context"] for row in rows] == [e["context"] for e in EVAL]
    assert [len(row["probabilities"]) for row in rows] == [4, 4]
    for row in rows:
        assert sum(row["probabilities"]) == pytest.approx(1, abs=1e-5)
        assert row["choice"] == int(np.argmax(row["probabilities"]))
        assert row["choice_text"] == row["choices"][row["choice"]]
    # Later, without --train_file: the finished run's best epoch predicts.
    again = tmp_path / "again.jsonl"
    process = run_recipe(
        tmp_path, f"--predict_file={questions}", f"--predictions_file={again}"
    )
    assert process.returncode == 0, process.stderr[-4000:]
    reloaded = [json.loads(line) for line in again.read_text().splitlines()]
    for row, before in zip(reloaded, rows, strict=True):
        assert {**row, "probabilities": None} == {
            **before,
            "probabilities": None,
        }
        np.testing.assert_allclose(
            row["probabilities"], before["probabilities"], atol=2e-6
        )
