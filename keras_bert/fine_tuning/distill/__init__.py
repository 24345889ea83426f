"""Distillation as a fine-tuning job (what `recipes/distill.py` runs).

- `teachers`: the teachers a run reads (`load_teacher`,
  `teacher_labels`): a `recipes/classify.py` run, a `.keras` file or a
  Hugging Face directory.
- `job`: `DistillationJob`, a `BertDistiller` trained by
  `keras_bert.fine_tuning.run_fine_tuning`.
"""

from keras_bert.fine_tuning.distill.job import DistillationJob
from keras_bert.fine_tuning.distill.teachers import load_teacher
from keras_bert.fine_tuning.distill.teachers import teacher_labels

__all__ = ["DistillationJob", "load_teacher", "teacher_labels"]
