"""Inference throughput: keras-bert vs keras-hub vs transformers in PyTorch.

Every contestant runs the classifier of `contestants/synthetic.py` (the
training race's L4/H512/A8/I2048 encoder, a pooler and a 2-class head) on
the same random ids, batch 1 and 32, sequence 128, float32, with the same
threads, each in its own process, alternating (A B C A B C ...); reported:
the median tokens/s, its range, the paired ratio ours/peer per round and
MFU against a 2048³ matmul peak measured in the same run.

  ours           `BertClassifier.predict_on_batch` (Keras' compiled predict)
  ours_xla       the same with `jit_compile=True`
  hub            keras-hub `BertTextClassifier.predict_on_batch`
  torch          `BertForSequenceClassification`, eval mode, under
                 `torch.inference_mode()`
  torch_compile  the same through `torch.compile` (reported if it fails)

    python benchmarks/inference.py [--rounds=3] [--seconds=6]

Writes the "inference" section of benchmarks/RESULTS.md.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import synthetic  # noqa: E402

CONTESTANTS = ["ours", "ours_xla", "hub", "torch", "torch_compile"]

flags.DEFINE_integer("rounds", 3, "Alternating rounds of all contestants.")
flags.DEFINE_float("seconds", 6.0, "Timed seconds per process (at least).")
flags.DEFINE_integer("warmup", 3, "Untimed calls per process.")
flags.DEFINE_string("worker", None, "Internal: run one contestant.")
flags.DEFINE_integer("batch", None, "Internal: the worker's batch size.")
flags.DEFINE_list("contestants", CONTESTANTS, "Contestants to run.")
flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes to measure.")
flags.DEFINE_integer("threads", None, "Threads per process; default: cores.")
FLAGS = flags.FLAGS


def run_worker(name, batch):
    """Calls the contestant for at least --seconds; prints its tokens/s."""
    threads = FLAGS.threads or os.cpu_count()
    if name.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
    else:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    call = synthetic.inference_call(
        name.removesuffix("_xla"), batch, jit_compile=name.endswith("_xla")
    )
    for _ in range(FLAGS.warmup):
        call()
    calls, start = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - start < FLAGS.seconds:
        call()
        calls += 1
    seconds = time.perf_counter() - start
    common.print_result(calls / seconds * batch * synthetic.SEQUENCE)


def main(argv):
    del argv
    if FLAGS.worker:
        return run_worker(FLAGS.worker, FLAGS.batch)
    import numpy as np

    names, batches = FLAGS.contestants, [int(b) for b in FLAGS.batch_sizes]
    threads = FLAGS.threads or os.cpu_count()
    results = {(name, b): [] for b in batches for name in names}
    failures, peaks = {}, []
    for round_index in range(FLAGS.rounds):
        peaks.append(common.matmul_peak("float32", threads))
        for batch in batches:
            for name in names:
                if (name, batch) in failures:
                    continue
                command = common.script_command(
                    __file__, f"--worker={name}", f"--batch={batch}",
                    f"--threads={threads}", *common.flag_values("seconds", "warmup"),
                )  # fmt: skip
                value, _, output = common.run_worker(command, check=False)
                if value is None:
                    failures[(name, batch)] = output.strip().splitlines()[-1][:200]
                    print(f"{name} batch {batch} failed:\n{output[-2000:]}")
                    continue
                results[(name, batch)].append(value)
                print(f"round {round_index} {name} batch {batch}: {value:.0f} tokens/s")  # fmt: skip
    peak = float(np.median(peaks))
    flops = synthetic.flops_per_token("ours", "inference")
    rows = []
    for batch in batches:
        measured = {n: np.array(results[(n, batch)]) for n in names if results[(n, batch)]}  # fmt: skip
        for name in names:
            if name not in measured:
                reason = failures.get((name, batch), "not run")
                rows.append(f"| {batch} | {name} | failed: {reason} | | | |")
                continue
            values = measured[name]
            ratios = [
                f"{peer}: {np.median(values / measured[peer]):.2f}×"
                for peer in measured
                if name.startswith("ours")
                and not peer.startswith("ours")
                and len(measured[peer]) == len(values)
            ]
            mfu = np.median(values) * flops / (peak * 1e9)
            rows.append(
                f"| {batch} | {name} | {np.median(values):.0f} "
                f"| {values.min():.0f}–{values.max():.0f} "
                f"| {100 * mfu:.0f}% | {', '.join(ratios)} |"
            )
    c = synthetic.CONFIG
    markdown = f"""## Inference throughput

Machine: {common.machine_description()}.
Command: `python benchmarks/inference.py --rounds={FLAGS.rounds}`.
Classifier on an L{c["num_layers"]}/H{c["hidden_dim"]}/A{c["num_heads"]}/I{c["intermediate_dim"]} encoder,
vocab {c["vocabulary_size"]}, sequence {synthetic.SEQUENCE}, float32, random weights and ids (the same
in every process). {threads} threads per process, contestants in separate processes,
alternating, {FLAGS.rounds} rounds of at least {FLAGS.seconds:.0f} s timed after {FLAGS.warmup} warm-up calls.
Matmul peak measured in the same run (2048³, TensorFlow): fp32 {peak:.0f} GFLOP/s.
FLOPs/token: {flops / 1e6:.1f} M (formula in `benchmarks/contestants/synthetic.py`).
Ratios are medians of per-round ratios ours/peer (>1: ours faster).
The raw-text SavedModel path is measured by `benchmarks/serving.py` (section above).

| batch | contestant | tokens/s (median) | range | MFU | paired ratio |
|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    common.update_results("inference", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
