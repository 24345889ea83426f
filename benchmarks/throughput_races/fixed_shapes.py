"""benchmarks/throughput.py --race=train and --race=inference: the
synthetic model's contestants, each in its own process."""

import os
import time

from benchmarks import common
from benchmarks.contestants import synthetic
from benchmarks.throughput_races.shared import FLAGS
from benchmarks.throughput_races.shared import PRECISIONS
from benchmarks.throughput_races.shared import run

FRAMEWORKS = ("ours", "hub", "torch", "torch_compile")
TRAINING = [
    f"{framework}_{task}_{precision}"
    for task in ("cls", "pretrain")
    for precision in ("fp32", "bf16")
    for framework in FRAMEWORKS
] + [
    f"{framework}_{task}_{precision}_xla"
    for framework, precision in (
        ("ours", "fp32"),
        ("hub", "fp32"),
        ("hub", "bf16"),
    )
    for task in ("cls", "pretrain")
]
INFERENCE = ["ours", "ours_xla", "hub", "torch", "torch_compile"]


def parse(name):
    """`(framework, task, precision, xla)` of a training contestant."""
    framework, task, precision = name.removesuffix("_xla").rsplit("_", 2)
    task = "classify" if task == "cls" else task
    return framework, task, PRECISIONS[precision], name.endswith("_xla")


