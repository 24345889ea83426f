"""Throughput on fixed shapes: keras-bert's training and inference against
keras-hub and transformers (PyTorch), and the pre-training input pipeline.

The model is `contestants/synthetic.py`'s (its docstring counts the FLOPs),
on the same random ids for every contestant, each in its own process with
the same threads, the processes alternating (A B C A B C ...) so that all
see the same load; each section states its settings and its figures.

`--race=train` (section "train_throughput"): a contestant is
`<framework>_<task>_<precision>[_xla]`: framework `ours`, `hub`, `torch`
or `torch_compile` (`torch.compile`, compiled in the warm-up); task `cls`
or `pretrain` (20 masked positions; keras-hub's `BertMaskedLM` has no NSP
head); precision `fp32` or `bf16` (PyTorch: `torch.autocast`, as
transformers' Trainer runs bf16); `_xla` compiles the step with
`jit_compile=True` (keras-hub's "auto" leaves XLA off on a CPU).

`--race=inference` (section "inference"): the classifier, float32: `ours`
(`BertClassifier.predict_on_batch`), `ours_xla` (`jit_compile=True`),
`hub` (keras-hub's `BertTextClassifier.predict_on_batch`), `torch`
(`BertForSequenceClassification` under `torch.inference_mode()`),
`torch_compile`.

`--race=input_pipeline` (section "input_pipeline"): sequences/s drawn from
the TFRecord pipeline (`pretraining_dataset_from_tfrecords`) over the
instances `create_pretraining_data`'s code writes, and from the text
pipeline with dynamic masking (`pretraining_dataset_from_text`), against
the training step that consumes them (`ours_pretrain_fp32` and `_bf16`).

`--race=ablation` (section "ablation_<task>_<precision>", written when
every variant ran): `--task`'s model built once per variant in one
process, each variant undoing one optimisation (the backbone's
`optimizations`, see `keras_bert.layers.optimizations`): `package` as
shipped; `keras_adamw`: Keras' AdamW instead of `training.AdamW`;
`keras_layers`: xla_fused_ops, closed_form_layer_norm, half_bits_dropout
and closed_form_gelu off (Keras' LayerNorm, dropout and GELU layers);
`fused_qkv_5d`: split_qkv_first off (heads split by one 5-D transpose of
the fused q|k|v); `unfused`: xla_fused_ops off; `full_last_block`:
query_positions_only off (the last block at every position).

    python benchmarks/throughput.py --race=train [--rounds=3] [--steps=10]
        [--contestants=ours_cls_fp32,hub_cls_fp32,...]
    python benchmarks/throughput.py --race=inference [--rounds=3]
    python benchmarks/throughput.py --race=input_pipeline [--files=400]
    python benchmarks/throughput.py --race=ablation --rounds=12 \
        [--precision=float32] [--task=classify] [--contestants=package,...]
"""

import glob
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import synthetic  # noqa: E402

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
PRECISIONS = {"fp32": "float32", "bf16": "mixed_bfloat16"}
LIBRARY = "/usr/share/doc/python3.11/html/_sources/library/*.rst.txt"
# Each ablation variant: the optimisations it switches off.
SWITCHED_OFF = {
    "package": (),
    "keras_adamw": (),
    "keras_layers": tuple(
        "xla_fused_ops closed_form_layer_norm half_bits_dropout "
        "closed_form_gelu".split()
    ),
    "fused_qkv_5d": ("split_qkv_first",),
    "unfused": ("xla_fused_ops",),
    "full_last_block": ("query_positions_only",),
}

RACES = ["train", "inference", "input_pipeline", "ablation"]
flags.DEFINE_enum("race", "train", RACES, "What to time.")
flags.DEFINE_integer("rounds", 3, "Alternating rounds of all contestants.")
flags.DEFINE_list("contestants", None, "Subset to run; default: all.")
flags.DEFINE_integer("threads", None, "Threads per process; default: cores.")
flags.DEFINE_integer("steps", 10, "train: timed steps per process.")
flags.DEFINE_integer("warmup", 3, "Untimed steps or calls per process.")
flags.DEFINE_float("seconds", 6.0, "inference: timed seconds per process.")
flags.DEFINE_list("batch_sizes", ["1", "32"], "inference: batch sizes.")
flags.DEFINE_integer("files", 400, "input_pipeline: python3.11-doc files.")
flags.DEFINE_integer("batches", 300, "input_pipeline: timed batches.")
flags.DEFINE_string("precision", "float32", "ablation: or mixed_bfloat16.")
flags.DEFINE_enum("task", "classify", ["classify", "pretrain"], "ablation.")
flags.DEFINE_string("worker", None, "Internal: run one contestant.")
flags.DEFINE_integer("batch", 1, "Internal: the inference worker's batch.")
FLAGS = flags.FLAGS


