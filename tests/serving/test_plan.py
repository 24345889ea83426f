"""plan_export: every export option on every CPU kind, served or refused.

The CPU kinds are made up (`tests.helpers.on_cpu`), so that each kind's
row is checked on any machine: what the plan serves there (its encoder
implementation) or the `ValueError` it refuses with, before anything is
written. The real CPU's row runs in the export tests
(`tests/serving/test_int8_export.py` and the others, through
`tests.helpers.served_or_refused`).
"""

import dataclasses

import pytest

import keras_bert
from keras_bert.serving import plan_export
from keras_bert.serving.export import served_implementation
from keras_bert.serving.plan import ServingPlan
from tests.helpers import on_cpu
from tests.helpers import tiny_backbone_config

# (flags, oneDNN on) of each CPU kind.
CPUS = {
    # AMD EPYC Zen 2/3, Intel before Skylake-SP: TensorFlow leaves oneDNN
    # off by default.
    "avx2": ({"avx2"}, False),
    # The same with TF_ENABLE_ONEDNN_OPTS=1: no VNNI, so no exact int8.
    "avx2_onednn": ({"avx2"}, True),
    # Intel Cascade Lake: VNNI, no bfloat16.
    "avx512_vnni": ({"avx2", "avx512f", "avx512_vnni"}, True),
    # AMD EPYC Zen 4: VNNI and AVX512-BF16.
    "avx512_bf16": ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16"}, True),
    # The same CPU with TF_ENABLE_ONEDNN_OPTS=0.
    "avx512_bf16_eigen": (
        {"avx2", "avx512f", "avx512_vnni", "avx512_bf16"},
        False,
    ),
    # Intel Sapphire Rapids: AMX.
    "amx": ({"avx2", "avx512f", "avx512_vnni", "amx_bf16", "amx_int8"}, True),
}
OPTIONS = {
    "default": {},
    "streams": {"streams": 2},
    "int8": {"quantize": "int8"},
    "int8_calibrated": {"quantize": "int8", "calibration_texts": ["a b"]},
    "bfloat16": {"precision": "bfloat16"},
    "bfloat16_streams": {"precision": "bfloat16", "streams": 2},
}
SERVES = {
    "default": "serving_graph",
    "streams": "serving_graph_streams",
    "int8": "serving_graph_int8",
    "int8_calibrated": "serving_graph_int8_calibrated",
    "bfloat16": "serving_graph_bfloat16",
    "bfloat16_streams": "serving_graph_streams_bfloat16",
}
# Where oneDNN is off, what serves faster there instead of `SERVES`
# (`plan.eigen_serves_faster_without`): streams with Keras' layers between
# the matmuls, and without AVX-512 the blocks' own inference (`None`).
EIGEN_SERVES = {
    ("avx2", "default"): None,
    ("avx2", "streams"): "streams",
    ("avx512_bf16_eigen", "streams"): "streams",
}
# What each CPU kind refuses (else it serves `SERVES`), and a phrase of
# the reason.
INT8 = "oneDNN int8 kernels"
BFLOAT16 = "AVX512-BF16 or AMX"
REFUSED = {
    "avx2": {"int8": INT8, "int8_calibrated": INT8, "bfloat16": BFLOAT16},
    "avx2_onednn": {
        "int8": INT8,
        "int8_calibrated": INT8,
        "bfloat16": BFLOAT16,
    },
    "avx512_vnni": {"bfloat16": BFLOAT16},
    "avx512_bf16": {},
    "avx512_bf16_eigen": {
        "int8": INT8,
        "int8_calibrated": INT8,
        "bfloat16": BFLOAT16,
    },
    "amx": {},
}


def _backbone():
    return keras_bert.BertBackbone(**tiny_backbone_config())


@pytest.mark.parametrize("cpu", CPUS)
def test_every_option_serves_or_is_refused_by_the_plan(cpu):
    flags, onednn = CPUS[cpu]
    backbone = _backbone()
    with on_cpu(flags, onednn=onednn):
        for option, options in OPTIONS.items():
            refused = REFUSED[cpu].get(option)
            if option.startswith("bfloat16_") and "bfloat16" in REFUSED[cpu]:
                refused = REFUSED[cpu]["bfloat16"]
            if refused is None:
                plan = plan_export(backbone, **options)
                expected = EIGEN_SERVES.get((cpu, option), SERVES[option])
                assert plan.implementation == expected, (cpu, option)
                assert plan.cpu.onednn == onednn
                continue
            with pytest.raises(ValueError) as raised:
                plan_export(backbone, **options)
            message = str(raised.value)
            assert refused in message, (cpu, option, message)
            # It names this CPU and what to do instead.
            assert "this CPU is test CPU (" in message
            assert (
                "precision='float32'" in message or "quantize=None" in message
            )


def test_the_refusals_name_the_setting_that_turns_onednn_on():
    with on_cpu({"avx2", "avx512_vnni", "avx512_bf16"}, onednn=False):
        for options in ({"quantize": "int8"}, {"precision": "bfloat16"}):
            with pytest.raises(ValueError, match="TF_ENABLE_ONEDNN_OPTS=1"):
                plan_export(_backbone(), **options)


def test_check_cpu_false_exports_for_another_server_but_not_a_calibration():
    backbone = _backbone()
    with on_cpu({"avx2"}, onednn=False):
        plan = plan_export(backbone, quantize="int8", check_cpu=False)
        assert plan.implementation == "serving_graph_int8"
        with pytest.raises(ValueError, match="Calibration runs the int8"):
            plan_export(
                backbone,
                quantize="int8",
                calibration_texts=["a b"],
                check_cpu=False,
            )
        # A report of what an export would run asks nothing of the CPU.
        assert (
            served_implementation(backbone, quantize="int8", calibrated=True)
            == "serving_graph_int8_calibrated"
        )


def test_the_plan_is_immutable_and_named():
    with on_cpu({"avx2", "avx512_vnni", "avx512_bf16"}):
        plan = plan_export(_backbone(), precision="bfloat16", streams=2)
    assert isinstance(plan, ServingPlan)
    assert plan.name == "bfloat16, streams=2"
    assert plan.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.streams = 3
    assert ServingPlan(weights="int8_calibrated").name == "int8_calibrated"


def test_a_model_without_the_serving_forms_plans_its_own_inference():
    from keras_bert.layers.optimizations import ALL

    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(),
        optimizations=[n for n in ALL if n != "remapper_serving_graph"],
    )
    assert plan_export(backbone).implementation is None
    assert plan_export(backbone, streams=2).implementation == "streams"
    assert plan_export(backbone).name == "float32, without remapper forms"


def test_without_onednn_the_plan_serves_what_measured_faster_there():
    """The default export without AVX-512 and streams everywhere serve
    with Keras' layers where oneDNN is off; the bytes of either form are
    the same weights, once (`test_export_size.py`)."""
    backbone = _backbone()
    with on_cpu({"avx2"}, onednn=False):
        plan = plan_export(backbone)
        assert plan.name == "float32, without remapper forms"
        assert served_implementation(backbone) == "fast"
        # A report of an int8 export asks nothing of the CPU: its forms.
        assert (
            served_implementation(backbone, quantize="int8")
            == "serving_graph_int8"
        )
    with on_cpu({"avx2", "avx512f"}, onednn=False):
        assert plan_export(backbone).implementation == "serving_graph"
        assert plan_export(backbone, streams=2).implementation == "streams"
