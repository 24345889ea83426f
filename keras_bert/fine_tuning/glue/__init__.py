"""GLUE: its tasks, data reading, metrics, submission files, fine-tuning.

- `tasks`: the `GlueTask` of each GLUE task (`GLUE_TASKS`): files,
  columns, labels, metrics.
- `tsv`, `tfds`, `loader`: reading a split from GLUE's TSV files or TFDS.
- `dataset`: packing texts into model inputs and batching them.
- `metrics`: GLUE's metrics over a whole split.
- `submission`: GLUE leaderboard files.
- `demo`: a small DEMO sample in MNLI's layout (not GLUE data).
- `job`: `GlueFineTuning`, a GLUE task for
  `keras_bert.fine_tuning.run_fine_tuning` (what `recipes/glue.py` runs).
"""

from keras_bert.fine_tuning.glue.dataset import glue_dataset
from keras_bert.fine_tuning.glue.dataset import preprocess_glue
from keras_bert.fine_tuning.glue.dataset import preprocess_glue_splits
from keras_bert.fine_tuning.glue.demo import write_mnli_demo
from keras_bert.fine_tuning.glue.job import GlueFineTuning
from keras_bert.fine_tuning.glue.loader import load_glue
from keras_bert.fine_tuning.glue.loader import split_holdout
from keras_bert.fine_tuning.glue.metrics import compute_glue_metrics
from keras_bert.fine_tuning.glue.submission import write_glue_submission
from keras_bert.fine_tuning.glue.tasks import GLUE_TASKS
from keras_bert.fine_tuning.glue.tasks import GlueTask
from keras_bert.fine_tuning.glue.tasks import get_glue_task
from keras_bert.fine_tuning.glue.tfds import GlueDataNotFoundError
from keras_bert.fine_tuning.glue.tfds import load_glue_tfds
from keras_bert.fine_tuning.glue.tsv import read_glue_tsv

__all__ = [
    "GLUE_TASKS",
    "GlueDataNotFoundError",
    "GlueFineTuning",
    "GlueTask",
    "compute_glue_metrics",
    "get_glue_task",
    "glue_dataset",
    "load_glue",
    "load_glue_tfds",
    "preprocess_glue",
    "preprocess_glue_splits",
    "read_glue_tsv",
    "split_holdout",
    "write_glue_submission",
    "write_mnli_demo",
]
