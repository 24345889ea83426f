"""Task models write their weight files in one stable layout.

`weight_layouts/<Model>.txt` lists every dataset (path and shape) of a tiny
model's `.weights.h5` as keras-bert wrote it at commit a89228f. Keras names
what it writes by the model's layers, so a head graph that reaches the
backbone's layers another way (as `BertBackbone.outputs_at` does) must keep
this layout, or every file written before (`best.weights.h5`, `.keras`
models, resume backups) would fail to load. One entry differs from
a89228f's files: the optimizer of `compile("auto")` has a learning-rate
schedule, not a fixed rate's variable (`optimizer/vars/1`); files that
hold one still load (`AdamW.load_own_variables`, tested in
`tests/models/test_bert_classifier.py` and
`tests/models/test_previous_version_files.py`).
"""

import os

import h5py
import numpy as np
import pytest

import keras_bert

LAYOUTS = os.path.join(os.path.dirname(__file__), "weight_layouts")
MODELS = {
    "BertClassifier": dict(num_classes=3),
    "BertMaskedLM": {},
    "BertQuestionAnswerer": {},
    "BertTokenClassifier": dict(num_classes=5),
}


def _tiny_backbone():
    return keras_bert.BertBackbone(
        vocabulary_size=50,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )


def _layout(path):
    datasets = []

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            datasets.append(f"{name} {tuple(item.shape)}")

    with h5py.File(path) as f:
        f.visititems(visit)
    return datasets


@pytest.mark.parametrize("name", sorted(MODELS))
def test_weight_file_layout_is_unchanged(name, tmp_path):
    model = getattr(keras_bert, name)(_tiny_backbone(), **MODELS[name])
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    with open(os.path.join(LAYOUTS, f"{name}.txt")) as f:
        expected = f.read().splitlines()
    assert _layout(path) == expected


@pytest.mark.parametrize("name", ["BertClassifier", "BertMaskedLM"])
def test_backbone_is_listed_as_one_layer(name):
    """Heads on `outputs_at` list the backbone, not its layers, as a head
    that calls it whole does; its layers are still trained."""
    backbone = _tiny_backbone()
    model = getattr(keras_bert, name)(backbone, **MODELS[name])
    assert model.get_layer(backbone.name) is backbone
    assert not any(layer in backbone.layers for layer in model.layers)
    trainable = {id(v) for v in model.trainable_variables}
    assert all(id(v) in trainable for v in backbone.trainable_variables)


def test_weights_move_between_models_by_layout(tmp_path):
    """A weight file loads into a fresh model and gives the same logits."""
    inputs = {
        "token_ids": np.array([[2, 5, 7, 9, 3, 0]]),
        "segment_ids": np.zeros((1, 6), "int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 1, 0]]),
    }
    model = keras_bert.BertClassifier(_tiny_backbone(), num_classes=3)
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    loaded = keras_bert.BertClassifier(_tiny_backbone(), num_classes=3)
    loaded.load_weights(path)
    np.testing.assert_array_equal(
        loaded.predict(inputs, verbose=0), model.predict(inputs, verbose=0)
    )