def parse(name):
    """`(framework, task, precision, xla)` of a training contestant."""
    framework, task, precision = name.removesuffix("_xla").rsplit("_", 2)
    task = "classify" if task == "cls" else task
    return framework, task, PRECISIONS[precision], name.endswith("_xla")


def run_worker(name):
    """Runs one contestant; prints its tokens/s."""
    threads = FLAGS.threads or os.cpu_count()
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


def run(name, race, *arguments):
    """A worker's tokens/s, or NaN (and its output printed) if it failed."""
    command = common.script_command(
        __file__, f"--worker={name}", f"--race={race}", *arguments,
        *common.flag_values("threads", "steps", "warmup", "seconds"),
    )  # fmt: skip
    value, _, output = common.run_worker(command, check=False)
    if value is None:
        print(f"{name} {arguments} failed:\n{output[-2000:]}")
    print(f"{name} {arguments}: {value} tokens/s", flush=True)
    return float("nan") if value is None else value


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
        rows.append(
            f"| {name} | {task} | {precision} | {np.nanmedian(values):.0f} "
            f"| {np.nanmin(values):.0f}–{np.nanmax(values):.0f} "
            f"| {flops / 1e6:.1f} M | {np.nanmedian(values) * flops / peak / 1e7:.0f}% "
            f"| {paired(name, results)} |"
        )
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

| contestant | task | precision | tokens/s (median) | range | FLOPs/token | MFU | paired ratio |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}
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
                rows.append(f"| {batch} | {name} | failed | | | |")
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
                f"| {batch} | {name} | {np.nanmedian(values):.0f} "
                f"| {np.nanmin(values):.0f}–{np.nanmax(values):.0f} "
                f"| {mfu:.0f}% | {', '.join(ratios)} |"
            )
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

| batch | contestant | tokens/s (median) | range | MFU | paired ratio |
|---|---|---|---|---|---|
{chr(10).join(rows)}
""",
    )


def pipeline_race():
    from keras_bert import BertTokenizer
    from keras_bert import data

    paths = sorted(glob.glob(LIBRARY))[: FLAGS.files]
    vocabulary = f"{common.minilm_dir()}/vocab.txt"
    tokenizer = BertTokenizer(vocabulary, lowercase=True)

    def creator():
        return data.PretrainingInstanceCreator(
            tokenizer, max_seq_length=synthetic.SEQUENCE,
            max_predictions_per_seq=synthetic.PREDICTIONS, dupe_factor=1,
            random_seed=12345,
        )  # fmt: skip

    def rate(dataset, warmup=20):
        iterator = iter(dataset)
        for _ in range(warmup):
            next(iterator)
        start, sequences = time.perf_counter(), 0
        for _ in range(FLAGS.batches):
            sequences += int(next(iterator)[0]["token_ids"].shape[0])
        return sequences / (time.perf_counter() - start)

    rates = {}
    with tempfile.TemporaryDirectory() as directory:
        shards = data.output_shard_paths(f"{directory}/train.tfrecord", 4)
        start = time.perf_counter()
        stats = data.write_pretraining_tfrecords(
            creator(), paths, shards, input_format="text", progress=False
        )
        creation_seconds = time.perf_counter() - start
        shards = ",".join(shards)
        rates["tfrecords"] = rate(
            data.pretraining_dataset_from_tfrecords(shards, 16, seed=0)
        )
    text = data.pretraining_dataset_from_text(
        ",".join(paths), creator(), 16, input_format="text"
    )
    rates["text, dynamic masking"] = rate(text)
    training = {
        PRECISIONS[p]: run(f"ours_pretrain_{p}", "train") / synthetic.SEQUENCE
        for p in PRECISIONS
    }
    rows = [
        f"| {name} | {value:,.0f} | "
        + ", ".join(f"{value / t:.0f}× {p}" for p, t in training.items())
        + " |"
        for name, value in rates.items()
    ] + [
        f"| training step, {p} (consumer) | {t:,.1f} | 1× |"
        for p, t in training.items()
    ]
    S, P = synthetic.SEQUENCE, synthetic.PREDICTIONS
    return (
        "input_pipeline",
        f"""## Pre-training input pipeline

