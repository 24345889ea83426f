"""A BertTextEmbedder's SavedModel: text in, the Keras model's embedding out.

Checked on a tiny model: `serving_default` takes `text` (string `[batch]`)
and returns `embedding` (float32 `[batch, hidden]`, unit norm when the
model normalises) equal to the Keras model's, in this process and in one
with only TensorFlow and tensorflow-text; `embed_ids` equals the model on
ids; labels and pairs are refused; `recipes/export.py --task=text_embedder`
exports a sentence-transformers checkpoint pooled and truncated as its
files say.
"""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.serving import export_saved_model
from keras_bert.serving import servable_task_names
from keras_bert.serving import serving_endpoints
from tests.helpers import backbone_inputs
from tests.helpers import run_export_recipe
from tests.helpers import run_saved_model_outside_python
from tests.helpers import tiny_backbone_config
from tests.models.test_bert_text_embedder import VOCABULARY
from tests.models.test_bert_text_embedder import pooling_config
from tests.models.test_bert_text_embedder import save_checkpoint
from tests.models.test_bert_text_embedder import st_modules

TEXTS = [
    "a good film",
    "",
    "the book is bad " * 20,  # truncated at the sequence length
    "Good FILM!",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
    )
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
    )
    model = keras_bert.BertTextEmbedder(
        backbone, pooling="mean", normalize=True, preprocessor=preprocessor
    )
    root = tmp_path_factory.mktemp("embedder_export")
    path = export_saved_model(model, export_dir=str(root / "embedder"))
    return model, path


@pytest.mark.slow  # exports and loads a SavedModel: 15-30 s
def test_serving_default_equals_predict(exported):
    model, path = exported
    serve = tf.saved_model.load(path).signatures["serving_default"]
    ((name, spec),) = serve.structured_input_signature[1].items()
    assert (name, spec.dtype, spec.shape.as_list()) == (
        "text",
        tf.string,
        [None],
    )
    outputs = serve(text=tf.constant(TEXTS))
    assert list(outputs) == ["embedding"]
    embedding = outputs["embedding"].numpy()
    assert embedding.dtype == np.float32 and embedding.shape == (4, 8)
    np.testing.assert_allclose(np.linalg.norm(embedding, axis=1), 1, 1e-5)
    expected = model(model.preprocessor(TEXTS))  # as predict computes
    np.testing.assert_allclose(embedding, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # exports and loads a SavedModel: 15-30 s
def test_embed_ids_equals_the_model(exported):
    model, path = exported
    serve = tf.saved_model.load(path).signatures["embed_ids"]
    inputs = backbone_inputs(vocabulary_size=len(VOCABULARY))
    embedding = serve(**{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_allclose(
        embedding["embedding"], model(inputs), rtol=1e-5, atol=1e-6
    )


@pytest.mark.slow  # a TensorFlow process of its own: about 40 s
def test_outside_python_equals_the_keras_model(exported, tmp_path):
    model, path = exported
    outputs = run_saved_model_outside_python(
        tmp_path,
        path,
        [{"signature": "serving_default", "inputs": {"text": TEXTS}}],
    )
    np.testing.assert_allclose(
        outputs["0/embedding"],
        model.predict(TEXTS, verbose=0),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "options, message",
    [({"labels": ["a"]}, "labels=\\['a'\\]"), ({"pair": True}, "pair=True")],
)
def test_labels_and_pairs_are_refused(options, message):
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    model = keras_bert.BertTextEmbedder(backbone)
    with pytest.raises(ValueError, match=message):
        serving_endpoints(model, None, **options)


def test_export_recipe_offers_it():
    assert servable_task_names()["text_embedder"] is keras_bert.BertTextEmbedder


@pytest.mark.slow  # a recipe process of its own
def test_export_recipe_exports_a_sentence_transformers_checkpoint(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    save_checkpoint(checkpoint, st_modules(True), pooling_config("max"), 6)
    export_dir = tmp_path / "served"
    result = run_export_recipe(
        f"--checkpoint={checkpoint}",
        "--task=text_embedder",
        f"--export_dir={export_dir}",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    serve = tf.saved_model.load(str(export_dir / "1"))
    served = serve.signatures["serving_default"](text=tf.constant(TEXTS))
    model = keras_bert.BertTextEmbedder.from_checkpoint(str(checkpoint))
    assert (model.pooling, model.preprocessor.sequence_length) == ("max", 6)
    expected = model(model.preprocessor(TEXTS))
    np.testing.assert_allclose(
        served["embedding"], expected, rtol=1e-5, atol=1e-6
    )
