"""Fine-tuning tasks, one folder each, and the runner they share.

`keras_bert.tasks.glue`, `keras_bert.tasks.squad`, ...: everything about
one task (reading its data, its metrics, its output files, and its
`FineTuningTask`). `run_fine_tuning` trains any `FineTuningTask`: a new
task is a new folder and a thin recipe; nothing lists the tasks.
"""

from keras_bert.tasks import embeddings
from keras_bert.tasks import glue
from keras_bert.tasks import ner
from keras_bert.tasks import squad
from keras_bert.tasks.fine_tuning import FineTuningResult
from keras_bert.tasks.fine_tuning import run_fine_tuning
from keras_bert.tasks.fine_tuning_task import FineTuningTask
from keras_bert.tasks.task_model import load_task_model

__all__ = [
    "FineTuningResult",
    "FineTuningTask",
    "embeddings",
    "glue",
    "load_task_model",
    "ner",
    "run_fine_tuning",
    "squad",
]
