"""Training throughput: keras-bert vs keras-hub vs Hugging Face PyTorch (eager
and `torch.compile`).

Every contestant trains the same architecture on the same synthetic batches
with the same thread settings, in its own process; the driver runs the
processes in alternation (A B C A B C ...) so that all of them see the same
machine load, and reports the median tokens/s, its spread, the paired
ratio ours/peer per round, and the model FLOPs utilisation (MFU) against a
matmul peak measured on this machine in the same run.

MFU counts the FLOPs each contestant actually computes (`flops_per_token`),
per sequence of S tokens, then divided by S: a training step costs 6 FLOPs
per weight per row it multiplies (forward 2, backward 4), so a block of
N_b weights (its matmul kernels, biases and LayerNorms) run on S rows
costs 6 × S × N_b, and its attention score and context matmuls 12 × S × S
× H (H hidden size). Every contestant runs its first L − 1 blocks on all S
rows. The last block differs:

  ours    `BertBackbone.outputs_at`: keys and values on all S rows (6 × S ×
          (2H² + 2H)), everything else (query, attention output,
          feed-forward, LayerNorms) on q rows only, q = 1 (`[CLS]`) to
          classify and 1 + P (P = 20 masked positions) to pre-train, and
          attention 12 × q × S × H;
  hub, torch (and torch_compile) the whole block on all S rows.

The pooler runs on `[CLS]` alone in all of them (6 × (H² + H) per
sequence). The pre-training heads add 6 × (H² + 2H + H·V + V) per decoded
row (transform, LayerNorm, tied decoder): ours and keras-hub decode the P
masked positions, transformers' `BertForPreTraining` all S positions (its
`cls.predictions` runs on the whole sequence; the loss ignores the rest);
the NSP head (ours and `BertForPreTraining`; keras-hub has none) 6 × 2 ×
(H + 1). Embedding lookups are not matmuls and are not counted.

    python benchmarks/train_throughput.py [--rounds=3] [--steps=10]

Writes the "train_throughput" section of benchmarks/RESULTS.md.
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
flags.DEFINE_integer("steps", 10, "Timed steps per process.")
flags.DEFINE_integer("warmup", 3, "Untimed steps per process.")
flags.DEFINE_string("worker", None, "Internal: run one contestant.")
flags.DEFINE_list(
    "contestants",
    None,
    "Subset to run; default all: see CONTESTANTS in the script.",
)
flags.DEFINE_integer("threads", None, "Threads per process; default: cores.")
FLAGS = flags.FLAGS

CONFIG = common.CONFIG

BATCH, SEQUENCE, PREDICTIONS = common.BATCH, common.SEQUENCE, common.PREDICTIONS

# name -> (framework, task, precision)
CONTESTANTS = {
    "ours_cls_fp32": ("ours", "classify", "float32"),
    "hub_cls_fp32": ("hub", "classify", "float32"),
    "torch_cls_fp32": ("torch", "classify", "float32"),
    "torch_compile_cls_fp32": ("torch_compile", "classify", "float32"),
    "ours_cls_bf16": ("ours", "classify", "mixed_bfloat16"),
    "hub_cls_bf16": ("hub", "classify", "mixed_bfloat16"),
    "torch_cls_bf16": ("torch", "classify", "mixed_bfloat16"),
    "torch_compile_cls_bf16": ("torch_compile", "classify", "mixed_bfloat16"),
    "ours_pretrain_fp32": ("ours", "pretrain", "float32"),
    "hub_pretrain_fp32": ("hub", "pretrain", "float32"),
    "torch_pretrain_fp32": ("torch", "pretrain", "float32"),
    "torch_compile_pretrain_fp32": ("torch_compile", "pretrain", "float32"),
    "ours_pretrain_bf16": ("ours", "pretrain", "mixed_bfloat16"),
    "hub_pretrain_bf16": ("hub", "pretrain", "mixed_bfloat16"),
    "torch_pretrain_bf16": ("torch", "pretrain", "mixed_bfloat16"),
    "torch_compile_pretrain_bf16": (
        "torch_compile",
        "pretrain",
        "mixed_bfloat16",
    ),
    # XLA (`jit_compile=True`), measured to decide whether it pays, and
    # keras-hub with it too (its compile's "auto" leaves XLA off on a CPU,
    # though its fixed 128-token shapes are what XLA compiles best).
    "ours_cls_fp32_xla": ("ours", "classify", "float32"),
    "ours_pretrain_fp32_xla": ("ours", "pretrain", "float32"),
    "hub_cls_fp32_xla": ("hub", "classify", "float32"),
    "hub_pretrain_fp32_xla": ("hub", "pretrain", "float32"),
    "hub_cls_bf16_xla": ("hub", "classify", "mixed_bfloat16"),
    "hub_pretrain_bf16_xla": ("hub", "pretrain", "mixed_bfloat16"),
}


def flops_per_token(framework, task):
    """Training FLOPs per token that `framework` computes for `task`
    (see the module docstring): per sequence, divided by its length."""
    H, V = CONFIG["hidden_dim"], CONFIG["vocabulary_size"]
    S, P = SEQUENCE, PREDICTIONS
    block = common.encoder_parameters() // CONFIG["num_layers"]
    key_value = 2 * H * H + 2 * H
    full_block = 6 * S * block + 12 * S * S * H
    if framework == "ours":
        rows = 1 if task == "classify" else 1 + P
        last_block = (
            6 * S * key_value
            + 6 * rows * (block - key_value)
            + 12 * rows * S * H
        )
    else:
        last_block = full_block
    flops = (CONFIG["num_layers"] - 1) * full_block + last_block
    flops += 6 * (H * H + H)  # pooler, on [CLS]
    if task == "classify":
        flops += 6 * 2 * (H + 1)
    else:
        decoded = S if framework.startswith("torch") else P
        flops += 6 * (H * H + 2 * H + H * V + V) * decoded
        if framework != "hub":
            flops += 6 * 2 * (H + 1)  # next-sentence head
    return flops / S


def _keras_worker(framework, task, precision, threads, jit_compile=False):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.config.set_dtype_policy(precision)
    data = common.synthetic_batch()
    features = {
        k: data[k] for k in ("token_ids", "segment_ids", "padding_mask")
    }
    # Each library's own AdamW: keras-hub trains with Keras' AdamW, ours
    # with keras_bert.training.AdamW (the same math, fused per variable).
    if framework == "ours":
        import keras_bert

        optimizer = keras_bert.training.AdamW(1e-5, weight_decay=0.01)
    else:
        optimizer = keras.optimizers.AdamW(1e-5, weight_decay=0.01)
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if framework == "ours":
        import keras_bert

        backbone = keras_bert.BertBackbone(**CONFIG)
        if task == "classify":
            model = keras_bert.BertClassifier(backbone, num_classes=2)
            model.compile(
                optimizer=optimizer, loss=sparse, jit_compile=jit_compile
            )
            y = data["labels"]
        else:
            model = keras_bert.BertMaskedLM(backbone)
            model.compile(optimizer=optimizer, jit_compile=jit_compile)
            features["masked_positions"] = data["masked_positions"]
            y = {"mlm_logits": data["masked_ids"], "nsp_logits": data["labels"]}
    else:
        import keras_hub

        backbone = keras_hub.models.BertBackbone(**CONFIG)
        if task == "classify":
            model = keras_hub.models.BertTextClassifier(
                backbone, num_classes=2, preprocessor=None
            )
            model.compile(
                optimizer=optimizer, loss=sparse, jit_compile=jit_compile
            )
            y = data["labels"]
        else:
            # keras-hub's BertMaskedLM has no next-sentence head.
            model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
            model.compile(
                optimizer=optimizer, loss=sparse, jit_compile=jit_compile
            )
            features = {
                "token_ids": features["token_ids"],
                "segment_ids": features["segment_ids"],
                "padding_mask": features["padding_mask"],
                "mask_positions": data["masked_positions"],
            }
            y = data["masked_ids"]
    dataset = tf.data.Dataset.from_tensors((features, y)).repeat()
    model.fit(dataset, steps_per_epoch=FLAGS.warmup, verbose=0)
    ends = []

    class StepTimes(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if not ends:
                ends.append(time.perf_counter())

        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())

    model.fit(
        dataset, steps_per_epoch=FLAGS.steps, verbose=0, callbacks=[StepTimes()]
    )
    return [b - a for a, b in zip(ends, ends[1:])]


def _torch_worker(task, precision, threads, compiled=False):
    import torch
    import transformers

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    config = common.hf_bert_config()
    data = {
        k: torch.tensor(v).long() for k, v in common.synthetic_batch().items()
    }
    inputs = dict(
        input_ids=data["token_ids"],
        token_type_ids=data["segment_ids"],
        attention_mask=data["padding_mask"],
    )
    if task == "classify":
        model = transformers.BertForSequenceClassification(config)
        inputs["labels"] = data["labels"]
    else:
        model = transformers.BertForPreTraining(config)
        labels = torch.full_like(data["token_ids"], -100)
        labels.scatter_(1, data["masked_positions"], data["masked_ids"])
        inputs["labels"] = labels
        inputs["next_sentence_label"] = data["labels"]
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=1e-5, weight_decay=0.01
    )

    # `torch.compile` compiles the model's forward and backward (Inductor,
    # C++ on a CPU) on the first warm-up step; the optimizer stays eager.
    forward = torch.compile(model) if compiled else model

    # bf16: autocast, as transformers' Trainer does with `bf16=True` on CPU.
    autocast = torch.autocast(
        "cpu", dtype=torch.bfloat16, enabled=precision == "mixed_bfloat16"
    )

    def step():
        optimizer.zero_grad()
        with autocast:
            loss = forward(**inputs).loss
        loss.backward()
        optimizer.step()

    for _ in range(FLAGS.warmup):
        step()
    times = []
    for _ in range(FLAGS.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def run_worker(name):
    framework, task, precision = CONTESTANTS[name]
    threads = FLAGS.threads or os.cpu_count()
    if framework.startswith("torch"):
        step_seconds = _torch_worker(
            task, precision, threads, compiled=framework == "torch_compile"
        )
    else:
        step_seconds = _keras_worker(
            framework, task, precision, threads, name.endswith("_xla")
        )
    # The median step: robust to a slow first step or a stray hiccup, and
    # free of fit()'s start and end overheads.
    median = sorted(step_seconds)[len(step_seconds) // 2]
    tokens_per_second = BATCH * SEQUENCE / median
    common.print_result({"name": name, "tokens_per_second": tokens_per_second})


def main(argv):
    del argv
    if FLAGS.worker:
        run_worker(FLAGS.worker)
        return
    import numpy as np

    names = FLAGS.contestants or list(CONTESTANTS)
    threads = FLAGS.threads or os.cpu_count()
    results = {name: [] for name in names}
    peaks = {"float32": [], "bfloat16": []}
    loads = []
    for round_index in range(FLAGS.rounds):
        loads.append(os.getloadavg()[0])
        for dtype in peaks:
            peaks[dtype].append(common.matmul_peak(dtype, threads))
        for name in names:
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    f"--worker={name}",
                    f"--steps={FLAGS.steps}",
                    f"--warmup={FLAGS.warmup}",
                    f"--threads={threads}",
                ],
                capture_output=True,
                text=True,
            )
            result = common.worker_result(out.stdout)
            if result is None:
                print(f"{name} failed:\n{out.stderr[-2000:]}")
                results[name].append(float("nan"))
                continue
            value = result["tokens_per_second"]
            results[name].append(value)
            print(
                f"round {round_index} {name}: {value:.0f} tokens/s", flush=True
            )

    peak = {k: float(np.median(v)) for k, v in peaks.items()}
    rows = []
    for name in names:
        framework, task, precision = CONTESTANTS[name]
        values = np.array(results[name])
        median = float(np.nanmedian(values))
        peak_key = "float32" if precision == "float32" else "bfloat16"
        flops = flops_per_token(framework, task)
        mfu = median * flops / (peak[peak_key] * 1e9)
        ratios = []
        for peer in ("hub", "torch", "torch_compile", "hub_xla"):
            peer_name = name.replace("ours", peer.removesuffix("_xla"))
            if peer.endswith("_xla"):
                peer_name += "_xla"
            if (
                framework == "ours"
                and (not name.endswith("_xla") or peer == "hub_xla")
                and peer_name in results
            ):
                paired = values / np.array(results[peer_name])
                label = "hub XLA" if peer == "hub_xla" else peer
                ratios.append(f"{label}: {np.nanmedian(paired):.2f}×")
        if name.endswith("_xla"):
            plain = name[: -len("_xla")]
            if plain in results:
                paired = values / np.array(results[plain])
                ratios.append(f"without XLA: {np.nanmedian(paired):.2f}×")
        elif framework == "ours" and precision != "float32":
            fp32 = name.replace("bf16", "fp32")
            if fp32 in results:
                paired = values / np.array(results[fp32])
                ratios.append(f"own fp32: {np.nanmedian(paired):.2f}×")
        rows.append(
            f"| {name} | {task} | {precision} | {median:.0f} "
            f"| {np.nanmin(values):.0f}–{np.nanmax(values):.0f} "
            f"| {flops / 1e6:.1f} M | {100 * mfu:.0f}% | {', '.join(ratios)} |"
        )
    subset = (
        "" if FLAGS.contestants is None else f" --contestants={','.join(names)}"
    )
    load = ", ".join(f"{value:.1f}" for value in loads)
    if max(loads) > (os.cpu_count() or 1):
        sharing = (
            "more runnable jobs than cores: other jobs shared the machine,"
            " so the\npaired ratios (contestants alternating in one run) "
            "are the figures to\ntrust, not the absolute rates."
        )
    else:
        sharing = (
            "no more runnable jobs than cores (only this benchmark's own "
            "processes);\nthe paired ratios (contestants alternating in "
            "one run) are still the\nfigures to trust over the absolute "
            "rates."
        )
    markdown = f"""## Training throughput (issue 9)

