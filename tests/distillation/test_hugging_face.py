"""Hugging Face both ways: a teacher read from a Hugging Face directory
distils into a student that is written back as one, which transformers
loads with the same logits and keras_bert reads with the same weights."""

import numpy as np

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert.checkpoints import save_huggingface
from keras_bert.distillation import BertDistiller
from keras_bert.distillation import student_of
from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import torch
from tests.checkpoints.conftest import torch_inputs
from tests.checkpoints.conftest import transformers
from tests.checkpoints.test_save_huggingface import TOLERANCE
from tests.checkpoints.test_save_huggingface import _load_with_report
from tests.checkpoints.test_save_huggingface import _randomize
from tests.helpers import backbone_inputs
from tests.helpers import tiny_backbone_config


def test_a_hugging_face_teacher_distils_into_a_hugging_face_student(
    tmp_path,
):
    teacher = BertClassifier(
        BertBackbone(**{**tiny_backbone_config(), "num_layers": 3}),
        num_classes=2,
        label_names=["neg", "pos"],
    )
    _randomize(teacher)
    save_huggingface(teacher, None, str(tmp_path / "teacher"))
    teacher = BertClassifier.from_checkpoint(str(tmp_path / "teacher"))
    assert teacher.label_names == ["neg", "pos"]
    student = student_of(teacher, layers=(0, 2))
    inputs = backbone_inputs(batch_size=4, sequence_length=8, seed=2)
    distiller = BertDistiller(teacher, student)
    distiller.compile(optimizer="adam", loss="auto")
    before = [w.numpy().copy() for w in student.trainable_weights]
    distiller.fit(inputs, np.array([0, 1, 1, 0]), epochs=2, verbose=0)
    assert any(
        not np.array_equal(a, b.numpy())
        for a, b in zip(before, student.trainable_weights)
    )
    save_huggingface(student, None, str(tmp_path / "student"))
    reference = _load_with_report(
        transformers.BertForSequenceClassification, str(tmp_path / "student")
    )
    assert reference.config.num_hidden_layers == 2
    assert reference.config.id2label == {0: "neg", 1: "pos"}
    with torch.no_grad():
        expected = reference(**torch_inputs(inputs)).logits
    assert max_abs_diff(student(inputs), expected) <= TOLERANCE
    reloaded = BertClassifier.from_checkpoint(str(tmp_path / "student"))
    for ours, theirs in zip(reloaded.weights, student.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
