"""How an export runs, decided once: the serving plan.

`plan_export(model, quantize=, streams=, precision=, calibration_texts=)`
turns an export's options and the CPU it runs on (`keras_bert.serving.
cpu`: flags, oneDNN on or off; or, with `server_cpu=`, the kind of CPU
the export will be served on) into one immutable `ServingPlan`: the
weights (float32, int8, calibrated int8), the matmul dtype, the streams,
whether the blocks run the remapper's forms and read frozen weights, and
so the encoder implementation each served block runs
(`keras_bert.serving.runtime.block`). It holds the one table of options
that cannot be served together (`INCOMPATIBLE`) and the one table of what
each option needs of the CPU (`CPU_NEEDS`): an option the CPU cannot
serve is refused here, at export time, with a `ValueError` naming the
requirement and the alternatives, never written and failed later.

`keras_bert.serving.served_copy` applies a plan to a copy of the model, in
one place; `export_saved_model` makes and applies one. A plan's `name` is
what docs and benchmarks print.
"""

import dataclasses

from absl import logging

from keras_bert.serving.cpu import BFLOAT16_FLAGS
from keras_bert.serving.cpu import INT8_FLAGS
from keras_bert.serving.cpu import server_cpu as server_cpu_of
from keras_bert.serving.cpu import this_cpu
from keras_bert.validation import check_positive_int

# The values `quantize` accepts.
QUANTIZATION_MODES = ("int8",)
# The values `precision` accepts: the dtype of the encoder blocks' dense
# matmuls.
PRECISIONS = ("float32", "bfloat16")

# Options that cannot be served together: (option, option) → why, and
# what to pass instead.
INCOMPATIBLE = {
    ("quantize", "streams"): (
        "the streams lay out float weights, and int8 weights run as one chain",
        "Pass one of them: quantize without streams for int8 weights, or "
        "streams without quantize for float weights in parallel streams.",
    ),
    ("quantize", "precision"): (
        "int8 weights run int8 matmuls, bfloat16 ones bfloat16 matmuls",
        "Pass one of them.",
    ),
}

_ONEDNN_FIX = (
    "TensorFlow turns oneDNN on by default only on CPUs with AVX512-VNNI, "
    "AVX512-BF16, AVX-VNNI or AMX; set TF_ENABLE_ONEDNN_OPTS=1 before "
    "TensorFlow is imported (in this process and on the server)"
)

# What each option needs of the CPU: option → (does this `Cpu` serve it,
# what it needs, the alternatives). Measured where a fallback was weighed:
# without oneDNN, Keras' own int8 matmul is slower than float32's,
# so int8 is refused
# there rather than served slower (section `int8_matmul_eigen` of
# benchmarks/RESULTS.md). Without VNNI or AMX, oneDNN's u8·s8 products
# add up in saturating 16-bit sums (oneDNN's developer guide, "Nuances of
# int8 Computations"): refused there too.
CPU_NEEDS = {
    "int8": (
        lambda cpu: cpu.int8_kernel and bool(set(INT8_FLAGS) & cpu.flags),
        "quantize='int8' runs on TensorFlow's oneDNN int8 kernels, which "
        "need oneDNN on where it serves and a CPU with "
        f"{' or '.join(INT8_FLAGS)} (VNNI or AMX) to sum int8 products "
        "exactly",
        f"Where the CPU has them, {_ONEDNN_FIX}; elsewhere export float32 "
        "weights (quantize=None, with streams=N for short requests on "
        "several cores).",
    ),
    "bfloat16": (
        lambda cpu: cpu.bfloat16 and cpu.onednn,
        f"precision='bfloat16' needs a CPU with {' or '.join(BFLOAT16_FLAGS)}"
        " (AVX512-BF16 or AMX) and TensorFlow's oneDNN on, to run bfloat16 "
        "matmuls in hardware; elsewhere it could serve slower than float32",
        f"Export with precision='float32' (the default) for this CPU; where "
        f"the CPU has the flags, {_ONEDNN_FIX}.",
    ),
}