Machine: {common.machine_description()}.
Command: `python benchmarks/train_throughput.py --rounds={FLAGS.rounds} --steps={FLAGS.steps}{subset}`.
Load average (1 min, `os.getloadavg`) at the start of each round: {load};
{sharing}
Model L{CONFIG["num_layers"]}/H{CONFIG["hidden_dim"]}/A{CONFIG["num_heads"]}/I{CONFIG["intermediate_dim"]},
vocab {CONFIG["vocabulary_size"]}, sequence {SEQUENCE}, batch {BATCH}, AdamW (lr 1e-5, decay 0.01; each
library's own: `keras_bert.training.AdamW` for ours, Keras' `AdamW` for keras-hub,
`torch.optim.AdamW` for PyTorch); the pre-training
step predicts {PREDICTIONS} tokens per sequence (keras-hub's BertMaskedLM has no NSP head;
ours and `BertForPreTraining` do); PyTorch's bf16 rows use
`torch.autocast("cpu", torch.bfloat16)`, as transformers' Trainer does; `torch_compile` rows run the
same PyTorch model through `torch.compile` (compiled during warm-up); `_xla` rows compile the
training step with `jit_compile=True` (keras-hub's default "auto" leaves XLA off on a CPU). {threads} threads per process, contestants in
separate processes, alternating, {FLAGS.rounds} rounds × {FLAGS.steps} timed steps after {FLAGS.warmup} warm-up steps;\na process's figure is its median step time (each step timed on its own).
Matmul peak measured in the same run (2048³, TensorFlow): fp32 {peak["float32"]:.0f} GFLOP/s,
bf16 {peak["bfloat16"]:.0f} GFLOP/s. MFU counts the FLOPs each contestant computes
(column "FLOPs/token"; formula in the script's docstring): ours runs its last block's queries,
feed-forward and LayerNorms only on `[CLS]` (and the {PREDICTIONS} masked positions), keras-hub
and PyTorch on all {SEQUENCE} positions, and transformers' `BertForPreTraining` decodes all
{SEQUENCE} positions through its masked-LM head where ours and keras-hub decode only the masked ones.
Tokens/s counts the {SEQUENCE} input tokens of every sequence for everyone.
Ratios are medians of per-round ratios ours/peer (>1: ours faster).

| contestant | task | precision | tokens/s (median) | range | FLOPs/token | MFU | paired ratio |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    common.update_results("train_throughput", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
