"""Data: pre-training corpora, instances, masking and inputs.

Also what every fine-tuning task shares (`pack_texts`, `packed_batches`,
`predict_packed`, `shuffled_epochs`, `trim_batch`), and the reader of
users' JSONL, TSV and CSV files (`keras_bert.data.text_tables`) with the
held-out split of a file without an eval file (`keras_bert.data.holdout`).
Each task's own data reading lives with the task, in
`keras_bert.fine_tuning.<task>`.
"""

from keras_bert.data.corpus import expand_input_files
from keras_bert.data.corpus import read_documents
from keras_bert.data.corpus import split_sentences
from keras_bert.data.corpus import text_lines
from keras_bert.data.dynamic_masker import DynamicMasker
from keras_bert.data.masking import create_masked_lm_predictions
from keras_bert.data.no_duplicates_batches import no_duplicates_batches
from keras_bert.data.no_duplicates_batches import no_duplicates_epochs
from keras_bert.data.packed_batches import pack_texts
from keras_bert.data.packed_batches import packed_batches
from keras_bert.data.packed_batches import predict_packed
from keras_bert.data.pretraining_dataset import parse_pretraining_example
from keras_bert.data.pretraining_dataset import pretraining_dataset_from_text
from keras_bert.data.pretraining_dataset import (
    pretraining_dataset_from_tfrecords,
)
from keras_bert.data.pretraining_instance import PretrainingInstance
from keras_bert.data.pretraining_instance_creator import (
    PretrainingInstanceCreator,
)
from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.data.tfrecords import instance_to_example
from keras_bert.data.tfrecords import output_shard_paths
from keras_bert.data.tfrecords import write_pretraining_tfrecords
from keras_bert.data.trim_batch import trim_batch

__all__ = [
    "DynamicMasker",
    "PretrainingInstance",
    "PretrainingInstanceCreator",
    "create_masked_lm_predictions",
    "expand_input_files",
    "instance_to_example",
    "no_duplicates_batches",
    "no_duplicates_epochs",
    "output_shard_paths",
    "pack_texts",
    "packed_batches",
    "parse_pretraining_example",
    "predict_packed",
    "pretraining_dataset_from_text",
    "pretraining_dataset_from_tfrecords",
    "read_documents",
    "shuffled_epochs",
    "split_sentences",
    "trim_batch",
    "text_lines",
    "write_pretraining_tfrecords",
]
