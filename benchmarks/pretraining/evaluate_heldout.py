"""Evaluates an exported pre-trained model on every held-out instance.

Usage: python evaluate_heldout.py EXPORT_DIR HELD_OUT_TFRECORD
"""

import json
import sys

import keras_bert
from keras_bert.data import pretraining_dataset_from_tfrecords


def main(export_dir, held_out):
    model = keras_bert.BertMaskedLM.from_checkpoint(export_dir)
    dataset = pretraining_dataset_from_tfrecords(
        held_out, 32, shuffle=False, repeat=False, drop_remainder=False
    )
    metrics = model.evaluate(dataset, return_dict=True, verbose=0)
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:])
