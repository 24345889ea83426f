"""export_saved_model(quantize="int8", calibration_texts=...): the encoder's
int8 matmuls on one fused oneDNN kernel, over calibrated input ranges.

Tolerance, stated: on this tiny random classifier (hidden 16) the
calibrated export's probabilities are within `PROBABILITY_TOLERANCE` (0.03)
of the float32 model's: every matmul's weights to 1/127 of their column's
range (as the per-row int8 export's) and its inputs to 1/255 of their
calibrated range, which on these inputs is wider than a row's own.

Where oneDNN's int8 kernels do not run (oneDNN off), the export is refused
at export time (`tests.helpers.served_or_refused`), and each test checks
that instead.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.data.trim_batch import trim_batch
from keras_bert.layers.block_implementations import dense_layers
from keras_bert.layers.optimizations import ALL
from keras_bert.serving import export_saved_model
from keras_bert.serving import saved_model_op_types
from keras_bert.serving.export import served_implementation
from keras_bert.serving.int8_calibration import calibrate_int8_ranges
from tests.helpers import EXPORT_SENTENCES
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import export_classifier
from tests.helpers import export_preprocessor
from tests.helpers import far_from_uniform
from tests.helpers import keras_probabilities
from tests.helpers import run_export_recipe
from tests.helpers import run_saved_model_outside_python
from tests.helpers import served_or_refused
from tests.helpers import serves

VOCABULARY, SENTENCES = EXPORT_VOCABULARY, EXPORT_SENTENCES
CALIBRATION = [
    "the quick brown fox", "a lazy dog", "good film", "bad film bad film",
    "the dog", "a good quick fox", "brown dog lazy film the a",
]  # fmt: skip
PROBABILITY_TOLERANCE = 0.03


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """The export of a classifier whose weights are random and not small,
    so that its probabilities are far from uniform (0.007 to 0.91 on
    SENTENCES)."""
    classifier = far_from_uniform(export_classifier())
    root = tmp_path_factory.mktemp("int8_calibrated")
    path = served_or_refused(
        "int8",
        lambda: export_saved_model(
            classifier,
            export_preprocessor(),
            str(root / "clf"),
            quantize="int8",
            calibration_texts=CALIBRATION,
        ),
    )
    if path is None:  # refused: nothing was written
        assert not (root / "clf" / "1").exists()
    return classifier, path


@pytest.mark.slow  # the module's export fixture takes 5-10 s
def test_calibrated_export_answers_like_float32(export):
    classifier, path = export
    if path is None:  # refused on this CPU (the fixture asserts)
        return
    served = tf.saved_model.load(path).signatures["serving_default"]
    probabilities = served(text=tf.constant(SENTENCES))["probabilities"]
    expected = keras_probabilities(classifier, SENTENCES)
    difference = np.abs(probabilities.numpy() - expected).max()
    print(f"max |calibrated int8 - float32| probability: {difference:.2e}")
    assert 0 < difference <= PROBABILITY_TOLERANCE


@pytest.mark.slow  # the module's export fixture takes 5-10 s
def test_a_row_does_not_depend_on_the_rest_of_the_request(export):
    """Fixed ranges: a sentence's answer alone and in a batch agree."""
    _, path = export
    if path is None:  # refused on this CPU (the fixture asserts)
        return
    served = tf.saved_model.load(path).signatures["serving_default"]
    batch = served(text=tf.constant(SENTENCES))["probabilities"].numpy()
    for index, sentence in enumerate(SENTENCES):
        alone = served(text=tf.constant([sentence]))["probabilities"].numpy()
        np.testing.assert_allclose(alone[0], batch[index], atol=1e-6)


@pytest.mark.slow  # the module's export fixture takes 5-10 s
def test_calibrated_export_holds_the_fused_int8_kernel(export):
    _, path = export
    if path is None:  # refused on this CPU (the fixture asserts)
        return
    ops = saved_model_op_types(path)
    # Two blocks of four dense layers: one kernel and one QuantizeV2 each.
    assert "_QuantizedMatMul" in ops and "QuantizeV2" in ops
    assert "QuantizedMatMulWithBiasAndDequantize" not in ops