Machine: {common.machine_description()}.
Command: `python benchmarks/throughput.py --race=input_pipeline --files={FLAGS.files} --batches={FLAGS.batches} --steps={FLAGS.steps}`.
Data: {len(paths)} files of the python3.11-doc library reference, read as
text (one document per file); {stats["instances"]:,} instances of sequence {S} with
{P} predictions, MiniLM's uncased vocabulary (30,522), written to 4
TFRecord shards in {creation_seconds:.0f} s. Pipelines: batch 16,
sequences/s drawn from the iterator over {FLAGS.batches} batches after 20
warm-up batches. Consumer: the pre-training step of
`--race=train` (L4/H512/A8/I2048, batch {synthetic.BATCH}, MLM + NSP),
{FLAGS.steps} timed steps, in the same run.

| source | sequences/s | pipeline / training step |
|---|---|---|
{chr(10).join(rows)}
""",
    )


def ablation_race():
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_bert.layers.optimizations import ALL

    tf.config.threading.set_intra_op_parallelism_threads(os.cpu_count())
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.config.set_dtype_policy(FLAGS.precision)
    variants = FLAGS.contestants or list(SWITCHED_OFF)
    if set(variants) - set(SWITCHED_OFF) or variants[0] != "package":
        raise app.UsageError(
            f"--contestants: 'package', then some of {list(SWITCHED_OFF)}."
        )
    steps = {}
    for variant in variants:
        model, dataset = synthetic.keras_training(
            "ours",
            FLAGS.task,
            optimizations=[n for n in ALL if n not in SWITCHED_OFF[variant]],
            keras_adamw=variant == "keras_adamw",
        )
        model.fit(dataset, steps_per_epoch=3, verbose=0)  # traces, warms up
        steps[variant] = (model.train_function, iter(dataset))
    seconds = {variant: [] for variant in variants}
    for _ in range(FLAGS.rounds):
        for variant, (train_function, iterator) in steps.items():
            start = time.perf_counter()
            [float(v) for v in train_function(iterator).values()]
            seconds[variant].append(time.perf_counter() - start)
    package = np.array(seconds["package"])
    tokens = synthetic.BATCH * synthetic.SEQUENCE
    rows = [
        f"| {v} | {1000 * np.median(s):.0f} | {tokens / np.median(s):.0f} "
        f"| {np.median(np.array(s) / package):.3f} |"
        for v, s in seconds.items()
    ]
    pretrain = FLAGS.task == "pretrain"
    section = f"ablation_{'pretrain_' * pretrain}{FLAGS.precision}"
    model = "The classifier"
    if pretrain:
        model = "The pre-training model (MLM + NSP, 20 predictions)"
    c = synthetic.CONFIG
    return (
        section * (not FLAGS.contestants),
        f"""## Ablation: what each optimisation is worth, {FLAGS.task}, {FLAGS.precision}

Machine: {common.machine_description()}.
Command: `python benchmarks/throughput.py --race=ablation --rounds={FLAGS.rounds} --precision={FLAGS.precision}{" --task=pretrain" * pretrain}`.
{model} of `--race=train` (L{c["num_layers"]}/H{c["hidden_dim"]}, batch {synthetic.BATCH}, sequence {synthetic.SEQUENCE},
AdamW), built once per variant in one process; each variant undoes one
optimisation (see the script's docstring); {FLAGS.rounds} rounds of one training
step per variant, alternating. "× package" is the median of the paired
step-time ratios variant / package (>1: the optimisation pays).

| variant | step ms (median) | tokens/s | × package |
|---|---|---|---|
{chr(10).join(rows)}
""",
    )


def main(argv):
    del argv
    if FLAGS.worker:
        return run_worker(FLAGS.worker)
    threads = FLAGS.threads or os.cpu_count()
    section, markdown = {
        "train": lambda: train_race(threads),
        "inference": lambda: inference_race(threads),
        "input_pipeline": pipeline_race,
        "ablation": ablation_race,
    }[FLAGS.race]()
    common.publish(section, markdown)  # a partial ablation: printed only


if __name__ == "__main__":
    app.run(main)
