"""Training throughput: keras-bert vs keras-hub vs transformers in PyTorch.

Every contestant trains `contestants/synthetic.py`'s model (L4/H512/A8/I2048,
batch 16, sequence 128; its docstring counts the FLOPs) on the same
synthetic batch with the same threads, each in its own process; the driver
alternates the processes (A B C A B C ...) so that all see the same load,
and reports the median tokens/s, its range, the paired ratio ours/peer per
round and the model FLOPs utilisation against a matmul peak measured in
the same run. A contestant is `<framework>_<task>_<precision>[_xla]`:
framework `ours`, `hub`, `torch` or `torch_compile`; task `cls` or
`pretrain`; precision `fp32` or `bf16` (PyTorch: `torch.autocast`, as
transformers' Trainer runs bf16); `_xla` compiles the step with
`jit_compile=True` (keras-hub's "auto" leaves XLA off on a CPU).

    python benchmarks/train_throughput.py [--rounds=3] [--steps=10]
        [--contestants=ours_cls_fp32,hub_cls_fp32,...]

Writes the "train_throughput" section of benchmarks/RESULTS.md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import synthetic  # noqa: E402

FRAMEWORKS = ("ours", "hub", "torch", "torch_compile")
CONTESTANTS = [
    f"{framework}_{task}_{precision}"
    for task in ("cls", "pretrain")
    for precision in ("fp32", "bf16")
    for framework in FRAMEWORKS
] + [
    "ours_cls_fp32_xla",
    "ours_pretrain_fp32_xla",
    "hub_cls_fp32_xla",
    "hub_pretrain_fp32_xla",
    "hub_cls_bf16_xla",
    "hub_pretrain_bf16_xla",
]
PRECISIONS = {"fp32": "float32", "bf16": "mixed_bfloat16"}

flags.DEFINE_integer("rounds", 3, "Alternating rounds of all contestants.")
flags.DEFINE_integer("steps", 10, "Timed steps per process.")
flags.DEFINE_integer("warmup", 3, "Untimed steps per process.")
flags.DEFINE_string("worker", None, "Internal: run one contestant.")
flags.DEFINE_list("contestants", None, "Subset to run; default: all.")
flags.DEFINE_integer("threads", None, "Threads per process; default: cores.")
FLAGS = flags.FLAGS


def parse(name):
    """`(framework, task, precision, xla)` of a contestant's name."""
    framework, task, precision = name.removesuffix("_xla").rsplit("_", 2)
    task = "classify" if task == "cls" else task
    return framework, task, PRECISIONS[precision], name.endswith("_xla")


