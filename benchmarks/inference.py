"""Inference throughput: keras-bert vs keras-hub vs Hugging Face PyTorch.

Every contestant runs the same classifier (the training benchmark's
L4/H512/A8/I2048 encoder, vocab 30522, pooler and a 2-class head) on the
same token ids, batch 1 and batch 32, sequence 128, float32, with the same
thread settings, each in its own process; the driver alternates the
processes (A B C ... A B C ...) so that they share the machine's load, and
reports the median tokens/s, its range, the paired ratio ours/peer per
round, and the model FLOPs utilisation against a 2048³ matmul peak measured
in the same run.

FLOPs per token (inference): 2 × N + 4 × L × S × H, where N is the number
of non-embedding parameters (the pooler and head are per sequence and
negligible), L layers, S sequence length, H hidden size (the attention
score and context matmuls).

Contestants (each the framework's usual fast path for a batch in memory):
- `ours`: `keras_bert.BertClassifier.predict_on_batch` (Keras' compiled
  predict function).
- `ours_xla`: the same, compiled with `jit_compile=True`.
- `hub`: keras-hub `BertTextClassifier.predict_on_batch`.
- `torch`: `transformers.BertForSequenceClassification` in eval mode under
  `torch.inference_mode()`.
- `torch_compile`: the same model through `torch.compile` (skipped, and
  reported, when it fails here).

    python benchmarks/inference.py [--rounds=3]

Writes the "inference" section of benchmarks/RESULTS.md.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("rounds", 3, "Alternating rounds of all contestants.")
flags.DEFINE_float("seconds", 6.0, "Timed seconds per process (at least).")
flags.DEFINE_integer("warmup", 3, "Untimed calls per process.")
flags.DEFINE_string("worker", None, "Internal: run one contestant.")
flags.DEFINE_integer("batch", None, "Internal: the worker's batch size.")
flags.DEFINE_list("contestants", None, "Subset to run; default all.")
flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes to measure.")
flags.DEFINE_integer("threads", None, "Threads per process; default: cores.")
FLAGS = flags.FLAGS

CONFIG = common.CONFIG

SEQUENCE = 128
CONTESTANTS = ["ours", "ours_xla", "hub", "torch", "torch_compile"]


def flops_per_token():
    L, H = CONFIG["num_layers"], CONFIG["hidden_dim"]
    return 2 * common.encoder_parameters() + 4 * L * SEQUENCE * H


def _inputs(batch, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return {
        "token_ids": rng.integers(
            1000, CONFIG["vocabulary_size"], (batch, SEQUENCE)
        ).astype("int32"),
        "segment_ids": np.repeat(
            [[0] * (SEQUENCE // 2) + [1] * (SEQUENCE // 2)], batch, 0
        ).astype("int32"),
        "padding_mask": np.ones((batch, SEQUENCE), "int32"),
    }


def _timed(call):
    """Calls per second of `call`, over at least --seconds."""
    for _ in range(FLAGS.warmup):
        call()
    calls, start = 0, time.perf_counter()
    while True:
        call()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= FLAGS.seconds and calls >= 3:
            return calls / elapsed


def _keras_worker(name, batch, threads):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(0)
    inputs = _inputs(batch)
    if name.startswith("ours"):
        import keras_bert

        model = keras_bert.BertClassifier(
            keras_bert.BertBackbone(**CONFIG), num_classes=2
        )
        model.compile(jit_compile=name == "ours_xla")
    else:
        import keras_hub

        model = keras_hub.models.BertTextClassifier(
            keras_hub.models.BertBackbone(**CONFIG),
            num_classes=2,
            preprocessor=None,
        )
        model.compile(jit_compile=False)
    return _timed(lambda: model.predict_on_batch(inputs))


def _torch_worker(name, batch, threads):
    import torch
    import transformers

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = common.hf_bert_config()
    model = transformers.BertForSequenceClassification(config).eval()
    data = {k: torch.tensor(v).long() for k, v in _inputs(batch).items()}
    inputs = dict(
        input_ids=data["token_ids"],
        token_type_ids=data["segment_ids"],
        attention_mask=data["padding_mask"],
    )
    if name == "torch_compile":
        model = torch.compile(model)

    def call():
        with torch.inference_mode():
            return model(**inputs).logits

    return _timed(call)


def run_worker(name, batch):
    threads = FLAGS.threads or os.cpu_count()
    if name.startswith("torch"):
        calls_per_second = _torch_worker(name, batch, threads)
    else:
        calls_per_second = _keras_worker(name, batch, threads)
    common.print_result(
        {
            "name": name,
            "batch": batch,
            "tokens_per_second": calls_per_second * batch * SEQUENCE,
        }
    )


def main(argv):
    del argv
    if FLAGS.worker:
        run_worker(FLAGS.worker, FLAGS.batch)
        return
    import numpy as np

    names = FLAGS.contestants or CONTESTANTS
    batches = [int(b) for b in FLAGS.batch_sizes]
    threads = FLAGS.threads or os.cpu_count()
    results = {(name, b): [] for b in batches for name in names}
    failures = {}
    peaks = []
    for round_index in range(FLAGS.rounds):
        peaks.append(common.matmul_peak("float32", threads))
        for batch in batches:
            for name in names:
                if (name, batch) in failures:
                    continue
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        f"--worker={name}",
                        f"--batch={batch}",
                        f"--seconds={FLAGS.seconds}",
                        f"--warmup={FLAGS.warmup}",
                        f"--threads={threads}",
                    ],
                    capture_output=True,
                    text=True,
                )
                result = common.worker_result(out.stdout)
                if result is None:
                    error = (out.stderr.strip().splitlines() or ["?"])[-1]
                    failures[(name, batch)] = error[:200]
                    print(f"{name} batch {batch} failed:\n{out.stderr[-2000:]}")
                    continue
                value = result["tokens_per_second"]
                results[(name, batch)].append(value)
                print(
                    f"round {round_index} {name} batch {batch}: "
                    f"{value:.0f} tokens/s",
                    flush=True,
                )

    peak = float(np.median(peaks))
    rows = []
    for batch in batches:
        measured = {
            name: np.array(results[(name, batch)])
            for name in names
            if results[(name, batch)]
        }
        peers = [n for n in measured if not n.startswith("ours")]
        for name in names:
            if name not in measured:
                reason = failures.get((name, batch), "not run")
                rows.append(f"| {batch} | {name} | failed: {reason} | | | |")
                continue
            values = measured[name]
            median = float(np.median(values))
            mfu = median * flops_per_token() / (peak * 1e9)
            ratios = []
            if name.startswith("ours"):
                for peer in peers:
                    if len(measured[peer]) == len(values):
                        paired = float(np.median(values / measured[peer]))
                        ratios.append(f"{peer}: {paired:.2f}×")
            rows.append(
                f"| {batch} | {name} | {median:.0f} "
                f"| {values.min():.0f}–{values.max():.0f} "
                f"| {100 * mfu:.0f}% | {', '.join(ratios)} |"
            )
    markdown = f"""## Inference throughput (issue 9)

Machine: {common.machine_description()}.
Command: `python benchmarks/inference.py --rounds={FLAGS.rounds}`.
Classifier on an L{CONFIG["num_layers"]}/H{CONFIG["hidden_dim"]}/A{CONFIG["num_heads"]}/I{CONFIG["intermediate_dim"]} encoder,
vocab {CONFIG["vocabulary_size"]}, sequence {SEQUENCE}, float32, random weights and ids (the same
in every process). {threads} threads per process, contestants in separate processes,
alternating, {FLAGS.rounds} rounds of at least {FLAGS.seconds:.0f} s timed after {FLAGS.warmup} warm-up calls.
Matmul peak measured in the same run (2048³, TensorFlow): fp32 {peak:.0f} GFLOP/s.
FLOPs/token: {flops_per_token() / 1e6:.1f} M (formula in the script's docstring).
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
