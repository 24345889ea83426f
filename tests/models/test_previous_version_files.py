"""Files written by an earlier keras-bert still load and answer the same.

`previous_version/` holds, for each model class, a tiny model's `.keras`
and `.weights.h5` files, a classifier's raw-text SavedModel (packed as
`BertClassifier_export.tar.xz`: its graph is 5.3 MB), and
`expected.npz`: what each gave when written, at a68cf67 (the commit
before issue 29 moved checkpoint and serving code out of the model files;
`previous_version/make_files.py` wrote them). A redesign that changes no
behaviour keeps all of them loading to the same outputs, and exports of
the loaded models answer as the earlier exports did.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests.models.previous_version import make_files

HERE = os.path.join(os.path.dirname(__file__), "previous_version")
NAMES = ["BertBackbone", *make_files.HEADS]
# Same weights, same inputs, same kernels: only float rounding may differ.
ATOL = 1e-6


@pytest.fixture(scope="module")
def expected():
    return dict(np.load(os.path.join(HERE, "expected.npz")))


def _check(name, outputs, expected):
    flat = make_files.flatten(name, outputs)
    assert sorted(flat) == sorted(
        k for k in expected if k.split("/")[0] == name
    )
    for key, value in flat.items():
        if value.dtype.kind in "US":
            np.testing.assert_array_equal(value, expected[key], err_msg=key)
        else:
            np.testing.assert_allclose(
                value, expected[key], rtol=0, atol=ATOL, err_msg=key
            )


@pytest.mark.parametrize("name", NAMES)
def test_keras_file_loads_and_gives_the_same_outputs(name, expected):
    model = keras.saving.load_model(os.path.join(HERE, f"{name}.keras"))
    assert type(model).__name__ == name
    _check(name, model(make_files.model_inputs(name)), expected)


@pytest.mark.parametrize("name", NAMES)
def test_weights_file_loads_and_gives_the_same_outputs(name, expected):
    if name == "BertBackbone":
        model = make_files.tiny_backbone()
    else:
        model = getattr(keras_bert, name)(
            make_files.tiny_backbone(), **make_files.HEADS[name]
        )
    model.load_weights(os.path.join(HERE, f"{name}.weights.h5"))
    _check(name, model(make_files.model_inputs(name)), expected)


def _serve(path):
    outputs = tf.saved_model.load(path).signatures["serving_default"](
        text=tf.constant(make_files.TEXTS)
    )
    return {key: make_files._plain(v.numpy()) for key, v in outputs.items()}


def test_earlier_savedmodel_loads_and_gives_the_same_outputs(
    expected, tmp_path
):
    name = "BertClassifier_export"
    _check(name, _serve(make_files.unpack_export(name, tmp_path)), expected)


@pytest.mark.parametrize(
    "name, options",
    [
        ("BertClassifier", dict(labels=["neg", "neutral", "pos"])),
        ("BertTokenClassifier", {}),
        ("BertBackbone", {}),
    ],
)
def test_export_of_a_loaded_model_answers_as_the_earlier_export(
    name, options, expected, tmp_path
):
    model = keras.saving.load_model(os.path.join(HERE, f"{name}.keras"))
    tokenizer = keras_bert.BertTokenizer(make_files.VOCABULARY)
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=12)
    path = keras_bert.serving.export_saved_model(
        model, preprocessor, str(tmp_path), **options
    )
    _check(f"{name}_export", _serve(path), expected)
