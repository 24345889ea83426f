"""`DistillationJob` on the shared runner: a tiny `.keras` teacher
distilled into 2 of its 3 blocks, on one device, in mixed precision and,
in a child process with 2 logical CPUs, under `mirrored`."""

import json
import os
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import save_huggingface
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.distill import DistillationJob
from keras_bert.fine_tuning.distill import teacher_labels
from tests.fine_tuning.classify.test_job import DEV
from tests.fine_tuning.classify.test_job import TRAIN
from tests.fine_tuning.classify.test_job import VOCABULARY
from tests.fine_tuning.classify.test_job import write_jsonl
from tests.fine_tuning.classify.test_job_windows import single_label
from tests.helpers import tiny_backbone_config

REPO = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
)
NAMES = ["PER", "none"]


def write_teacher(directory, lora_rank=None):
    """A 3-block classifier of `NAMES` (with LoRA of `lora_rank`, if
    given), saved as a `.keras` file."""
    keras.utils.set_random_seed(0)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=16
    )
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=3,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=16,
        dropout=0.0,  # replicas draw other dropout masks than one device
    )
    teacher = keras_bert.BertClassifier(
        backbone, 2, preprocessor=preprocessor, label_names=NAMES, dropout=0.0
    )
    if lora_rank:
        backbone.enable_lora(lora_rank)
    path = os.path.join(directory, "teacher.keras")
    teacher.save(path)
    return path


def distil(directory, teacher=None, **arguments):
    directory = str(directory)
    job = DistillationJob(
        teacher or write_teacher(directory),
        write_jsonl(
            os.path.join(directory, "train.jsonl"), single_label(TRAIN), "label"
        ),
        write_jsonl(
            os.path.join(directory, "dev.jsonl"), single_label(DEV), "label"
        ),
        {"layers": (0, 2)},
        eval_batch_size=2,
    )
    result = run_fine_tuning(
        job,
        os.path.join(directory, "run"),
        **{"epochs": 2, "batch_size": 4, "learning_rate": 1e-3, **arguments},
    )
    return job, result


def test_teacher_labels_are_read_without_building_the_teacher(tmp_path):
    assert teacher_labels(write_teacher(tmp_path)) == (NAMES, False)
    with pytest.raises(ValueError, match="neither a recipes/classify.py"):
        teacher_labels(str(tmp_path))
    # A Hugging Face head of placeholder names is named by its class ids.
    unnamed = keras_bert.BertClassifier(
        keras_bert.BertBackbone(**tiny_backbone_config()), num_classes=3
    )
    save_huggingface(unnamed, None, str(tmp_path / "hf"))
    assert teacher_labels(str(tmp_path / "hf")) == (["0", "1", "2"], False)


def test_the_runner_trains_scores_and_keeps_the_student(tmp_path):
    job, result = distil(tmp_path)
    student = result.model.student
    assert student.backbone.num_layers == 2
    results = result.results
    assert results["task"] == "distill"
    assert results["student_layers"] == [0, 2]
    assert len(results["epochs"]) == 2
    run = tmp_path / "run"
    # The student's metrics are the student's predictions, scored.
    probabilities = keras.ops.convert_to_numpy(
        keras.ops.softmax(student.predict([text for text, _ in DEV], verbose=0))
    )
    labels = [NAMES.index(label) for _, label in single_label(DEV)]
    accuracy = float(np.mean(probabilities.argmax(-1) == labels))
    assert results["metrics"]["validation"]["accuracy"] == accuracy
    assert "accuracy" in results["teacher_metrics"]["validation"]
    # best.weights.h5 holds the student's weights, and nothing else.
    with h5py.File(run / "best.weights.h5") as weights:
        stored = []
        weights.visititems(
            lambda name, item: (
                stored.append(name) if isinstance(item, h5py.Dataset) else None
            )
        )
    assert len(stored) == len(student.weights)
    saved = keras.models.load_model(run / "student.keras")
    assert saved.backbone.num_layers == 2
    assert saved.label_names == NAMES
    assert os.path.exists(run / "predictions_validation.jsonl")
    assert os.listdir(run / "logs")  # TensorBoard


def test_a_lora_teacher_distils_into_a_student_without_lora(tmp_path):
    # What `recipes/classify.py --lora_rank=2` trains, as a `.keras` file.
    teacher = write_teacher(tmp_path, lora_rank=2)
    _, result = distil(tmp_path, teacher, epochs=1)
    assert result.model.teacher.backbone.lora_rank == 2
    assert result.model.student.backbone.lora_rank is None
    saved = keras.models.load_model(tmp_path / "run" / "student.keras")
    assert saved.backbone.lora_rank is None
    assert saved.backbone.num_layers == 2


def test_teacher_only_distillation_adds_edited_variants(tmp_path):
    """`augment_copies`: the train texts and their variants, unlabelled;
    refused where the student's loss would need labels."""
    teacher = write_teacher(str(tmp_path))
    train = write_jsonl(
        str(tmp_path / "train.jsonl"), single_label(TRAIN), "label"
    )
    dev = write_jsonl(str(tmp_path / "dev.jsonl"), single_label(DEV), "label")
    with pytest.raises(ValueError, match="student_loss_weight=0.0"):
        DistillationJob(teacher, train, dev, {"layers": (0,)}, augment_copies=2)
    job = DistillationJob(
        teacher,
        train,
        dev,
        {"layers": (0,)},
        student_loss_weight=0.0,
        augment_copies=2,
        seed=1,
    )
    job.load_data()
    texts = list(job.train.texts[0])
    assert texts[: len(TRAIN)] == [text for text, _ in TRAIN]
    assert len(TRAIN) < len(texts) <= 3 * len(TRAIN)
    assert job.train.labels == [None] * len(texts)
    assert job.train_labels is None
    result = run_fine_tuning(
        job, str(tmp_path / "run"), epochs=1, batch_size=4, learning_rate=1e-3
    )
    assert result.results["num_train_examples"] == len(texts)
    assert result.results["augment_copies"] == 2


def test_mixed_precision_distils_in_bfloat16_and_keeps_float32_weights(
    tmp_path,
):
    policy = keras.config.dtype_policy().name
    _, result = distil(tmp_path, mixed_precision="mixed_bfloat16")
    student = result.model.student
    assert student.backbone.compute_dtype == "bfloat16"
    assert {w.dtype for w in student.trainable_weights} == {"float32"}
    assert np.isfinite(result.results["metrics"]["validation"]["accuracy"])
    assert keras.config.dtype_policy().name == policy  # restored


def _child():
    """Distils on one device, then under `mirrored` (2 logical CPUs), and
    prints each student's weights' sum of squares as JSON."""
    import tempfile

    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    sums = {}
    for strategy in ("one_device", "mirrored"):
        with tempfile.TemporaryDirectory() as directory:
            _, result = distil(directory, strategy=strategy)
            weights = result.model.student.trainable_weights
            sums[strategy] = [
                float(np.sum(np.square(keras.ops.convert_to_numpy(w))))
                for w in weights
            ]
            sums[strategy + "_accuracy"] = result.results["metrics"][
                "validation"
            ]["accuracy"]
    print(json.dumps(sums))


@pytest.mark.slow
def test_mirrored_distils_as_one_device_does():
    process = subprocess.run(
        [sys.executable, "-m", "tests.fine_tuning.distill.test_job"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert process.returncode == 0, process.stderr[-4000:]
    sums = json.loads(process.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(sums["mirrored"], sums["one_device"], rtol=1e-4)
    assert sums["mirrored_accuracy"] == sums["one_device_accuracy"]


if __name__ == "__main__":
    _child()