@dataclasses.dataclass(frozen=True)
class ServingPlan:
    """How an export serves: what `plan_export` decided.

    Attributes:
        weights: str. `"float32"`, `"int8"` (per-row input ranges) or
            `"int8_calibrated"` (calibrated input ranges, one fused kernel).
        matmul_dtype: str. The blocks' dense matmuls: `"float32"` or
            `"bfloat16"`.
        streams: int or `None`. Each block's heads and feed-forward units
            as this many parallel chains.
        remapper_forms: bool. The embedding and blocks run in the forms
            TensorFlow's CPU remapper fuses (the model's optimizations
            include `"remapper_serving_graph"`).
        frozen: bool. Weights read as constants of the traced graph.
        cpu: `keras_bert.serving.cpu.Cpu`. The CPU it was planned for:
            this process's, or the server's (`server_cpu`).

    Example:
    ```python
    plan = plan_export(classifier, streams=2)
    plan.name  # "float32, streams=2"
    plan.implementation  # "serving_graph_streams"
    ```
    """

    weights: str = "float32"
    matmul_dtype: str = "float32"
    streams: object = None
    remapper_forms: bool = True
    frozen: bool = True
    cpu: object = None

    @property
    def implementation(self):
        """The name of `keras_bert.serving.runtime.block.IMPLEMENTATIONS`
        every served block runs, or `None`: the blocks' own inference
        (a model built without `"remapper_serving_graph"`)."""
        if not self.remapper_forms:
            return "streams" if self.streams else None
        name = "serving_graph"
        if self.streams:
            name += "_streams"
        if self.weights != "float32":
            name += "_" + self.weights
        if self.matmul_dtype == "bfloat16":
            name += "_bfloat16"
        return name

    @property
    def name(self):
        """What docs and benchmarks print, e.g. `"int8_calibrated"`,
        `"bfloat16, streams=2"`."""
        name = self.weights
        if self.matmul_dtype != "float32":
            name = self.matmul_dtype
        if self.streams:
            name += f", streams={self.streams}"
        if not self.remapper_forms:
            name += ", without remapper forms"
        return name


def check_options(
    quantize=None,
    streams=None,
    precision="float32",
    calibrated=False,
    check_cpu=True,
    cpu=None,
):
    """Raises a `ValueError` naming the values and the fix unless each
    option is valid, `INCOMPATIBLE` allows them together and the CPU
    serves them (`CPU_NEEDS`; with `check_cpu=False`, for a server with
    another CPU, a warning instead, except for a calibration, which runs
    here).

    Args:
        quantize: `None` or `"int8"`.
        streams: `None` or a positive int.
        precision: `"float32"` or `"bfloat16"`.
        calibrated: bool. `calibration_texts` are given.
        check_cpu: bool or `None`. Refuse what this CPU cannot serve;
            `None` asks nothing of the CPU (for reports of what an export
            would run). Defaults to `True`.
        cpu: a `keras_bert.serving.cpu.Cpu` (e.g. a server's,
            `keras_bert.serving.cpu.server_cpu`), or `None` for this one.
    """
    if quantize is not None and quantize not in QUANTIZATION_MODES:
        raise ValueError(
            "Received an invalid value for argument `quantize`, expected "
            f"None (float weights) or one of {list(QUANTIZATION_MODES)}. "
            f"Received: quantize={quantize!r}. Pass quantize='int8' for int8 "
            "weights."
        )
    if streams is not None:
        check_positive_int("streams", streams)
    if precision not in PRECISIONS:
        raise ValueError(
            "Received an invalid value for argument `precision`, expected "
            f"one of {list(PRECISIONS)}. Received: precision={precision!r}. "
            "Pass precision='bfloat16' for bfloat16 matmuls in the encoder."
        )
    if calibrated and quantize != "int8":
        raise ValueError(
            f"Received calibration_texts with quantize={quantize!r}: the "
            "calibrated ranges are those of int8 layers' inputs. Pass "
            "quantize='int8' too, or no calibration_texts."
        )
    given = {
        "quantize": quantize,
        "streams": streams,
        "precision": None if precision == "float32" else precision,
    }
    for (first, second), (why, fix) in INCOMPATIBLE.items():
        if given[first] is not None and given[second] is not None:
            raise ValueError(
                f"Received {first}={given[first]!r} and "
                f"{second}={given[second]!r}: {why}. {fix}"
            )
    if check_cpu is not None:
        check_cpu_serves(quantize, precision, calibrated, check_cpu, cpu)


