"""Exports planned for a server's CPU (`server_cpu=`), not this one's.

Each kind of `SERVER_CPUS` is planned for from a CPU of the opposite kind
(`tests.helpers.on_cpu`: an AVX2-only one with oneDNN off for a server
with oneDNN, an AMX one for a server without), and must plan exactly as
that kind plans for itself: the same encoder implementation, or the same
refusal, naming the server's CPU. The real CPU writes exports for two
kinds and serves them.
"""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.serving import SERVER_CPUS
from keras_bert.serving import export_saved_model
from keras_bert.serving import plan_export
from keras_bert.serving import saved_model_op_types
from keras_bert.serving import server_cpu
from keras_bert.serving.export import served_implementation
from tests.helpers import EXPORT_SENTENCES
from tests.helpers import export_classifier
from tests.helpers import export_preprocessor
from tests.helpers import far_from_uniform
from tests.helpers import on_cpu
from tests.helpers import run_export_recipe

OPTIONS = {
    "default": {},
    "streams": {"streams": 2},
    "int8": {"quantize": "int8"},
    "bfloat16": {"precision": "bfloat16"},
    "bfloat16_streams": {"precision": "bfloat16", "streams": 2},
}
AVX2_EIGEN = ({"avx2"}, False)
AMX = ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8"}, True)
KINDS = [
    *SERVER_CPUS,
    "avx2+onednn",
    "avx512+onednn",
    "avx512_bf16-onednn",
]


def _outcome(model, options, **server):
    """The implementation the plan serves, or the refusal's requirement
    and the CPU it names."""
    try:
        return plan_export(model, **options, **server).implementation
    except ValueError as error:
        requirement, cpu = str(error).split(" is ", 1)[0].rsplit(": ", 1)
        return requirement, cpu


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_kind_plans_as_that_kind_plans_for_itself(kind):
    model = export_classifier()
    server = server_cpu(kind)
    planned_here = AVX2_EIGEN if server.onednn else AMX
    refusals = 0
    for name, options in OPTIONS.items():
        with on_cpu(*planned_here):
            for_server = _outcome(model, options, server_cpu=kind)
            assert plan_export(model).cpu.model == "test CPU"
        with on_cpu(server.flags, onednn=server.onednn):
            on_server = _outcome(model, options)
        if isinstance(on_server, tuple):
            refusals += 1
            assert for_server == (on_server[0], "the server's CPU"), name
        else:
            assert for_server == on_server, (kind, name)
    # Every kind refuses something but AMX with oneDNN, which serves all.
    assert (refusals == 0) == (kind in ("amx", "avx512_bf16"))


def test_what_each_kind_of_server_gets():
    model = export_classifier()
    with on_cpu(*AMX):  # planned here, on a CPU that serves everything
        assert plan_export(model).implementation == "serving_graph"
        # Keras' layers where oneDNN is off without AVX-512 (measured).
        assert plan_export(model, server_cpu="avx2").implementation is None
        assert served_implementation(model, server_cpu="avx2") == "fast"
        assert (
            plan_export(model, server_cpu="avx2+onednn").implementation
            == "serving_graph"
        )
        with pytest.raises(ValueError) as raised:
            plan_export(model, quantize="int8", server_cpu="avx2")
        message = str(raised.value)
        assert "the server's CPU is avx2 server (avx2; oneDNN off)" in message
        assert "quantize=None" in message  # the alternative
        assert "server_cpu=<its kind>" not in message  # it was given
    with on_cpu(*AVX2_EIGEN):
        plan = plan_export(model, quantize="int8", server_cpu="avx512_vnni")
        assert plan.implementation == "serving_graph_int8"
        assert plan.cpu.server and plan.cpu.onednn
        # Without it, this CPU refuses and says how to plan for a server.
        with pytest.raises(ValueError, match=r"server_cpu=<its kind>"):
            plan_export(model, quantize="int8")


