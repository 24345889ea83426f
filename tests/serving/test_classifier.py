"""A classifier exports as it was trained: pairs as pairs, its names."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.serving import export_saved_model
from tests.models.previous_version import common
from tests.models.test_raw_text import LABELS
from tests.models.test_raw_text import SECOND_TEXTS
from tests.models.test_raw_text import TEXTS
from tests.models.test_raw_text import classifier

PREVIOUS = os.path.join(
    os.path.dirname(__file__), "..", "models", "previous_version"
)


def _softmax(logits):
    logits = np.asarray(logits, "float64")
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def _text_inputs(path):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    return sorted(serve.structured_input_signature[1])


@pytest.fixture(scope="module")
def pair_model():
    model = classifier()
    model.fit((TEXTS, SECOND_TEXTS), LABELS, batch_size=2, verbose=0)
    return model


def test_a_model_fit_on_pairs_exports_text_a_and_text_b(pair_model, tmp_path):
    assert pair_model.pair is True
    path = export_saved_model(pair_model, export_dir=str(tmp_path))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    outputs = serve(text_a=tf.constant(TEXTS), text_b=tf.constant(SECOND_TEXTS))
    expected = _softmax(pair_model.predict((TEXTS, SECOND_TEXTS), verbose=0))
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(), expected, rtol=0, atol=1e-6
    )
    np.testing.assert_array_equal(
        outputs["label_id"].numpy(), expected.argmax(axis=-1)
    )


def test_a_contradicting_pair_names_both(pair_model, tmp_path):
    with pytest.raises(ValueError, match="pair=False.*sentence pairs"):
        export_saved_model(pair_model, export_dir=str(tmp_path), pair=False)
    single = classifier()
    single.fit(TEXTS, LABELS, batch_size=2, verbose=0)
    assert single.pair is False
    with pytest.raises(ValueError, match="pair=True.*single texts"):
        export_saved_model(single, export_dir=str(tmp_path), pair=True)
    assert not os.listdir(tmp_path)  # nothing written


def test_fit_refuses_the_other_layout_once_recorded(pair_model):
    with pytest.raises(ValueError, match="single texts.*built for"):
        pair_model.fit(TEXTS, LABELS, verbose=0)
    with pytest.raises(ValueError, match="`pair`"):
        keras_bert.BertClassifier(pair_model.backbone, 2, pair="yes")


def test_pair_and_label_names_survive_saving(tmp_path):
    model = classifier()
    named = keras_bert.BertClassifier(
        model.backbone,
        num_classes=2,
        preprocessor=model.preprocessor,
        pair=True,
        label_names=["neg", "pos"],
    )
    path = str(tmp_path / "model.keras")
    named.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.pair is True
    assert loaded.label_names == ["neg", "pos"]
    export = export_saved_model(loaded, export_dir=str(tmp_path / "export"))
    assert _text_inputs(export) == ["text_a", "text_b"]
    outputs = tf.saved_model.load(export).signatures["serving_default"](
        text_a=tf.constant(TEXTS), text_b=tf.constant(SECOND_TEXTS)
    )
    ids = outputs["label_id"].numpy()
    np.testing.assert_array_equal(
        outputs["label"].numpy().astype(str), np.array(["neg", "pos"])[ids]
    )


def test_a_previous_version_classifier_exports_single_text(tmp_path):
    path = os.path.join(PREVIOUS, "a68cf67", "BertClassifier.keras")
    model = keras.saving.load_model(path)
    assert model.pair is None and model.label_names is None
    export = export_saved_model(model, common.preprocessor(), str(tmp_path))
    assert _text_inputs(export) == ["text"]
