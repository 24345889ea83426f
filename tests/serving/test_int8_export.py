"""export_saved_model(quantize="int8"): int8 weights, same signatures,
where oneDNN's int8 kernel runs; where it does not (oneDNN off), refused at
export time (`tests.helpers.served_or_refused`), so each test then checks
that nothing was written."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers.optimizations import ALL
from keras_bert.serving import TF_SERVING_TEXT_OPS
from keras_bert.serving import export_saved_model
from keras_bert.serving import saved_model_op_types
from keras_bert.serving.served_copy import is_quantized_layer
from tests.helpers import EXPORT_SENTENCES
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import export_classifier
from tests.helpers import export_preprocessor
from tests.helpers import non_core_ops
from tests.helpers import run_export_recipe
from tests.helpers import run_saved_model_outside_python
from tests.helpers import served_or_refused
from tests.helpers import served_variables
from tests.helpers import serves

VOCABULARY, SENTENCES = EXPORT_VOCABULARY, EXPORT_SENTENCES
# Tolerance of the int8 export's probabilities against float32's on this
# tiny random classifier (hidden 16): weights and inputs of each matmul
# to 1/127.5 of their range.
PROBABILITY_TOLERANCE = 0.02


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("int8_exports")
    preprocessor = export_preprocessor()
    classifier = export_classifier()
    paths = {
        name: export_saved_model(
            classifier,
            preprocessor,
            str(root / name),
            quantize=quantize,
            labels=["a", "b", "c"],
        )
        for name, quantize in (("float32", None),)
    }
    paths["int8"] = served_or_refused(
        "int8",
        lambda: export_saved_model(
            classifier,
            preprocessor,
            str(root / "int8"),
            quantize="int8",
            labels=["a", "b", "c"],
        ),
    )
    if paths["int8"] is None:  # refused: nothing was written
        assert not os.path.exists(root / "int8" / "1")
    # float32 blocks that read their variables, saved as int8's are (the
    # default export freezes them into constants of its graph).
    variables = export_classifier(
        optimizations=[n for n in ALL if n != "remapper_serving_graph"]
    )
    variables.set_weights(classifier.get_weights())
    paths["float32_variables"] = export_saved_model(
        variables, preprocessor, str(root / "float32_variables")
    )
    return classifier, paths


def _probabilities(path, **inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    return serve(**inputs)["probabilities"].numpy()


@pytest.mark.slow  # each exports a SavedModel (fixture 9-18 s)
def test_int8_export_answers_like_float32(exports):
    _, paths = exports
    if paths["int8"] is None:  # refused on this CPU (the fixture asserts)
        return
    text = tf.constant(SENTENCES)
    float32 = _probabilities(paths["float32"], text=text)
    int8 = _probabilities(paths["int8"], text=text)
    assert int8.shape == float32.shape == (len(SENTENCES), 3)
    np.testing.assert_allclose(int8, float32, atol=PROBABILITY_TOLERANCE)
    assert not np.array_equal(int8, float32)  # it is another model
    ids = tf.constant([[2, 5, 8, 3]])
    outputs = tf.saved_model.load(paths["int8"]).signatures["predict_ids"](
        token_ids=ids,
        segment_ids=tf.zeros_like(ids),
        padding_mask=tf.ones_like(ids),
    )
    assert outputs["label"].numpy()[0] in (b"a", b"b", b"c")


@pytest.mark.slow  # each exports a SavedModel (fixture 9-18 s)
def test_int8_export_holds_int8_variables_and_leaves_the_model(exports):
    classifier, paths = exports
    if paths["int8"] is None:  # refused on this CPU (the fixture asserts)
        return
    int8_elements = sum(
        v.shape.num_elements()
        for v in served_variables(paths["int8"])
        if v.dtype == tf.int8
    )
    # Every dense kernel and the WordPiece table, one byte per weight.
    quantized = [
        layer.kernel if hasattr(layer, "kernel") else layer.embeddings
        for layer in _layers(classifier)
        if is_quantized_layer(layer)
    ]
    assert len(quantized) == 2 * 4 + 1 + 1 + 1  # blocks, pooler, head, table
    assert int8_elements == sum(int(np.prod(w.shape)) for w in quantized)
    sizes = {
        name: sum(
            os.path.getsize(os.path.join(path, "variables", f))
            for f in os.listdir(os.path.join(path, "variables"))
        )
        for name, path in paths.items()
    }
    assert sizes["int8"] < sizes["float32_variables"], sizes
    # The caller's model was copied, not quantized.
    assert all(layer.quantization_mode is None for layer in _layers(classifier))


def _layers(model):
    return list(model._flatten_layers(include_self=False))


@pytest.mark.slow  # each exports a SavedModel (fixture 9-18 s)
def test_int8_export_keeps_the_op_allowlist(exports, tmp_path):
    _, paths = exports
    if paths["int8"] is None:  # refused on this CPU (the fixture asserts)
        return
    ops = saved_model_op_types(paths["int8"])
    assert "QuantizedMatMulWithBiasAndDequantize" in ops  # int8 matmuls
    non_core = non_core_ops(ops, tmp_path)
    assert "FastWordpieceTokenizeWithOffsets" in non_core  # the check sees them
    assert non_core <= TF_SERVING_TEXT_OPS, non_core - TF_SERVING_TEXT_OPS
    assert not {"PyFunc", "PyFuncStateless", "EagerPyFunc"} & set(ops)


@pytest.mark.slow
def test_int8_export_serves_without_keras_bert(exports, tmp_path):
    _, paths = exports
    if paths["int8"] is None:  # refused on this CPU (the fixture asserts)
        return
    outputs = run_saved_model_outside_python(
        tmp_path,
        paths["int8"],
        [{"signature": "serving_default", "inputs": {"text": SENTENCES}}],
    )
    np.testing.assert_allclose(
        outputs["0/probabilities"],
        _probabilities(paths["int8"], text=tf.constant(SENTENCES)),
        rtol=1e-6,
        atol=1e-7,
    )


def test_unknown_quantize_mode_is_refused_before_anything(tmp_path):
    with pytest.raises(ValueError, match="quantize='int4'.*quantize='int8'"):
        export_saved_model(
            export_classifier(),
            export_preprocessor(),
            str(tmp_path / "x"),
            quantize="int4",
        )
    assert not os.path.exists(tmp_path / "x")


@pytest.mark.slow
def test_export_recipe_quantize_flag(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCABULARY) + "\n")
    export_classifier().save(tmp_path / "clf.keras")
    result = run_export_recipe(
        f"--model={tmp_path / 'clf.keras'}",
        f"--vocab_file={vocab_file}",
        "--quantize=int8",
        "--sequence_length=12",
        f"--export_dir={tmp_path / 'served'}",
    )
    if not serves("int8"):
        # Refused before anything is loaded, naming the fix.
        assert result.returncode != 0
        assert "TF_ENABLE_ONEDNN_OPTS=1" in result.stderr, result.stderr
        assert not os.path.exists(tmp_path / "served" / "1")
        return
    assert result.returncode == 0, result.stderr[-3000:]
    served = served_variables(str(tmp_path / "served" / "1"))
    assert tf.int8 in {v.dtype for v in served}
    assert "QuantizedMatMulWithBiasAndDequantize" in saved_model_op_types(
        str(tmp_path / "served" / "1")
    )