def cpu_problem(option, cpu=None):
    """Why this CPU (or `cpu`) cannot serve `option`, or `None` where it
    can.

    Args:
        option: a key of `CPU_NEEDS`: `"int8"` or `"bfloat16"`.
        cpu: a `keras_bert.serving.cpu.Cpu`, or `None` for this one.

    Returns:
        `None`, or a sentence naming the requirement and this CPU (e.g.
        for a benchmark that skips an export here and says why).

    Example:
    ```python
    print(cpu_problem("bfloat16") or "this CPU serves bfloat16")
    ```
    """
    serves, requirement, _ = CPU_NEEDS[option]
    cpu = cpu or this_cpu()
    if serves(cpu):
        return None
    return f"{requirement}: {cpu.subject} is {cpu.description}."


def check_cpu_serves(
    quantize=None,
    precision="float32",
    calibrated=False,
    check_cpu=True,
    cpu=None,
):
    """Raises a `ValueError` naming the requirement, this CPU and the
    alternatives unless the CPU serves `quantize` and `precision`
    (`CPU_NEEDS`); with `check_cpu=False` (for a server with another CPU)
    logs a warning instead, except for a calibration, which runs here
    (and so, for a server's `cpu`, needs this CPU's int8 kernels too).
    Arguments as `check_options`'."""
    needs = [
        need for need in (quantize, precision) if need not in (None, "float32")
    ]
    for need in needs:
        message = cpu_problem(need, cpu)
        if message is None:
            continue
        alternatives = CPU_NEEDS[need][2]
        if check_cpu or calibrated:
            also = (
                " Calibration runs the int8 kernels here, so it needs them "
                "in this process whatever the server."
                if calibrated and not check_cpu
                else " To export for a server whose CPU has them, pass "
                "server_cpu=<its kind> (keras_bert.serving.cpu.SERVER_CPUS)."
                if not (cpu and cpu.server)
                else ""
            )
            raise ValueError(f"{message} {alternatives}{also}")
        logging.warning(
            "%s Going on (check_cpu=False): serve it on a CPU that runs it.",
            message,
        )
    here = cpu_problem("int8") if calibrated and cpu and cpu.server else None
    if here:
        raise ValueError(
            f"{here} Calibration runs the int8 kernels here, so it needs them "
            "in this process whatever the server: calibrate on a machine of "
            "the server's kind, or export without calibration_texts (per-row "
            "int8 ranges)."
        )


def eigen_serves_faster_without(streams, cpu):
    """Whether float32 weights served on TensorFlow's Eigen kernels (oneDNN
    off) are faster with Keras' layers than in the remapper's forms, which
    were written for oneDNN's fusions.

    Measured per CPU kind, each against the other in paired rounds
    (`python benchmarks/serving_ops.py`, sections of
    benchmarks/RESULTS.md):

    - with streams, on every kind: Keras' layers between the matmuls
      (`streams_2_without_forms` against `streams_2`: 1.80x and 1.30x at
      batch 1 and 32 on an AVX-512 EPYC with oneDNN switched off,
      `serving_ops_eigen`; 1.33x / 1.00x and 1.63x / 1.05x over two runs
      on an AVX2-only EPYC, `serving_ops_avx2`, `serving_ops_avx2_rerun`);
    - without streams, on a CPU without AVX-512: Keras' layers (`fast`
      against `serving_graph`: the forms served 0.89x at batch 1 in both
      AVX2 runs, 0.91x and 1.06x at batch 32);
    - without streams, with AVX-512 (as Intel's Skylake-SP, where oneDNN
      is off by default): the forms (1.03x and 1.15x `fast`).
    """
    return bool(streams) or "avx512f" not in cpu.flags


