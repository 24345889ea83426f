"""`recipes/classify.py` end to end: JSONL multi-label, TSV single-label,
long documents in windows (`--doc_stride`).

The recipe runs in a subprocess (its absl flags would clash with the
other recipes' in this process), on `bert_tiny` with the files of
tests/fine_tuning/classify/test_job.py (and their documents, from
test_job_windows.py); its window flags' checks run here too.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from absl import app

import keras_bert
from keras_bert.cli.recipe_flags import document_window_arguments
from tests.fine_tuning.classify.test_job import DEV
from tests.fine_tuning.classify.test_job import TRAIN
from tests.fine_tuning.classify.test_job import VOCABULARY
from tests.fine_tuning.classify.test_job import write_jsonl
from tests.fine_tuning.classify.test_job_windows import documents
from tests.fine_tuning.classify.test_job_windows import single_label

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def run_recipe(tmp_path, *flags):
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("\n".join(VOCABULARY) + "\n")
    return subprocess.run(
        [
            sys.executable, os.path.join(ROOT, "recipes", "classify.py"),
            "--preset=bert_tiny", f"--vocabulary={vocabulary}",
            f"--model_dir={tmp_path / 'run'}", "--epochs=2",
            "--max_seq_length=16", "--batch_size=4", "--learning_rate=1e-3",
            *flags,
        ],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip


def results(tmp_path):
    with open(tmp_path / "run" / "results.json") as file:
        return json.load(file)


@pytest.mark.slow
def test_multi_label_jsonl_trains_tunes_and_exports(tmp_path):
    export_dir = tmp_path / "export"
    process = run_recipe(
        tmp_path,
        f"--train_file={write_jsonl(tmp_path / 'train.jsonl', TRAIN)}",
        f"--eval_file={write_jsonl(tmp_path / 'dev.jsonl', DEV)}",
        "--multi_label",
        f"--export_dir={export_dir}",
    )
    assert process.returncode == 0, process.stderr[-4000:]
    assert "validation (tuned thresholds): micro_f1" in process.stdout
    run = results(tmp_path)
    assert run["task"] == "classify" and run["multi_label"]
    assert run["config"]["max_seq_length"] == 16
    assert len(run["epochs"]) == 2
    assert list(run["thresholds"]) == ["LOC", "ORG", "PER"]
    serve = tf.saved_model.load(run["export_dir"]).signatures["serving_default"]
    outputs = serve(text=tf.constant(["john went to rome"]))
    assert outputs["labels"].shape == (1, 3)
    assert outputs["probabilities"].shape == (1, 3)


@pytest.mark.slow
def test_single_label_tsv_and_a_bad_flag(tmp_path):
    def tsv(name, rows):
        path = tmp_path / name
        path.write_text(
            "text\tlabel\n"
            + "".join(f"{text}\t{'PER' in labels}\n" for text, labels in rows)
        )  # fmt: skip
        return path

    train, dev = tsv("train.tsv", TRAIN), tsv("dev.tsv", DEV)
    process = run_recipe(
        tmp_path, f"--train_file={train}", f"--eval_file={dev}"
    )
    assert process.returncode == 0, process.stderr[-4000:]
    run = results(tmp_path)
    assert run["label_names"] == ["False", "True"]
    assert run["monitor"] == "validation/accuracy"
    assert "accuracy" in run["metrics"]["validation"]
    process = run_recipe(
        tmp_path, f"--train_file={train}", f"--eval_file={dev}",
        "--max_seq_length=0",
    )  # fmt: skip
    assert process.returncode != 0
    assert "--max_seq_length must be positive" in process.stderr


@pytest.mark.slow
def test_long_documents_train_in_windows_and_export_them(tmp_path):
    train = write_jsonl(
        tmp_path / "train.jsonl", single_label(documents(TRAIN)), "label"
    )
    dev = write_jsonl(
        tmp_path / "dev.jsonl", single_label(documents(DEV)), "label"
    )
    process = run_recipe(
        tmp_path, f"--train_file={train}", f"--eval_file={dev}",
        "--doc_stride=7", "--aggregation=max",
        f"--export_dir={tmp_path / 'export'}",
    )  # fmt: skip
    assert process.returncode == 0, process.stderr[-4000:]
    run = results(tmp_path)
    assert run["config"]["doc_stride"] == 7
    assert run["config"]["aggregation"] == "max"
    assert run["num_train_examples"] == len(TRAIN)  # documents
    # The best epoch's weights in the classifier the flags describe: the
    # export answers a long text (5 windows) as its `predict` does.
    model = keras_bert.BertClassifier(
        keras_bert.BertBackbone.from_preset(
            "bert_tiny", vocabulary_size=len(VOCABULARY)
        ),
        2, label_names=run["label_names"], doc_stride=7, aggregation="max",
        preprocessor=keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY), sequence_length=16
        ),
    )  # fmt: skip
    model.load_weights(str(tmp_path / "run" / "best.weights.h5"))
    text = " ".join(text for text, _ in TRAIN + DEV)
    assert model._text_packer()([text])["token_ids"].shape[1] == 5
    serve = tf.saved_model.load(run["export_dir"]).signatures["serving_default"]
    outputs = serve(text=tf.constant([text, DEV[0][0]]))
    logits = model.predict([text, DEV[0][0]], verbose=0)
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(),
        tf.nn.softmax(logits).numpy(),
        rtol=0,
        atol=1e-6,
    )
    # A bad window flag fails before any training, naming its value.
    for flag, message in [
        ("--max_windows=0", "Received: max_windows=0"),
        ("--aggregation=median", "--aggregation=median"),
    ]:
        process = run_recipe(
            tmp_path, f"--train_file={train}", f"--eval_file={dev}",
            "--doc_stride=7", flag, f"--model_dir={tmp_path / 'bad'}",
        )  # fmt: skip
        assert process.returncode != 0
        assert message in process.stderr, process.stderr[-2000:]
        assert not (tmp_path / "bad").exists()


def window_flags(**values):
    return {
        "doc_stride": None, "max_windows": None, "aggregation": "mean",
        **values,
    }  # fmt: skip


@pytest.mark.parametrize(
    "values, expected",
    [
        ({}, (None, None, "mean")),
        ({"doc_stride": 0}, (None, None, "mean")),  # 0: truncation
        ({"doc_stride": 7, "max_windows": 3, "aggregation": "max"},
         (7, 3, "max")),
        ({"doc_stride": 14}, (14, None, "mean")),  # sequence_length - 2
    ],
)  # fmt: skip
def test_window_flags_give_the_classifier_arguments(values, expected):
    arguments = document_window_arguments(window_flags(**values), 16)
    assert arguments == dict(
        zip(("doc_stride", "max_windows", "aggregation"), expected)
    )


@pytest.mark.parametrize(
    "values, message",
    [
        ({"doc_stride": -2}, "Received: doc_stride=-2"),
        ({"doc_stride": 15}, r"\[1, sequence_length - 2 = 14\].*--max_seq_"
         "length=16"),
        ({"doc_stride": 7, "max_windows": 0}, "Received: max_windows=0"),
        ({"max_windows": 4}, "max_windows=4 without doc_stride"),
        ({"doc_stride": 7, "aggregation": "median"},
         "Received: aggregation='median'"),
        ({"aggregation": "max"}, "aggregation='max' without doc_stride"),
    ],
)  # fmt: skip
def test_bad_window_flags_are_named(values, message):
    with pytest.raises(app.UsageError, match=message):
        document_window_arguments(window_flags(**values), 16)


@pytest.mark.slow
def test_predict_file_after_training_and_from_the_finished_run(tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", single_label(TRAIN), "label")
    dev = write_jsonl(tmp_path / "dev.jsonl", single_label(DEV), "label")
    texts = tmp_path / "new.txt"
    texts.write_text("mary went to paris\nacme and fifa\n")
    process = run_recipe(
        tmp_path, f"--train_file={train}", f"--eval_file={dev}",
        f"--predict_file={texts}",
    )  # fmt: skip
    assert process.returncode == 0, process.stderr[-4000:]
    after_training = tmp_path / "run" / "predictions_new.jsonl"
    assert "wrote 2 predictions" in process.stdout
    # Later, without --train_file: the finished run's best epoch predicts.
    again = tmp_path / "again.jsonl"
    process = run_recipe(
        tmp_path, f"--predict_file={texts}", f"--predictions_file={again}"
    )
    assert process.returncode == 0, process.stderr[-4000:]
    rows = [json.loads(line) for line in again.read_text().splitlines()]
    assert [row["text"] for row in rows] == [
        "mary went to paris",
        "acme and fifa",
    ]
    assert set(rows[0]["probabilities"]) == set(
        results(tmp_path)["label_names"]
    )
    first = [
        json.loads(line) for line in after_training.read_text().splitlines()
    ]
    for row, before in zip(rows, first):
        assert row["label"] == before["label"]
        np.testing.assert_allclose(
            list(row["probabilities"].values()),
            list(before["probabilities"].values()),
            atol=1e-5,
        )
    process = run_recipe(
        tmp_path, f"--predict_file={texts}",
        f"--model_dir={tmp_path / 'never_trained'}",
    )  # fmt: skip
    assert process.returncode != 0
    assert "No finished run in" in process.stderr
