"""export_saved_model(streams=N): the same answers from parallel streams.

Where TensorFlow's oneDNN is on the export traces its blocks as
`serving_graph_streams` (the serving forms, each stream's weights sliced
into constants of the graph), so its variables hold the WordPiece table
only; where it is off, as `streams` (Keras' layers between the matmuls,
which serve faster there), reading each weight once from variables: the
blocks' through their streams' layout, none twice.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.serving import TF_SERVING_TEXT_OPS
from keras_bert.serving import export_saved_model
from keras_bert.serving import saved_model_op_types
from keras_bert.serving.cpu import onednn_enabled
from keras_bert.serving.export import served_implementation
from tests.helpers import EXPORT_SENTENCES
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import export_classifier
from tests.helpers import non_core_ops
from tests.helpers import on_cpu

VOCABULARY, SENTENCES = EXPORT_VOCABULARY, EXPORT_SENTENCES
TOLERANCE = 2e-6


def _classifier(**backbone_config):
    return export_classifier(**backbone_config)


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=16
    )
    classifier = _classifier()
    path = export_saved_model(
        classifier,
        preprocessor,
        str(tmp_path_factory.mktemp("streams") / "clf"),
        streams=2,
    )
    return classifier, preprocessor, path


@pytest.mark.slow  # the module's export fixture takes 4-10 s
def test_streams_export_answers_as_the_model(export):
    classifier, preprocessor, path = export
    loaded = tf.saved_model.load(path)
    inputs = preprocessor(SENTENCES)
    expected = tf.nn.softmax(classifier(inputs, training=False)).numpy()
    served = loaded.signatures["serving_default"](text=tf.constant(SENTENCES))
    np.testing.assert_allclose(
        served["probabilities"].numpy(), expected, atol=TOLERANCE
    )
    ids = loaded.signatures["predict_ids"](**inputs)
    np.testing.assert_allclose(
        ids["probabilities"].numpy(), expected, atol=TOLERANCE
    )


def _saved_floats(path):
    reader = tf.train.load_checkpoint(
        os.path.join(path, "variables", "variables")
    )
    dtypes = reader.get_variable_to_dtype_map()
    saved = sum(
        int(np.prod(shape))
        for key, shape in reader.get_variable_to_shape_map().items()
        if dtypes[key] == tf.float32 and key.endswith("VARIABLE_VALUE")
    )
    return saved


def _all_floats(classifier):
    """Every float weight of the model, once."""
    return sum(int(np.prod(w.shape)) for w in classifier.weights)


def _unfrozen_floats(classifier):
    """The WordPiece table's floats: what the export keeps as variables
    (the blocks' weights, and every other one outside them, are constants
    of its graph)."""
    table = classifier.backbone.embedding.token_embedding.embeddings
    return int(np.prod(table.shape))


@pytest.mark.slow  # the module's export fixture takes 4-10 s
def test_streams_export_saves_each_weight_once(export):
    # The streams' weights are constants of the graph, sliced from the
    # blocks' kernels; neither the blocks' variables nor the streams'
    # layout (`freeze_stream_layout`) are read, so neither is saved (nor
    # saved twice, as a whole model's export does under `variables` and
    # `_all_variables`).
    classifier, _, path = export
    if onednn_enabled():
        assert served_implementation(classifier, streams=2) == (
            "serving_graph_streams"
        )
        assert _saved_floats(path) == _unfrozen_floats(classifier)
    else:
        assert served_implementation(classifier, streams=2) == "streams"
        assert _saved_floats(path) == _all_floats(classifier)


@pytest.mark.slow  # exports a model
def test_a_model_saved_with_streams_exports_as_the_default(tmp_path):
    """A classifier whose saved config has `streams=2` (a served copy
    saved before the serving plan) loads without them and, exported
    without `streams=`, serves as the default export: each weight once,
    the same answers."""
    config = _classifier().get_config()
    config["backbone"]["config"]["streams"] = 2
    classifier = keras_bert.BertClassifier.from_config(config)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=16
    )
    # Planned for a CPU with oneDNN on, whose default export runs the
    # remapper's forms (on an AVX2-only CPU with oneDNN off it would run
    # Keras' layers: `tests/serving/test_plan.py`).
    with on_cpu({"avx2", "avx512f", "avx512_vnni"}, onednn=True):
        assert served_implementation(classifier) == "serving_graph"
        path = export_saved_model(classifier, preprocessor, str(tmp_path / "c"))
    assert _saved_floats(path) == _unfrozen_floats(classifier)
    served = tf.saved_model.load(path).signatures["serving_default"](
        text=tf.constant(SENTENCES)
    )
    expected = tf.nn.softmax(
        classifier(preprocessor(SENTENCES), training=False)
    ).numpy()
    np.testing.assert_allclose(
        served["probabilities"].numpy(), expected, atol=TOLERANCE
    )


@pytest.mark.slow  # the module's export fixture takes 4-10 s
def test_streams_export_keeps_the_op_allowlist(export, tmp_path):
    _, _, path = export
    ops = saved_model_op_types(path)
    non_core = non_core_ops(ops, tmp_path)
    assert "FastWordpieceTokenizeWithOffsets" in non_core
    assert non_core <= TF_SERVING_TEXT_OPS, non_core - TF_SERVING_TEXT_OPS


def test_streams_with_int8_is_refused_before_anything(tmp_path):
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY)
    )
    with pytest.raises(ValueError, match="quantize='int8' and streams=2"):
        export_saved_model(
            _classifier(),
            preprocessor,
            str(tmp_path / "x"),
            quantize="int8",
            streams=2,
        )
    assert not os.path.exists(tmp_path / "x")
