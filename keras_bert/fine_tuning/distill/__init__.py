"""Distillation as a fine-tuning job (what `recipes/distill.py` runs).

- `teachers`: the teachers a run reads (`teacher_task`, `load_teacher`,
  `load_embedder_teacher`, `teacher_labels`): a `recipes/classify.py` or
  `recipes/embeddings.py` run, a `.keras` file or a Hugging Face
  directory.
- `job`: `DistillationJob`, a classifier's `BertDistiller` trained by
  `keras_bert.fine_tuning.run_fine_tuning`.
- `embeddings`: `EmbeddingDistillationJob`, a sentence embedder distilled
  on unlabelled sentences, scored by STS Spearman.
"""

from keras_bert.fine_tuning.distill.embeddings import EmbeddingDistillationJob
from keras_bert.fine_tuning.distill.job import DistillationJob
from keras_bert.fine_tuning.distill.teachers import load_embedder_teacher
from keras_bert.fine_tuning.distill.teachers import load_teacher
from keras_bert.fine_tuning.distill.teachers import teacher_labels
from keras_bert.fine_tuning.distill.teachers import teacher_task

__all__ = [
    "DistillationJob",
    "EmbeddingDistillationJob",
    "load_embedder_teacher",
    "load_teacher",
    "teacher_labels",
    "teacher_task",
]
