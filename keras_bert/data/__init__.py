"""Data: pre-training corpora, instances, masking and inputs; GLUE tasks."""

from keras_bert.data.corpus import expand_input_files
from keras_bert.data.corpus import read_documents
from keras_bert.data.corpus import split_sentences
from keras_bert.data.dynamic_masker import DynamicMasker
from keras_bert.data.glue import GLUE_TASKS
from keras_bert.data.glue import GlueTask
from keras_bert.data.glue import get_glue_task
from keras_bert.data.glue_dataset import glue_dataset
from keras_bert.data.glue_dataset import preprocess_glue
from keras_bert.data.glue_loader import load_glue
from keras_bert.data.glue_loader import split_holdout
from keras_bert.data.glue_metrics import compute_glue_metrics
from keras_bert.data.glue_submission import write_glue_submission
from keras_bert.data.masking import create_masked_lm_predictions
from keras_bert.data.pretraining_dataset import parse_pretraining_example
from keras_bert.data.pretraining_dataset import pretraining_dataset_from_text
from keras_bert.data.pretraining_dataset import (
    pretraining_dataset_from_tfrecords,
)
from keras_bert.data.pretraining_instance import PretrainingInstance
from keras_bert.data.pretraining_instance_creator import (
    PretrainingInstanceCreator,
)
from keras_bert.data.tfrecords import instance_to_example
from keras_bert.data.tfrecords import output_shard_paths
from keras_bert.data.tfrecords import write_pretraining_tfrecords

__all__ = [
    "DynamicMasker",
    "GLUE_TASKS",
    "GlueTask",
    "PretrainingInstance",
    "PretrainingInstanceCreator",
    "create_masked_lm_predictions",
    "compute_glue_metrics",
    "expand_input_files",
    "get_glue_task",
    "glue_dataset",
    "instance_to_example",
    "load_glue",
    "output_shard_paths",
    "parse_pretraining_example",
    "pretraining_dataset_from_text",
    "preprocess_glue",
    "pretraining_dataset_from_tfrecords",
    "read_documents",
    "split_holdout",
    "split_sentences",
    "write_glue_submission",
    "write_pretraining_tfrecords",
]
