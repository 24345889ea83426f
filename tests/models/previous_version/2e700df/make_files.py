"""The generation written at 2e700df (see `../common.py`).

What the a68cf67 generation lacks:
- a `BertTextEmbedder` (mean pooling, normalised): `.keras`,
  `.weights.h5`, and what its export answered;
- a `BertClassifier` with LoRA (rank 2) on: `.keras`, `.weights.h5`, and
  what its export (LoRA merged into the kernels) answered;
- a `FrozenFeaturesTagger` (`"weighted_sum_all"`, one BiLSTM):
  `.keras` and `.weights.h5`;
- a `BertBackbone` built with `optimizations=()`: `.keras`;
- a `BertClassifier`: `.keras`, `.weights.h5`, and its int8
  (`quantize="int8"`) and head-parallel (`streams=2`) exports, kept.

Every float weight is moved off its initial value (biases, LayerNorms,
LoRA's zero `B`, the combination's weights), so that a weight loaded
into the wrong place changes the outputs.
"""

import importlib
import os

import numpy as np

import keras_bert
from tests.models.previous_version import common

HERE = os.path.dirname(os.path.abspath(__file__))
LABELS = ["neg", "neutral", "pos"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CLASSES = {
    "BertTextEmbedder": "BertTextEmbedder",
    "BertClassifier_lora": "BertClassifier",
    "FrozenFeaturesTagger": "FrozenFeaturesTagger",
    "BertBackbone_no_optimizations": "BertBackbone",
    "BertClassifier": "BertClassifier",
}
WEIGHTS = [
    "BertTextEmbedder",
    "BertClassifier_lora",
    "FrozenFeaturesTagger",
    "BertClassifier",
]
EXPORTS = {
    "BertClassifier_int8_export": (
        "BertClassifier",
        dict(labels=LABELS, quantize="int8"),
    ),
    "BertClassifier_streams_export": (
        "BertClassifier",
        dict(labels=LABELS, streams=2),
    ),
    "BertClassifier_lora_export": ("BertClassifier_lora", dict(labels=LABELS)),
    "BertTextEmbedder_export": ("BertTextEmbedder", {}),
}
KEPT_EXPORTS = ["BertClassifier_int8_export", "BertClassifier_streams_export"]
SLOW_EXPORTS = [
    "BertClassifier_int8_export",
    "BertClassifier_streams_export",
    "BertClassifier_lora_export",
    "BertTextEmbedder_export",
]


def _frozen_features_tagger_class():
    """`keras_bert.models.FrozenFeaturesTagger`; at 2e700df, where this
    generation was written, it was `keras_bert.tasks.ner`'s."""
    found = getattr(keras_bert.models, "FrozenFeaturesTagger", None)
    if found is None:
        found = importlib.import_module("keras_bert.tasks.ner")
        found = found.FrozenFeaturesTagger
    return found


def build(stem):
    if stem == "BertTextEmbedder":
        return keras_bert.BertTextEmbedder(
            common.tiny_backbone(), pooling="mean", normalize=True
        )
    if stem == "BertClassifier_lora":
        model = keras_bert.BertClassifier(common.tiny_backbone(), 3)
        model.backbone.enable_lora(2)
        return model
    if stem == "FrozenFeaturesTagger":
        return _frozen_features_tagger_class()(
            common.tiny_backbone(),
            num_classes=len(TAGS),
            features="weighted_sum_all",
            lstm_units=4,
            num_lstm_layers=1,
            labels=TAGS,
        )
    if stem == "BertBackbone_no_optimizations":
        return common.tiny_backbone(optimizations=())
    if stem == "BertClassifier":
        return keras_bert.BertClassifier(common.tiny_backbone(), 3)
    raise ValueError(f"Unknown stem {stem!r}; expected one of {CLASSES}.")


def model_inputs(stem):
    return common.INPUTS


def _moved(model, rng):
    """`model` with each float weight plus noise of std 0.1."""
    for weight in model.weights:
        if "float" in str(weight.dtype):
            noise = rng.normal(0, 0.1, weight.shape)
            weight.assign((np.asarray(weight) + noise).astype(weight.dtype))
    return model


def main():
    import keras

    keras.utils.set_random_seed(37)
    rng = np.random.default_rng(37)
    models = {stem: _moved(build(stem), rng) for stem in CLASSES}
    expected = common.write_models(HERE, models, WEIGHTS, model_inputs)
    expected.update(common.write_exports(HERE, models, EXPORTS, KEPT_EXPORTS))
    np.savez(os.path.join(HERE, "expected.npz"), **expected)


if __name__ == "__main__":
    main()
