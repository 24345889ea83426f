"""A tiny TFRecord corpus, vocabulary and model config for training tests."""

import json
import os

from keras_bert.data import PretrainingInstanceCreator
from keras_bert.data import write_pretraining_tfrecords
from tests.data import pretraining_helpers as helpers

MAX_SEQ_LENGTH = 32
MAX_PREDICTIONS = 5
TINY_CONFIG = {
    "vocabulary_size": len(helpers.SYNTHETIC_VOCABULARY),
    "num_layers": 1,
    "num_heads": 2,
    "hidden_dim": 16,
    "intermediate_dim": 32,
    "max_sequence_length": MAX_SEQ_LENGTH,
}


def write_training_files(directory):
    """Writes TFRecords, vocab.txt and config.json; returns their paths."""
    directory = str(directory)
    corpus = helpers.write_synthetic_corpus(directory, num_documents=40)
    creator = PretrainingInstanceCreator(
        helpers.synthetic_tokenizer(),
        max_seq_length=MAX_SEQ_LENGTH,
        max_predictions_per_seq=MAX_PREDICTIONS,
        dupe_factor=2,
    )
    tfrecord = os.path.join(directory, "train.tfrecord")
    write_pretraining_tfrecords(creator, [corpus], [tfrecord], progress=False)
    config = os.path.join(directory, "config.json")
    with open(config, "w") as f:
        json.dump(TINY_CONFIG, f)
    return {
        "tfrecord": tfrecord,
        "vocab": helpers.write_synthetic_vocab(directory),
        "config": config,
    }
