"""`recipes/distill.py` end to end: a classify.py run distilled into one
of its blocks, a `.keras` teacher distilled on unlabelled texts, and a
`.keras` sentence embedder distilled and scored by STS Spearman.

The recipes run in subprocesses (their absl flags would clash), on
`bert_tiny` with the files of tests/fine_tuning/classify/test_job.py.
"""

import json
import os
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

import keras_bert
from tests.fine_tuning.classify.test_job import DEV
from tests.fine_tuning.classify.test_job import TRAIN
from tests.fine_tuning.classify.test_job import VOCABULARY
from tests.fine_tuning.classify.test_job import write_jsonl
from tests.fine_tuning.classify.test_job_windows import single_label
from tests.fine_tuning.distill.test_embeddings import write_embedder_teacher
from tests.fine_tuning.distill.test_embeddings import write_sentence_files
from tests.fine_tuning.distill.test_job import write_teacher

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def _run(recipe, *flags):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "recipes", recipe), *flags],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )


def _distill(tmp_path, teacher, *flags):
    dev = write_jsonl(tmp_path / "dev.jsonl", single_label(DEV), "label")
    return _run(
        "distill.py",
        f"--teacher={teacher}",
        f"--eval_file={dev}",
        f"--model_dir={tmp_path / 'student'}",
        "--epochs=2",
        "--batch_size=4",
        "--learning_rate=1e-3",
        "--speed_seconds=0.3",
        *flags,
    )


def _results(tmp_path):
    with open(tmp_path / "student" / "results.json") as file:
        return json.load(file)


@pytest.mark.slow
def test_a_classify_run_distils_into_its_second_block(tmp_path):
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("\n".join(VOCABULARY) + "\n")
    train = write_jsonl(tmp_path / "train.jsonl", single_label(TRAIN), "label")
    dev = write_jsonl(tmp_path / "dev.jsonl", single_label(DEV), "label")
    process = _run(
        "classify.py",
        "--preset=bert_tiny",
        f"--vocabulary={vocabulary}",
        f"--model_dir={tmp_path / 'teacher'}",
        f"--train_file={train}",
        f"--eval_file={dev}",
        "--epochs=1",
        "--max_seq_length=16",
        "--batch_size=4",
    )
    assert process.returncode == 0, process.stderr[-4000:]
    export_dir = tmp_path / "export"
    process = _distill(
        tmp_path,
        tmp_path / "teacher",
        f"--train_file={train}",
        "--student_layers=1",
        f"--export_dir={export_dir}",
    )
    assert process.returncode == 0, process.stderr[-4000:]
    assert "student/teacher speed at batch 32:" in process.stdout
    run = _results(tmp_path)
    assert run["student_layers"] == [1]
    assert 0.0 <= run["teacher_metrics"]["validation"]["accuracy"] <= 1.0
    assert 0.0 <= run["metrics"]["validation"]["accuracy"] <= 1.0
    for name in ("teacher", "student"):
        assert set(run["examples_per_second"][name]) == {"1", "32"}
    assert len(run["epochs"]) == 2  # scored after every epoch
    # The best weights are the student's (1 block), not the distiller's.
    sizes = [
        os.path.getsize(tmp_path / run / "best.weights.h5")
        for run in ("student", "teacher")
    ]
    assert sizes[0] < sizes[1]
    student = keras.models.load_model(tmp_path / "student" / "student.keras")
    assert type(student) is keras_bert.BertClassifier
    assert student.backbone.num_layers == 1
    assert student.label_names == ["PER", "none"]
    assert run["export_dir"].startswith(str(export_dir))
    serve = tf.saved_model.load(run["export_dir"]).signatures["serving_default"]
    assert serve(text=tf.constant(["john went to rome"]))["label"].shape == (1,)


