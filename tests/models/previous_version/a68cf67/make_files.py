"""The generation written at a68cf67 (see `../common.py`).

For every model class of that commit: a tiny model's `.keras` file and
`.weights.h5` file; the raw-text exports of a classifier (kept), a token
classifier and a backbone; and `expected.npz`, what each gave when
written. Written at a68cf67 by this file's `main` (then beside the
files, its helpers since moved to `../common.py`).
"""

import os

import numpy as np

import keras_bert
from tests.models.previous_version import common

HERE = os.path.dirname(os.path.abspath(__file__))
HEADS = {
    "BertClassifier": dict(num_classes=3),
    "BertMaskedLM": {},
    "BertQuestionAnswerer": {},
    "BertTokenClassifier": dict(
        num_classes=5, labels=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    ),
}
CLASSES = {name: name for name in ["BertBackbone", *HEADS]}
WEIGHTS = list(CLASSES)
EXPORTS = {
    "BertClassifier_export": (
        "BertClassifier",
        dict(labels=["neg", "neutral", "pos"]),
    ),
    "BertTokenClassifier_export": ("BertTokenClassifier", {}),
    "BertBackbone_export": ("BertBackbone", {}),
}
KEPT_EXPORTS = ["BertClassifier_export"]
# The classifier's export stays in the default suite.
SLOW_EXPORTS = ["BertTokenClassifier_export", "BertBackbone_export"]


def build(stem):
    if stem == "BertBackbone":
        return common.tiny_backbone()
    return getattr(keras_bert, stem)(common.tiny_backbone(), **HEADS[stem])


def model_inputs(stem):
    if stem == "BertMaskedLM":
        return {**common.INPUTS, "masked_positions": common.MASKED_POSITIONS}
    return common.INPUTS


def main():
    import keras

    keras.utils.set_random_seed(29)
    models = {stem: build(stem) for stem in CLASSES}
    expected = common.write_models(HERE, models, WEIGHTS, model_inputs)
    expected.update(common.write_exports(HERE, models, EXPORTS, KEPT_EXPORTS))
    np.savez(os.path.join(HERE, "expected.npz"), **expected)


if __name__ == "__main__":
    main()
