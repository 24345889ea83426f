"""`DistillationJob`: distillation run by the shared fine-tuning runner."""

import os

import keras
import numpy as np
from absl import logging

from keras_bert.distillation.augment import augment_texts
from keras_bert.distillation.distiller import BertDistiller
from keras_bert.distillation.students import every_other_layer
from keras_bert.distillation.students import student_of
from keras_bert.fine_tuning.classify.examples import ClassificationExamples
from keras_bert.fine_tuning.classify.examples import (
    read_classification_examples,
)
from keras_bert.fine_tuning.classify.job import EVAL_SPLIT
from keras_bert.fine_tuning.classify.job import ClassificationFineTuning
from keras_bert.fine_tuning.distill.teachers import load_teacher
from keras_bert.fine_tuning.distill.teachers import teacher_labels

STUDENT_FILE = "student.keras"


class DistillationJob(ClassificationFineTuning):
    """Distils a classifier into a student, run by `run_fine_tuning`.

    The runner gives distillation what every fine-tuning has: a
    `tf.distribute` strategy and a mixed-precision policy (the teacher,
    the student and the `BertDistiller` are built in the strategy's
    scope), the student's AdamW with warmup and linear decay, the
    student scored on the eval file every epoch (`accuracy`; multi-label:
    `micro_f1`), its best epoch kept (`best.weights.h5` holds the
    student's weights only), early stopping, TensorBoard, resume after an
    interruption, and the student's export. The files are read as
    `ClassificationFineTuning` reads them, the classes named as the
    teacher names them. With `student_loss_weight=0.0` the teacher is the
    only signal: the train file's labels are not read (it may have none),
    and an eval file is needed to score the student.

    Args:
        teacher: str. A finished `recipes/classify.py --model_dir`, a
            `.keras` file or a Hugging Face directory of a classifier
            (`keras_bert.fine_tuning.distill.load_teacher`).
        train_file: str. Texts (and labels) to distil on.
        eval_file: str or `None`. Texts and labels to score; `None`:
            held-out rows of `train_file` (labelled files only).
        student: dict. `keras_bert.distillation.student_of` arguments:
            `{"layers": (0, 2, 4)}`, `{"num_layers": 3}` or
            `{"preset": "bert_mini"}`.
        student_loss_weight: float in [0, 1]. `BertDistiller`'s: 1.0
            labels only, 0.0 the teacher only. Defaults to `0.5`.
        temperature: float > 0. Defaults to `2.0`.
        sequence_length: int. A Hugging Face teacher's tokens per text.
            Defaults to `128`.
        distiller_options: dict or `None`. More `BertDistiller` keyword
            arguments.
        augment_copies: int >= 0. With the teacher as the only signal
            (`student_loss_weight=0.0`): adds that many edited variants
            of every train text (`keras_bert.distillation.augment_texts`,
            drawn with `seed`) for the teacher to label. Defaults to `0`.
        **kwargs: `ClassificationFineTuning`'s (`eval_batch_size`,
            `group_by_length`, `columns`, `holdout_fraction`, `seed`).

    Example:
    ```python
    job = DistillationJob(
        "runs/sst2", "train.jsonl", "dev.jsonl", {"layers": (0, 2, 4)}
    )
    result = keras_bert.fine_tuning.run_fine_tuning(
        job, "runs/sst2_student", learning_rate=5e-5, epochs=1
    )
    result.model.student  # a BertClassifier of 3 blocks
    ```
    """

    name = "distill"

    def __init__(
        self,
        teacher,
        train_file,
        eval_file,
        student,
        student_loss_weight=0.5,
        temperature=2.0,
        sequence_length=128,
        distiller_options=None,
        augment_copies=0,
        **kwargs,
    ):
        if not 0.0 <= student_loss_weight <= 1.0:
            raise ValueError(
                "Received an invalid value for argument "
                "`student_loss_weight`: expected a number from 0.0 (the "
                "teacher only) to 1.0 (labels only). Received: "
                f"student_loss_weight={student_loss_weight!r}"
            )
        if student_loss_weight == 0 and not eval_file:
            raise ValueError(
                "With student_loss_weight=0.0 the train file's labels are "
                "not read, so no rows of it can be held out to score the "
                "student: pass an eval file of texts and labels."
            )
        if augment_copies and student_loss_weight > 0:
            raise ValueError(
                f"augment_copies={augment_copies!r} adds texts that have no "
                "labels: distil on the teacher only (student_loss_weight="
                f"0.0; received {student_loss_weight!r}) or pass "
                "augment_copies=0."
            )
        self.augment_copies = augment_copies
        self.teacher_path = teacher
        self.teacher_label_names = None
        super().__init__(
            train_file,
            eval_file,
            self._build,
            tune_thresholds=False,
            **kwargs,
        )
        self.student_choice = dict(student)
        self.student_loss_weight = student_loss_weight
        self.temperature = temperature
        self.sequence_length = sequence_length
        self.distiller_options = dict(distiller_options or {})
        self.teacher = None
        self.student_layers = None

    @property
    def uses_labels(self):
        """Whether the train file's labels are read (a weight above 0)."""
        return self.student_loss_weight > 0

    def load_data(self):
        if self.label_names is not None:
            return
        # The teacher's files say how to read the data: no model yet.
        self.teacher_label_names, self.multi_label = teacher_labels(
            self.teacher_path
        )
        if self.uses_labels:
            super().load_data()
        else:
            self.train = read_classification_examples(
                self.train_file, self.multi_label, labels=False, **self.columns
            )
            if self.augment_copies:
                self.train = _with_variants(
                    self.train, self.augment_copies, self.seed
                )
            self.eval_sets = {
                EVAL_SPLIT: read_classification_examples(
                    self.eval_file, self.multi_label, **self.columns
                )
            }
        self.label_names = list(self.teacher_label_names)
        self.train_labels = (
            self._label_array(self.train) if self.uses_labels else None
        )
        self.eval_labels = {
            split: self._label_array(examples)
            for split, examples in self.eval_sets.items()
        }

    def _build(self, job):
        teacher = load_teacher(self.teacher_path, self.sequence_length)
        if teacher.num_classes != len(self.label_names):
            raise ValueError(
                f"The teacher {self.teacher_path} has {teacher.num_classes} "
                f"classes but the files name {len(self.label_names)}: "
                f"{self.label_names}. Distil on the teacher's task data."
            )
        student, self.student_layers = build_student(
            teacher, self.student_choice
        )
        self.teacher = teacher
        distiller = BertDistiller(
            teacher,
            student,
            student_loss_weight=self.student_loss_weight,
            temperature=self.temperature,
            **self.distiller_options,
        )
        return distiller, teacher.preprocessor

    def evaluate(self, model, thresholds=None):
        return super().evaluate(model.student, thresholds)

    def write_outputs(self, model, directory):
        """The student's predictions on the eval file, and the student
        itself as `student.keras` (nothing of the distiller in it)."""
        outputs = super().write_outputs(model.student, directory)
        path = os.path.join(directory, STUDENT_FILE)
        model.student.save(path)
        logging.info("Wrote %s", path)
        outputs["student_file"] = path
        return outputs

    def serving_model(self, model):
        return model.student

    def weights_model(self, model):
        return model.student

    def results_extras(self):
        extras = super().results_extras()
        extras["teacher"] = self.teacher_path
        extras["teacher_metrics"] = super().evaluate(self.teacher)
        extras["student_layers"] = self.student_layers
        extras["augment_copies"] = self.augment_copies
        return extras


