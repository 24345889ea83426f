"""Distillation: a smaller student from a trained keras_bert teacher.

`student_of(teacher, layers=(0, 2, 4))` builds the teacher's task class on
some of its blocks (or a preset architecture); `BertDistiller` trains it
with `keras.distillation` on raw text, labelled or not;
`augment_texts` makes edited variants of texts for the teacher to label. See
docs/distillation.md and `recipes/distill.py`.
"""

from keras_bert.distillation.augment import augment_texts
from keras_bert.distillation.distiller import BertDistiller
from keras_bert.distillation.distiller import SigmoidLogitsDistillation
from keras_bert.distillation.distiller import distillation_loss_for
from keras_bert.distillation.students import every_other_layer
from keras_bert.distillation.students import student_of

__all__ = [
    "BertDistiller",
    "augment_texts",
    "SigmoidLogitsDistillation",
    "distillation_loss_for",
    "every_other_layer",
    "student_of",
]
