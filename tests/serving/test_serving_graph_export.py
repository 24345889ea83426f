"""The default export serves `serving_graph`: stock ops, frozen weights
(where oneDNN is on, or the CPU has AVX-512; on an AVX2-only CPU with
oneDNN off it serves the blocks' own inference, also run here).

Its blocks are written for TensorFlow's CPU remapper
(`keras_bert.layers.remapper_forms`), yet the SavedModel stores only ops a
bare TensorFlow knows (the fused kernels are made at load time) and runs,
in a process with nothing but tensorflow and tensorflow-text, with or
without oneDNN, within 1e-5 of the `reference` implementation.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers.optimizations import ALL
from keras_bert.serving import export_saved_model
from keras_bert.serving import saved_model_op_types
from keras_bert.serving.cpu import onednn_enabled
from keras_bert.serving.cpu import this_cpu
from keras_bert.serving.export import served_implementation
from tests.helpers import EXPORT_SENTENCES
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import export_classifier
from tests.helpers import export_preprocessor
from tests.helpers import on_cpu
from tests.helpers import run_saved_model_outside_python

VOCABULARY, SENTENCES = EXPORT_VOCABULARY, EXPORT_SENTENCES
TOLERANCE = 1e-5


# A CPU whose plan serves the default export in the remapper's forms
# (`tests.helpers.on_cpu`), whatever this one is: an export made for a
# server with oneDNN on, run here.
ONEDNN_CPU = ({"avx2", "avx512f", "avx512_vnni"}, True)


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    classifier = export_classifier()
    with on_cpu(*ONEDNN_CPU):
        path = export_saved_model(
            classifier,
            export_preprocessor(),
            str(tmp_path_factory.mktemp("serving_graph") / "clf"),
        )
    return classifier, path


@pytest.fixture(scope="module")
def export_without_forms(tmp_path_factory):
    """The default export planned on an AVX2-only CPU with oneDNN off:
    the blocks' own inference, reading variables."""
    classifier = export_classifier()
    with on_cpu({"avx2"}, onednn=False):
        path = export_saved_model(
            classifier,
            export_preprocessor(),
            str(tmp_path_factory.mktemp("fast") / "clf"),
        )
    return classifier, path


def _reference_probabilities(classifier):
    reference = export_classifier(optimizations=())
    reference.set_weights(classifier.get_weights())
    logits = np.asarray(
        reference(export_preprocessor()(SENTENCES), training=False), "float64"
    )
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.slow  # exports a SavedModel, then runs it in another process
@pytest.mark.parametrize("onednn", ["1", "0"])
@pytest.mark.parametrize("exported", ["export", "export_without_forms"])
def test_served_outside_python_as_the_reference(
    exported, tmp_path, onednn, request
):
    """With oneDNN (the remapper's fused kernels) and without (the stock
    ops the graph is made of: `FusedBatchNormV3` keeps BERT's epsilon);
    and the default export as planned where oneDNN is off on an AVX2-only
    CPU (Keras' layers)."""
    classifier, path = request.getfixturevalue(exported)
    outputs = run_saved_model_outside_python(
        tmp_path,
        path,
        [{"signature": "serving_default", "inputs": {"text": SENTENCES}}],
        env={"TF_ENABLE_ONEDNN_OPTS": onednn},
    )
    expected = _reference_probabilities(classifier)
    assert np.abs(outputs["0/probabilities"] - expected).max() <= TOLERANCE


def _saved_floats(path):
    reader = tf.train.load_checkpoint(
        os.path.join(path, "variables", "variables")
    )
    dtypes = reader.get_variable_to_dtype_map()
    return sum(
        int(np.prod(shape))
        for key, shape in reader.get_variable_to_shape_map().items()
        if dtypes[key] == tf.float32 and key.endswith("VARIABLE_VALUE")
    )


@pytest.mark.slow  # the module's export fixture takes 4-10 s
def test_stores_stock_ops_and_the_blocks_as_constants(export):
    classifier, path = export
    ops = saved_model_op_types(path)
    assert "FusedBatchNormV3" in ops and "BiasAdd" in ops
    assert not [op for op in ops if op.startswith("_")], ops
    # Every weight is a constant of the graph but the WordPiece table, the
    # one variable a request reads (it gathers from it).
    table = classifier.backbone.embedding.token_embedding.embeddings
    assert _saved_floats(path) == int(np.prod(table.shape))


@pytest.mark.slow  # exports a SavedModel
def test_without_the_optimization_the_blocks_stay_variables(tmp_path):
    names = [name for name in ALL if name != "remapper_serving_graph"]
    classifier = export_classifier(optimizations=names)
    path = export_saved_model(
        classifier, export_preprocessor(), str(tmp_path / "c")
    )
    assert "FusedBatchNormV3" not in saved_model_op_types(path)
    assert _saved_floats(path) >= classifier.count_params()


def test_served_implementation_names_what_each_export_traces():
    """`served_implementation` says which encoder implementation an export
    with each option runs, as `export_saved_model` chooses it."""
    classifier = export_classifier()
    # Without oneDNN, streams serve in Keras' layers, and so does the
    # default export without AVX-512 (measured faster there).
    streams = "serving_graph_streams" if onednn_enabled() else "streams"
    forms = onednn_enabled() or "avx512f" in this_cpu().flags
    for options, expected in (
        ({}, "serving_graph" if forms else "fast"),
        ({"streams": 2}, streams),
        ({"quantize": "int8"}, "serving_graph_int8"),
        ({"precision": "bfloat16"}, "serving_graph_bfloat16"),
        (
            {"streams": 2, "precision": "bfloat16"},
            "serving_graph_streams_bfloat16",
        ),
    ):
        assert served_implementation(classifier, **options) == expected
    names = [name for name in ALL if name != "remapper_serving_graph"]
    assert (
        served_implementation(export_classifier(optimizations=names)) == "fast"
    )
    without_forms = export_classifier(optimizations=names)
    assert served_implementation(without_forms, quantize="int8") == "fast"
    assert served_implementation(without_forms, streams=2) == "streams"


@pytest.mark.slow  # the module's export fixture takes 4-10 s
@pytest.mark.parametrize("exported", ["export", "export_without_forms"])
def test_an_id_out_of_the_vocabulary_is_an_error_naming_it(exported, request):
    """The served embedding gathers without Keras' wrapping of negative
    ids: a negative id is refused as one past the table is, never read
    from the table's end, in the remapper's forms or not."""
    _, path = request.getfixturevalue(exported)
    served = tf.saved_model.load(path).signatures["predict_ids"]
    for bad in (-1, len(VOCABULARY)):
        ids = np.array([[2, bad, 3]], "int32")
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=rf"= {bad} is not in \[0,"
        ):
            served(
                token_ids=ids,
                segment_ids=np.zeros_like(ids),
                padding_mask=np.ones_like(ids),
            )