def test_a_calibration_for_a_server_needs_the_int8_kernels_here():
    model = export_classifier()
    calibrated = {"quantize": "int8", "calibration_texts": ["a b"]}
    with on_cpu(*AVX2_EIGEN):
        with pytest.raises(ValueError) as raised:
            plan_export(model, **calibrated, server_cpu="avx512_vnni")
        message = str(raised.value)
        assert "this CPU is test CPU (avx2; oneDNN off)" in message
        assert "Calibration runs the int8 kernels here" in message
    with on_cpu({"avx2", "avx512f", "avx512_vnni"}):
        plan = plan_export(model, **calibrated, server_cpu="amx")
        assert plan.implementation == "serving_graph_int8_calibrated"


@pytest.mark.parametrize("kind", ["avx3", "AVX2", "avx2+", "", 2, ["avx2"]])
def test_an_unknown_kind_is_refused_with_the_kinds(kind):
    with pytest.raises(ValueError) as raised:
        plan_export(export_classifier(), server_cpu=kind)
    message = str(raised.value)
    assert f"server_cpu={kind!r}" in message
    assert "'avx512_vnni'" in message and "+onednn" in message


def test_server_cpu_validates_onednn_and_keeps_a_given_cpu():
    assert server_cpu("avx2").description == "avx2 server (avx2; oneDNN off)"
    assert server_cpu("avx512_vnni").onednn  # TensorFlow's default there
    assert not server_cpu("avx512").onednn
    assert server_cpu("avx2", onednn=True) == server_cpu("avx2+onednn")
    assert server_cpu(server_cpu("amx-onednn")) == server_cpu("amx", False)
    with pytest.raises(ValueError, match="onednn='yes'"):
        server_cpu("avx2", onednn="yes")


def test_exports_for_two_servers_serve_the_same_outputs_here(tmp_path):
    """Written on this CPU for a server without oneDNN and for one with
    it: Keras' layers in the first (no `FusedBatchNormV3`), the
    remapper's forms in the second; both serve what the model predicts."""
    classifier = far_from_uniform(export_classifier())
    preprocessor = export_preprocessor()
    expected = classifier.predict(
        preprocessor(tf.constant(EXPORT_SENTENCES)), verbose=0
    )
    expected = tf.nn.softmax(expected).numpy()
    layer_norms = {}
    for kind in ("avx2", "avx512_vnni"):
        path = export_saved_model(
            classifier, preprocessor, str(tmp_path / kind), server_cpu=kind
        )
        layer_norms[kind] = "FusedBatchNormV3" in saved_model_op_types(path)
        served = tf.saved_model.load(path).signatures["serving_default"](
            text=tf.constant(EXPORT_SENTENCES)
        )
        np.testing.assert_allclose(
            served["probabilities"].numpy(), expected, atol=1e-5, rtol=0
        )
    assert layer_norms == {"avx2": False, "avx512_vnni": True}


def test_the_export_recipe_plans_for_server_cpu(tmp_path):
    """`recipes/export.py --server_cpu=avx2` on any CPU: Keras' layers,
    and the log line names the server and its oneDNN setting; a kind it
    does not know is a usage error naming the flag."""
    from tests.helpers import EXPORT_VOCABULARY

    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(EXPORT_VOCABULARY) + "\n")
    export_classifier().save(tmp_path / "clf.keras")
    common = [
        f"--model={tmp_path / 'clf.keras'}",
        f"--vocab_file={vocab_file}",
        f"--export_dir={tmp_path / 'served'}",
    ]
    result = run_export_recipe(*common, "--server_cpu=avx2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "Its encoder blocks run fast, planned for avx2 server (avx2; oneDNN "
        "off): serve it with TF_ENABLE_ONEDNN_OPTS=0" in result.stderr
    )
    assert "FusedBatchNormV3" not in saved_model_op_types(
        str(tmp_path / "served" / "1")
    )
    refused = run_export_recipe(*common, "--server_cpu=avx3")
    assert refused.returncode != 0
    assert "server_cpu='avx3'" in refused.stderr
    assert "--server_cpu" in refused.stderr