@pytest.mark.slow  # exports, then runs it in another process
@pytest.mark.parametrize("onednn", ["1", "0"])
def test_calibrated_export_serves_without_keras_bert(export, tmp_path, onednn):
    """A process with TensorFlow (its oneDNN build, this platform's
    default: the kernel is registered there whether or not
    `TF_ENABLE_ONEDNN_OPTS` turns the graph rewrites on) and
    tensorflow-text only. With the rewrites, the answers of this process;
    without them `QuantizeV2` runs TensorFlow's own kernel instead of
    oneDNN's `_MklQuantizeV2`, and the answers differ from this process's
    (by 4.3e-3 at most when measured, `-s`), so they are checked against
    float32's at the same tolerance as this process's."""
    classifier, path = export
    if path is None:  # refused on this CPU (the fixture asserts)
        return
    outputs = run_saved_model_outside_python(
        tmp_path,
        path,
        [{"signature": "serving_default", "inputs": {"text": SENTENCES}}],
        env={"TF_ENABLE_ONEDNN_OPTS": onednn},
    )
    served = tf.saved_model.load(path).signatures["serving_default"]
    here = served(text=tf.constant(SENTENCES))["probabilities"].numpy()
    print(
        f"oneDNN {onednn}: max |outside - here| "
        f"{np.abs(outputs['0/probabilities'] - here).max():.1e}"
    )
    if onednn == "1":
        np.testing.assert_allclose(
            outputs["0/probabilities"], here, rtol=1e-6, atol=1e-7
        )
    else:
        float32 = keras_probabilities(classifier, SENTENCES)
        difference = np.abs(outputs["0/probabilities"] - float32).max()
        assert difference <= PROBABILITY_TOLERANCE


def test_ranges_cover_each_dense_layers_inputs():
    """Every block's four dense layers get a range holding 0; the first
    block's q|k|v range is the extremes of the embeddings' output over the
    rows it computes."""
    classifier = export_classifier()
    copy = served_or_refused(
        "int8", lambda: keras_bert.serving.quantized_copy(classifier)
    )
    if copy is None:  # refused on this CPU, as asserted
        return
    ranges = calibrate_int8_ranges(copy, export_preprocessor(), CALIBRATION)
    backbone = copy.backbone
    assert set(ranges) == {
        (block.name, dense.name)
        for block in backbone.transformer_layers
        for dense in dense_layers(block)
    }
    assert all(low <= 0 <= high and low < high for low, high in ranges.values())
    # Every row the layer computes: the one batch of CALIBRATION trimmed
    # to its longest row, the shorter rows' padding positions included.
    features = trim_batch(export_preprocessor()(CALIBRATION), multiple=1)
    embedded = backbone.get_layer("embedding").output  # LayerNorm's
    embeddings = keras.Model(backbone.input, embedded)
    values = np.concatenate(
        [np.asarray(embeddings(features)).reshape(-1, 16), np.zeros((1, 16))]
    )
    low, high = ranges[(backbone.transformer_layers[0].name, "qkv_dense")]
    np.testing.assert_allclose([low, high], [values.min(), values.max()])


def test_served_implementation_names_the_calibrated_row():
    classifier = export_classifier()
    assert (
        served_implementation(classifier, quantize="int8", calibrated=True)
        == "serving_graph_int8_calibrated"
    )
    assert served_implementation(classifier, quantize="int8") == (
        "serving_graph_int8"
    )


@pytest.mark.parametrize(
    "options, error",
    [
        ({}, "calibration_texts with quantize=None.*quantize='int8'"),
        ({"quantize": "int8", "calibration_texts": []}, "non-empty list"),
        ({"quantize": "int8", "calibration_texts": "a fox"}, "non-empty list"),
        ({"quantize": "int8", "calibration_texts": [1, 2]}, "list of strings"),
    ],
)
def test_bad_calibration_is_refused_before_anything(tmp_path, options, error):
    options = {"calibration_texts": CALIBRATION, **options}
    with pytest.raises(ValueError, match=error):
        export_saved_model(
            export_classifier(),
            export_preprocessor(),
            str(tmp_path / "x"),
            **options,
        )
    assert not (tmp_path / "x").exists()


def test_blocks_without_the_serving_forms_are_refused(tmp_path):
    classifier = export_classifier(
        optimizations=[n for n in ALL if n != "remapper_serving_graph"]
    )
    with pytest.raises(ValueError, match="calibration_texts.*built without"):
        export_saved_model(
            classifier,
            export_preprocessor(),
            str(tmp_path / "x"),
            quantize="int8",
            calibration_texts=CALIBRATION,
        )
    assert not (tmp_path / "x").exists()


@pytest.mark.slow  # the recipe in a process of its own
def test_export_recipe_calibration_file(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCABULARY) + "\n")
    calibration = tmp_path / "calibration.txt"
    calibration.write_text("\n".join(CALIBRATION) + "\n")
    export_classifier().save(tmp_path / "clf.keras")
    result = run_export_recipe(
        f"--model={tmp_path / 'clf.keras'}",
        f"--vocab_file={vocab_file}",
        "--quantize=int8",
        f"--calibration_file={calibration}",
        "--sequence_length=12",
        f"--export_dir={tmp_path / 'served'}",
    )
    if not serves("int8"):  # refused before the model is loaded
        assert result.returncode != 0
        assert "TF_ENABLE_ONEDNN_OPTS=1" in result.stderr, result.stderr
        assert not (tmp_path / "served" / "1").exists()
        return
    assert result.returncode == 0, result.stderr[-3000:]
    ops = saved_model_op_types(str(tmp_path / "served" / "1"))
    assert "_QuantizedMatMul" in ops