def run_worker(name):
    """Trains as one contestant; prints its tokens/s (of the median step:
    robust to a stray slow step, free of `fit`'s start and end)."""
    framework, task, precision, xla = parse(name)
    threads = FLAGS.threads or os.cpu_count()
    if framework.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
        times = synthetic.torch_step_times(
            task, precision, framework == "torch_compile", FLAGS.warmup,
            FLAGS.steps,
        )  # fmt: skip
    else:
        import keras
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        keras.config.set_dtype_policy(precision)
        model, dataset = synthetic.keras_training(framework, task, xla)
        times = synthetic.keras_step_times(
            model, dataset, FLAGS.warmup, FLAGS.steps
        )
    median = sorted(times)[len(times) // 2]
    common.print_result(synthetic.BATCH * synthetic.SEQUENCE / median)


def paired(name, results):
    """The paired ratios a contestant's row shows: ours against each peer,
    `_xla` against the same without XLA, bf16 against float32."""
    import numpy as np

    framework, _, precision, xla = parse(name)
    peers = []
    if framework == "ours" and not xla:
        peers = [(p, name.replace("ours", p)) for p in FRAMEWORKS[1:]]
        peers.append(("hub XLA", name.replace("ours", "hub") + "_xla"))
    if xla:
        peers.append(("without XLA", name.removesuffix("_xla")))
    elif framework == "ours" and precision != "float32":
        peers.append(("own fp32", name.replace("bf16", "fp32")))
    values = np.array(results[name])
    return ", ".join(
        f"{label}: {np.nanmedian(values / np.array(results[peer])):.2f}×"
        for label, peer in peers
        if peer in results
    )


def main(argv):
    del argv
    if FLAGS.worker:
        return run_worker(FLAGS.worker)
    import numpy as np

    names = FLAGS.contestants or CONTESTANTS
    threads = FLAGS.threads or os.cpu_count()
    results = {name: [] for name in names}
    peaks = {"float32": [], "bfloat16": []}
    loads = []
    for round_index in range(FLAGS.rounds):
        loads.append(os.getloadavg()[0])
        for dtype in peaks:
            peaks[dtype].append(common.matmul_peak(dtype, threads))
        for name in names:
            command = common.script_command(
                __file__, f"--worker={name}", f"--threads={threads}",
                *common.flag_values("steps", "warmup"),
            )  # fmt: skip
            value, _, output = common.run_worker(command, check=False)
            if value is None:
                print(f"{name} failed:\n{output[-2000:]}")
            results[name].append(float("nan") if value is None else value)
            print(f"round {round_index} {name}: {value} tokens/s", flush=True)
    peak = {k: float(np.median(v)) for k, v in peaks.items()}
    rows = []
    for name in names:
        framework, task, precision, _ = parse(name)
        values = np.array(results[name])
        flops = synthetic.flops_per_token(framework, task)
        dtype = "float32" if precision == "float32" else "bfloat16"
        mfu = np.nanmedian(values) * flops / (peak[dtype] * 1e9)
        rows.append(
            f"| {name} | {task} | {precision} | {np.nanmedian(values):.0f} "
            f"| {np.nanmin(values):.0f}–{np.nanmax(values):.0f} "
            f"| {flops / 1e6:.1f} M | {100 * mfu:.0f}% "
            f"| {paired(name, results)} |"
        )
    subset = f" --contestants={','.join(names)}" if FLAGS.contestants else ""
    c, S, P = synthetic.CONFIG, synthetic.SEQUENCE, synthetic.PREDICTIONS
    markdown = f"""## Training throughput

Machine: {common.machine_description()}.
Command: `python benchmarks/train_throughput.py --rounds={FLAGS.rounds} --steps={FLAGS.steps}{subset}`.
Load average (1 min, `os.getloadavg`) at the start of each round: {common.listed(loads, "{:.1f}")};
{common.load_note(loads, os.cpu_count())}
Model L{c["num_layers"]}/H{c["hidden_dim"]}/A{c["num_heads"]}/I{c["intermediate_dim"]},
vocab {c["vocabulary_size"]}, sequence {S}, batch {synthetic.BATCH}, AdamW (lr 1e-5, decay 0.01; each
library's own: `keras_bert.training.AdamW` for ours, Keras' `AdamW` for keras-hub,
`torch.optim.AdamW` for PyTorch); the pre-training
step predicts {P} tokens per sequence (keras-hub's BertMaskedLM has no NSP head;
ours and `BertForPreTraining` do); PyTorch's bf16 rows use
`torch.autocast("cpu", torch.bfloat16)`, as transformers' Trainer does; `torch_compile` rows run the
same PyTorch model through `torch.compile` (compiled during warm-up); `_xla` rows compile the
training step with `jit_compile=True` (keras-hub's default "auto" leaves XLA off on a CPU). {threads} threads per process, contestants in
separate processes, alternating, {FLAGS.rounds} rounds × {FLAGS.steps} timed steps after {FLAGS.warmup} warm-up steps;
a process's figure is its median step time (each step timed on its own).
Matmul peak measured in the same run (2048³, TensorFlow): fp32 {peak["float32"]:.0f} GFLOP/s,
bf16 {peak["bfloat16"]:.0f} GFLOP/s. MFU counts the FLOPs each contestant computes
(column "FLOPs/token"; formula in `benchmarks/contestants/synthetic.py`): ours runs its last block's queries,
feed-forward and LayerNorms only on `[CLS]` (and the {P} masked positions), keras-hub
and PyTorch on all {S} positions, and transformers' `BertForPreTraining` decodes all
{S} positions through its masked-LM head where ours and keras-hub decode only the masked ones.
Tokens/s counts the {S} input tokens of every sequence for everyone.
Ratios are medians of per-round ratios ours/peer (>1: ours faster).

| contestant | task | precision | tokens/s (median) | range | FLOPs/token | MFU | paired ratio |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    common.update_results("train_throughput", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