def run_worker(name):
    """Runs one contestant; prints its tokens/s."""
    threads = os.cpu_count()
    if name.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
    else:
        import keras
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    if FLAGS.race == "inference":
        call = synthetic.inference_call(
            name.removesuffix("_xla"), FLAGS.batch, name.endswith("_xla")
        )
        for _ in range(FLAGS.warmup):
            call()
        calls, start = 0, time.perf_counter()
        while calls < 3 or time.perf_counter() - start < FLAGS.seconds:
            call()
            calls += 1
        seconds = (time.perf_counter() - start) / calls / FLAGS.batch
        return common.print_result(synthetic.SEQUENCE / seconds)
    framework, task, precision, xla = parse(name)
    warmup, steps = FLAGS.warmup, FLAGS.steps
    if framework.startswith("torch"):
        compiled = framework == "torch_compile"
        times = synthetic.torch_step_times(
            task, precision, compiled, warmup, steps
        )
    else:
        keras.config.set_dtype_policy(precision)
        model, dataset = synthetic.keras_training(framework, task, xla)
        times = synthetic.keras_step_times(model, dataset, warmup, steps)
    # The median step: robust to a stray slow one, free of `fit`'s start.
    median = sorted(times)[len(times) // 2]
    common.print_result(synthetic.BATCH * synthetic.SEQUENCE / median)


def paired(name, results):
    """The paired ratios of a training row: ours against each peer, `_xla`
    against the same without XLA, bf16 against float32."""
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


def train_race(threads):
    import numpy as np

    names = FLAGS.contestants or TRAINING
    results, loads = {name: [] for name in names}, []
    peaks = {"float32": [], "bfloat16": []}
    for _ in range(FLAGS.rounds):
        loads.append(os.getloadavg()[0])
        for dtype in peaks:
            peaks[dtype].append(common.matmul_peak(dtype, threads))
        for name in names:
            results[name].append(run(name, "train"))
    rows = []
    for name in names:
        framework, task, precision, _ = parse(name)
        values = np.array(results[name])
        flops = synthetic.flops_per_token(framework, task)
        peak = np.median(peaks["bfloat16" if "16" in precision else "float32"])
        mfu = np.nanmedian(values) * flops / peak / 1e7
        rows.append(
            [name, task, precision, f"{np.nanmedian(values):.0f}"]
            + [f"{np.nanmin(values):.0f}–{np.nanmax(values):.0f}"]
            + [f"{flops / 1e6:.1f} M", f"{mfu:.0f}%", paired(name, results)]
        )
    header = ["contestant", "task", "precision", "tokens/s (median)", "range"]
    header += ["FLOPs/token", "MFU", "paired ratio"]
    subset = f" --contestants={','.join(names)}" if FLAGS.contestants else ""
    c, S, P = synthetic.CONFIG, synthetic.SEQUENCE, synthetic.PREDICTIONS
    return (
        "train_throughput",
        f"""## Training throughput

Machine: {common.machine_description()}.
Command: `python benchmarks/throughput.py --race=train --rounds={FLAGS.rounds} --steps={FLAGS.steps}{subset}`.
Load average (1 min, `os.getloadavg`) at the start of each round: {common.listed(loads, "{:.1f}")};
{common.load_note(loads, os.cpu_count())}
Model L{c["num_layers"]}/H{c["hidden_dim"]}/A{c["num_heads"]}/I{c["intermediate_dim"]},
vocab {c["vocabulary_size"]}, sequence {S}, batch {synthetic.BATCH}, AdamW (lr 1e-5, decay 0.01; each
library's own: `keras_bert.training.AdamW` for ours, Keras' `AdamW` for keras-hub,
`torch.optim.AdamW` for PyTorch); the pre-training step predicts {P} tokens per
sequence; see the script's docstring for the contestants. {threads} threads per process,
contestants in separate processes, alternating, {FLAGS.rounds} rounds × {FLAGS.steps} timed steps after
{FLAGS.warmup} warm-up steps; a process's figure is its median step time.
Matmul peak measured in the same run (2048³, TensorFlow): fp32 {np.median(peaks["float32"]):.0f} GFLOP/s,
bf16 {np.median(peaks["bfloat16"]):.0f} GFLOP/s. MFU counts the FLOPs each contestant computes
(column "FLOPs/token"; formula in `benchmarks/contestants/synthetic.py`): ours runs its last block's queries,
feed-forward and LayerNorms only on `[CLS]` (and the {P} masked positions), keras-hub
and PyTorch on all {S} positions, and transformers' `BertForPreTraining` decodes all
{S} positions through its masked-LM head where ours and keras-hub decode only the masked ones.
Tokens/s counts the {S} input tokens of every sequence for everyone.
Ratios are medians of per-round ratios ours/peer (>1: ours faster).

{chr(10).join(common.table(header, rows))}
""",
    )


def inference_race(threads):
    import numpy as np

    names, batches = FLAGS.contestants or INFERENCE, FLAGS.batch_sizes
    batches = [int(b) for b in batches]
    results, peaks = {(n, b): [] for b in batches for n in names}, []
    for _ in range(FLAGS.rounds):
        peaks.append(common.matmul_peak("float32", threads))
        for batch in batches:
            for name in names:
                results[(name, batch)].append(
                    run(name, "inference", f"--batch={batch}")
                )
    flops, rows = synthetic.flops_per_token("ours", "inference"), []
    for batch in batches:
        measured = {n: np.array(results[(n, batch)]) for n in names}
        for name, values in measured.items():
            if np.isnan(values).all():
                rows.append([batch, name, "failed", "", "", ""])
                continue
            ratios = [
                f"{peer}: {np.nanmedian(values / measured[peer]):.2f}×"
                for peer in measured
                if name.startswith("ours")
                and not peer.startswith("ours")
                and not np.isnan(measured[peer]).all()
            ]
            mfu = np.nanmedian(values) * flops / np.median(peaks) / 1e7
            rows.append(
                [batch, name, f"{np.nanmedian(values):.0f}"]
                + [f"{np.nanmin(values):.0f}–{np.nanmax(values):.0f}"]
                + [f"{mfu:.0f}%", ", ".join(ratios)]
            )
    header = ["batch", "contestant", "tokens/s (median)", "range", "MFU"]
    header += ["paired ratio"]
    c = synthetic.CONFIG
    return (
        "inference",
        f"""## Inference throughput

Machine: {common.machine_description()}.
Command: `python benchmarks/throughput.py --race=inference --rounds={FLAGS.rounds}`.
Classifier on an L{c["num_layers"]}/H{c["hidden_dim"]}/A{c["num_heads"]}/I{c["intermediate_dim"]} encoder,
vocab {c["vocabulary_size"]}, sequence {synthetic.SEQUENCE}, float32, random weights and ids (the same
in every process). {threads} threads per process, contestants in separate processes,
alternating, {FLAGS.rounds} rounds of at least {FLAGS.seconds:.0f} s timed after {FLAGS.warmup} warm-up calls.
Matmul peak measured in the same run (2048³, TensorFlow): fp32 {np.median(peaks):.0f} GFLOP/s.
FLOPs/token: {flops / 1e6:.1f} M (formula in `benchmarks/contestants/synthetic.py`).
Ratios are medians of per-round ratios ours/peer (>1: ours faster).
The raw-text SavedModel path is measured by `benchmarks/serving.py` (section above).

{chr(10).join(common.table(header, rows))}
""",
    )
