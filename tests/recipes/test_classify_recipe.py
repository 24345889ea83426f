"""`recipes/classify.py` end to end: JSONL multi-label, TSV single-label.

The recipe runs in a subprocess (its absl flags would clash with the
other recipes' in this process), on `bert_tiny` with the files of
tests/fine_tuning/classify/test_job.py.
"""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tests.fine_tuning.classify.test_job import DEV
from tests.fine_tuning.classify.test_job import TRAIN
from tests.fine_tuning.classify.test_job import VOCABULARY
from tests.fine_tuning.classify.test_job import write_jsonl

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
    serve = tf.saved_model.load(run["export_dir"]).signatures[
        "serving_default"
    ]
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