@pytest.mark.slow
def test_a_keras_teacher_distils_on_unlabelled_texts(tmp_path):
    # 3 blocks, labels PER and none, fine-tuned with LoRA.
    teacher = write_teacher(tmp_path, lora_rank=2)
    unlabelled = tmp_path / "texts.jsonl"
    unlabelled.write_text(
        "".join(json.dumps({"text": text}) + "\n" for text, _ in TRAIN)
    )
    process = _distill(
        tmp_path,
        teacher,
        f"--train_file={unlabelled}",
        "--student_num_layers=2",
        "--student_loss_weight=0",
        "--speed_batch_sizes=1",
        "--hidden_state_weight=0.5",
        "--gradient_accumulation_steps=2",
    )
    assert process.returncode == 0, process.stderr[-4000:]
    run = _results(tmp_path)
    assert run["student_layers"] == [0, 2]
    assert run["config"]["gradient_accumulation_steps"] == 2
    student = keras.models.load_model(tmp_path / "student" / "student.keras")
    assert student.backbone.lora_rank is None  # the updates merged
    assert run["config"]["student_loss_weight"] == 0.0
    assert run["label_names"] == ["PER", "none"]
    logs = [epoch["train_logs"] for epoch in run["epochs"]]
    assert [log["student_loss"] for log in logs] == [0.0, 0.0]
    # Hidden states too: student blocks 0, 1 against teacher blocks 1, 2.
    assert run["config"]["hidden_state_weight"] == 0.5
    assert min(log["hidden_state_loss"] for log in logs) > 0
    assert run["export_dir"].startswith(str(tmp_path / "student" / "student_"))
    # Labels are needed unless the teacher is the only signal.
    process = _distill(
        tmp_path,
        teacher,
        f"--train_file={unlabelled}",
        "--student_num_layers=2",
    )
    assert process.returncode != 0
    assert "label" in process.stderr
    process = _distill(
        tmp_path,
        teacher,
        f"--train_file={unlabelled}",
        "--student_num_layers=2",
        "--student_loss_weight=0",
        "--hidden_state_layers=a,b",
    )
    assert process.returncode != 0
    assert "--hidden_state_layers takes teacher block indices" in (
        process.stderr
    )
    process = _distill(
        tmp_path, teacher, f"--train_file={unlabelled}", "--lora_rank=4"
    )
    assert process.returncode != 0
    assert "does not implement --lora_rank" in process.stderr


@pytest.mark.slow
def test_a_sentence_embedder_distils_on_sentences_and_is_scored_by_sts(
    tmp_path,
):
    teacher = write_embedder_teacher(tmp_path)  # 3 blocks, cls pooling
    train, sts = write_sentence_files(tmp_path, teacher)
    common = [
        f"--teacher={teacher}",
        f"--train_file={train}",
        f"--model_dir={tmp_path / 'student'}",
        "--student_layers=0,2",
    ]
    process = _run(
        "distill.py",
        *common,
        f"--eval_file={sts}",
        "--epochs=2",
        "--batch_size=4",
        "--learning_rate=1e-3",
        "--speed_seconds=0.3",
    )
    assert process.returncode == 0, process.stderr[-4000:]
    assert "student/teacher speed at batch 32:" in process.stdout
    assert "teacher: spearman" in process.stdout
    run = _results(tmp_path)
    assert run["task"] == "distill_embeddings"
    assert run["config"]["student_loss_weight"] == 0.0
    assert run["student_layers"] == [0, 2]
    assert run["teacher_metrics"]["sts"]["spearman"] == pytest.approx(1.0)
    assert -1.0 <= run["metrics"]["sts"]["spearman"] <= 1.0
    for name in ("teacher", "student"):
        assert set(run["examples_per_second"][name]) == {"1", "32"}
    student = keras.models.load_model(tmp_path / "student" / "student.keras")
    assert type(student) is keras_bert.BertTextEmbedder
    assert student.backbone.num_layers == 2
    serve = tf.saved_model.load(run["export_dir"]).signatures["serving_default"]
    embedding = serve(text=tf.constant(["john went to rome"]))["embedding"]
    assert embedding.shape == (1, 16)
    # What an embedder does not take is refused, naming the fix.
    for flags, fix in (
        (["--temperature=4", f"--eval_file={sts}"], "drop --temperature"),
        (
            ["--student_loss_weight=0.5", f"--eval_file={sts}"],
            "drop --student_loss_weight",
        ),
        (
            ["--hidden_state_weight=1", f"--eval_file={sts}"],
            "drop --hidden_state_weight",
        ),
        ([], "pass --eval_file"),
    ):
        process = _run("distill.py", *common, *flags)
        assert process.returncode != 0
        assert fix in process.stderr, process.stderr[-2000:]