def plan_export(
    model,
    quantize=None,
    streams=None,
    precision="float32",
    calibration_texts=None,
    check_cpu=True,
    frozen=True,
    server_cpu=None,
):
    """The `ServingPlan` of an export of `model` with these options on
    this CPU; a `ValueError` for options that cannot be served together
    or that this CPU cannot serve (`check_options`). Where TensorFlow's
    oneDNN is off, float32 weights serve without the remapper's forms
    where that measured faster (`eigen_serves_faster_without`: with
    `streams`, and on CPUs without AVX-512): plan an export on the kind
    of CPU, and with the `TF_ENABLE_ONEDNN_OPTS` setting, it will be
    served with, or name that kind in `server_cpu`.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.
        quantize, streams, precision, calibration_texts, check_cpu: as
            `keras_bert.serving.export_saved_model` takes them
            (`check_cpu=None`: no CPU check, see `check_options`).
        frozen: bool. Weights as constants of the traced graph (an
            export); `False` for a copy that keeps reading its variables.
            Defaults to `True`.
        server_cpu: `None` (this CPU, as this process runs it), a kind of
            `keras_bert.serving.cpu.SERVER_CPUS` (e.g. `"avx2"`, with
            TensorFlow's default oneDNN setting there) or a
            `keras_bert.serving.cpu.server_cpu(kind, onednn=)`: the CPU
            the export is planned for and checked against. A calibration
            runs here, so it needs this CPU's int8 kernels too.

    Returns:
        A `ServingPlan`.

    Example:
    ```python
    plan = plan_export(classifier)
    # Where oneDNN is on; on an AVX2-only CPU without it: (
    # "float32, without remapper forms", None), Keras' layers.
    plan.name, plan.implementation  # ("float32", "serving_graph")
    ```
    """
    from keras_bert.models.backbone_of import backbone_of
    from keras_bert.serving.int8_calibration import check_calibration_texts
    from keras_bert.serving.runtime.stream_layout import check_streams

    calibrated = calibration_texts is not None
    if calibrated:
        check_calibration_texts(calibration_texts)
    check_options(quantize, streams, precision, calibrated, check_cpu=None)
    backbone = backbone_of(model)
    check_streams(streams, backbone.num_heads)
    block = backbone.transformer_layers[0]
    remapper_forms = "remapper_serving_graph" in block.optimizations
    if not remapper_forms and (calibrated or precision != "float32"):
        option = "calibration_texts" if calibrated else "precision='bfloat16'"
        raise ValueError(
            f"{option} runs in the serving forms of the encoder blocks, but "
            "this model was built without them (its optimizations: "
            f"{list(block.optimizations)}). Build the model with the default "
            "optimizations (they include 'remapper_serving_graph'), or "
            f"export without {option}."
        )
    cpu = this_cpu() if server_cpu is None else server_cpu_of(server_cpu)
    if check_cpu is not None:
        check_cpu_serves(quantize, precision, calibrated, check_cpu, cpu)
    if not cpu.onednn and not quantize and precision == "float32":
        remapper_forms = remapper_forms and not eigen_serves_faster_without(
            streams, cpu
        )
    weights = "float32"
    if quantize:
        weights = "int8_calibrated" if calibrated else "int8"
    return ServingPlan(
        weights=weights,
        matmul_dtype=precision,
        streams=streams,
        remapper_forms=remapper_forms,
        frozen=frozen,
        cpu=cpu,
    )