def build_student(teacher, choice):
    """`(student, its blocks)`: `student_of(teacher, **choice)` in the
    run's dtype policy (mixed precision), whatever the teacher's file
    says, and `student_layers_of` it; logged."""
    student = student_of(teacher, **choice, dtype=keras.config.dtype_policy())
    logging.info(
        "Student: %d blocks, hidden %d (teacher: %d)",
        student.backbone.num_layers,
        student.backbone.hidden_dim,
        teacher.backbone.num_layers,
    )
    return student, student_layers_of(choice, teacher, student)


def student_layers_of(choice, teacher, student):
    """The teacher blocks the student started from, or its preset.

    Args:
        choice: dict. The `student_of` arguments the student was built
            with (`layers`, `num_layers` or `preset`).
        teacher: the teacher task model.
        student: the student task model.

    Returns:
        A list of block indices, or the preset's name.

    Example:
    ```python
    student_layers_of({"num_layers": 3}, teacher, student)  # [0, 2, 4]
    ```
    """
    if "preset" in choice:
        return choice["preset"]
    if "layers" in choice:
        return [int(i) for i in choice["layers"]]
    return list(
        every_other_layer(
            teacher.backbone.num_layers, student.backbone.num_layers
        )
    )


def _with_variants(examples, copies, seed):
    """`examples` and `copies` edited variants of each of its texts (no
    labels: the teacher labels them)."""
    texts = [list(side) for side in examples.texts]
    variants = augment_texts(
        tuple(texts) if len(texts) == 2 else texts[0], copies, seed
    )
    variants = variants if len(texts) == 2 else (variants,)
    added = len(variants[0])
    logging.info(
        "Distilling on %d train texts and %d edited variants of them",
        len(examples),
        added,
    )
    return ClassificationExamples(
        tuple(
            np.concatenate([side, np.asarray(new)]) if added else side
            for side, new in zip(examples.texts, variants)
        ),
        list(examples.labels) + [None] * added,
        examples.path,
        examples.one_plain_label_each,
    )
