"""The generation written at be12d5f (see `../common.py`).

`BertClassifier`s built with the keyword arguments of that commit, which
saved them in the config (`multi_label`, `thresholds`, `doc_stride`,
`aggregation`, `max_windows`), where later versions save a label mode
and document windows:
- a multi-label classifier with named labels and thresholds of its own:
  `.keras`, `.weights.h5`, and what its export answered (the names over
  each threshold);
- a classifier reading documents in windows (`doc_stride=4`, `"max"`,
  at most 3 windows) with its preprocessor: `.keras`, `.weights.h5`, what
  it gave on windows of long texts, and what its export answered;
- a regressor (`num_classes=1`): `.keras` and what its export answered;
- a sentence-pair classifier (`pair=True`): `.keras`.

`ATTRIBUTES` holds what each loaded model must still say of itself.
Every float weight is moved off its initial value.
"""

import os

import numpy as np

import keras_bert
from tests.models.previous_version import common

HERE = os.path.dirname(os.path.abspath(__file__))
TAGS = ["film", "opinion", "person"]
LABELS = ["neg", "neutral", "pos"]
LONG_TEXTS = [
    " ".join(common.WORDS),  # 25 tokens: windows of 10 every 4, 3 kept
    "the film was great and not very good bad movie",
    "bob",
]
KEYWORDS = {
    "BertClassifier_multi_label": dict(
        num_classes=3,
        multi_label=True,
        label_names=TAGS,
        thresholds=[0.3, 0.5, 0.7],
    ),
    "BertClassifier_windows": dict(
        num_classes=3,
        label_names=LABELS,
        doc_stride=4,
        aggregation="max",
        max_windows=3,
    ),
    "BertClassifier_regression": dict(num_classes=1),
    "BertClassifier_pair": dict(num_classes=3, pair=True, label_names=LABELS),
}
CLASSES = {stem: "BertClassifier" for stem in KEYWORDS}
WEIGHTS = ["BertClassifier_multi_label", "BertClassifier_windows"]
EXPORTS = {
    "BertClassifier_multi_label_export": ("BertClassifier_multi_label", {}),
    "BertClassifier_windows_export": ("BertClassifier_windows", {}),
    "BertClassifier_regression_export": ("BertClassifier_regression", {}),
}
KEPT_EXPORTS = []
SLOW_EXPORTS = ["BertClassifier_regression_export"]
ATTRIBUTES = {
    "BertClassifier_multi_label": dict(
        multi_label=True, label_names=TAGS, thresholds=[0.3, 0.5, 0.7]
    ),
    "BertClassifier_windows": dict(
        multi_label=False,
        label_names=LABELS,
        doc_stride=4,
        aggregation="max",
        max_windows=3,
    ),
    "BertClassifier_regression": dict(
        num_classes=1, multi_label=False, doc_stride=None, thresholds=None
    ),
    "BertClassifier_pair": dict(pair=True, doc_stride=None),
}


def build(stem):
    preprocessor = (
        common.preprocessor() if stem == "BertClassifier_windows" else None
    )
    return keras_bert.BertClassifier(
        common.tiny_backbone(), preprocessor=preprocessor, **KEYWORDS[stem]
    )


def model_inputs(stem):
    if stem != "BertClassifier_windows":
        return common.INPUTS
    from keras_bert.text.document_windows import DocumentWindows

    cut = DocumentWindows(common.preprocessor(), stride=4, max_windows=3)
    return {k: np.asarray(v) for k, v in cut(np.array(LONG_TEXTS)).items()}


def _moved(model, rng):
    """`model` with each float weight plus noise of std 0.1."""
    for weight in model.weights:
        if "float" in str(weight.dtype):
            noise = rng.normal(0, 0.1, weight.shape)
            weight.assign((np.asarray(weight) + noise).astype(weight.dtype))
    return model


def main():
    import keras

    keras.utils.set_random_seed(41)
    rng = np.random.default_rng(41)
    models = {stem: _moved(build(stem), rng) for stem in CLASSES}
    expected = common.write_models(HERE, models, WEIGHTS, model_inputs)
    expected.update(common.write_exports(HERE, models, EXPORTS, KEPT_EXPORTS))
    np.savez(os.path.join(HERE, "expected.npz"), **expected)


if __name__ == "__main__":
    main()
