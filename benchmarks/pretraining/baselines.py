"""Trivial baselines on held-out pre-training data.

MLM: always predict the token most frequent among the training labels.
NSP: always predict the majority class of the held-out set.

Usage: python baselines.py HELD_OUT_TFRECORD TRAIN_GLOB
"""

import collections
import json
import sys

import numpy as np

from keras_bert.data import pretraining_dataset_from_tfrecords


def labels(pattern, limit=None):
    dataset = pretraining_dataset_from_tfrecords(
        pattern, 256, shuffle=False, repeat=False, drop_remainder=False
    )
    if limit:
        dataset = dataset.take(limit)
    mlm, nsp = [], []
    for _, batch in dataset:
        ids = batch["mlm_logits"].numpy()
        mlm.append(ids[ids != 0])
        nsp.append(batch["nsp_logits"].numpy())
    return np.concatenate(mlm), np.concatenate(nsp)


def main(held_out, train):
    train_mlm, _ = labels(train, limit=200)  # 51,200 training instances
    most_frequent, _ = collections.Counter(train_mlm.tolist()).most_common(1)[0]
    mlm, nsp = labels(held_out)
    result = {
        "most_frequent_token_id": int(most_frequent),
        "mlm_accuracy_most_frequent_token": float(
            np.mean(mlm == most_frequent)
        ),
        "nsp_accuracy_majority": float(max(np.mean(nsp), 1 - np.mean(nsp))),
        "held_out_instances": int(len(nsp)),
        "held_out_predictions": int(len(mlm)),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:])
