"""Fine-tuning jobs, one folder each, and the runner they share.

`keras_bert.fine_tuning.glue`, `keras_bert.fine_tuning.squad`, ...:
everything about one job (reading its data, its metrics, its output files,
and its `FineTuningJob`). `run_fine_tuning` trains any `FineTuningJob`: a
new job is a new folder and a thin recipe; nothing lists the jobs.
`load_task_model` builds the task model a run starts from;
`keras_bert.fine_tuning.predictions` loads a finished run to predict a
file with (the recipes' `--predict_file`).
"""

from keras_bert.fine_tuning import classify
from keras_bert.fine_tuning import distill
from keras_bert.fine_tuning import embeddings
from keras_bert.fine_tuning import glue
from keras_bert.fine_tuning import multiple_choice
from keras_bert.fine_tuning import ner
from keras_bert.fine_tuning import predictions
from keras_bert.fine_tuning import squad
from keras_bert.fine_tuning.job import FineTuningJob
from keras_bert.fine_tuning.runner import FineTuningResult
from keras_bert.fine_tuning.runner import run_fine_tuning
from keras_bert.fine_tuning.starting_model import load_task_model

__all__ = [
    "FineTuningJob",
    "FineTuningResult",
    "classify",
    "distill",
    "embeddings",
    "glue",
    "load_task_model",
    "multiple_choice",
    "ner",
    "predictions",
    "run_fine_tuning",
    "squad",
]
