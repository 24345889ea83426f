"""benchmarks/finetune_job.py --race=profile: the two timed workers, the
job that runs one, and the tables."""

import math
import os
import statistics
import time

from benchmarks import common
from benchmarks.finetune.jobs import FLAGS
from benchmarks.finetune.jobs import RACES
from benchmarks.finetune.jobs import SCRIPT
from benchmarks.finetune.jobs import TORCH_SETTINGS
from benchmarks.finetune.peers import grouped_order
from benchmarks.finetune.peers import padded_batch
from benchmarks.finetune.peers import torch_predict
from benchmarks.finetune.peers import torch_start

# Batch widths (tokens per row) grouped for --race=profile's step table.
WIDTH_BINS = ((1, 16), (17, 24), (25, 32), (33, 48), (49, 128))


def trace_window(steps, trace_steps):
    """`(first, stop)`: the `trace_steps` steps in the middle of an epoch of
    `steps` (none if the epoch is too short to leave steps around it)."""
    trace_steps = min(trace_steps, max(0, steps - 2))
    first = (steps - trace_steps) // 2
    return first, first + trace_steps


def op_table(rows, top):
    """`[(op type, seconds, share)]` of the `top` op types by self time, and
    the traced total, from `(op type, self seconds)` pairs (idle excluded)."""
    totals = {}
    for kind, seconds in rows:
        if kind != "IDLE":
            totals[kind] = totals.get(kind, 0.0) + seconds
    total = sum(totals.values())
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:top]
    return [(k, s, s / total if total else 0.0) for k, s in ranked], total


def tf_op_rows(logdir):
    """`(op type, self seconds)` of every op TensorFlow's profiler traced
    into `logdir` (its `framework_op_stats` tool)."""
    import glob
    import json

    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

    paths = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
    data, ok = _pywrap_profiler_plugin.xspace_to_tools_data(
        paths, "framework_op_stats", {}
    )
    if not ok:
        raise RuntimeError(f"No op statistics from {paths}: {data[:300]}")
    table = json.loads(data)[0]
    ids = [column["id"] for column in table["cols"]]
    kind, self_time = ids.index("type"), ids.index("total_self_time")
    return [
        (row["c"][kind]["v"], row["c"][self_time]["v"] / 1e6)
        for row in table["rows"]
    ]


def run_profile_recipe(start):
    """--race=profile: the recipe's work, timed: the record."""
    import tempfile

    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.fine_tuning import load_task_model
    from keras_bert.fine_tuning.glue import GlueFineTuning
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import training_defaults

    phases = {"imports": time.time() - start}

    def build_model(task):
        model, tokenizer = load_task_model(
            keras_bert.BertClassifier, init_checkpoint=common.minilm_dir(),
            sequence_length=128, num_classes=task.num_classes,
        )  # fmt: skip
        return model, keras_bert.BertPreprocessor(tokenizer, 128)

    clock = time.time()
    if FLAGS.precision != "float32":
        # As the recipe's --mixed_precision does (this worker's own process).
        keras.mixed_precision.set_global_policy(FLAGS.precision)
    keras.utils.set_random_seed(FLAGS.seed)
    task = GlueFineTuning(
        "sst2", build_model, data_dir=FLAGS.glue_dir, eval_batch_size=64,
        group_by_length=True,
    )  # fmt: skip
    task.load_data()
    model, _ = task.build_model()
    phases["model"] = time.time() - clock
    clock = time.time()
    examples = int(task.num_train_examples)
    task._packed()  # the tokenizer's pass over every split
    phases["tokenize"] = time.time() - clock
    epoch_steps = math.ceil(examples / 32)
    steps = min(FLAGS.steps or epoch_steps, epoch_steps)
    defaults = training_defaults(model.TASK_NAME)
    model.compile(
        optimizer=defaults.create_optimizer(
            WarmupLinearDecay(2e-5, epoch_steps, int(0.1 * epoch_steps))
        )
    )
    # The pipeline alone: the epoch's batches, nothing training.
    widths, input_seconds = [], []
    batches = iter(task.train_dataset(32, FLAGS.seed, 0, 1))
    for _ in range(steps):
        clock = time.perf_counter()
        inputs, _ = next(batches)
        input_seconds.append(time.perf_counter() - clock)
        widths.append(int(inputs["token_ids"].shape[1]))
    first, stop = trace_window(steps, FLAGS.trace_steps)
    logdir = tempfile.mkdtemp()
    marks = {"begin": [], "end": [], "cpu_begin": [], "cpu_end": []}
    profiler_seconds = []  # starting and stopping it, outside the steps

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == first:
                clock = time.perf_counter()
                tf.profiler.experimental.start(logdir)
                profiler_seconds.append(time.perf_counter() - clock)
            marks["begin"].append(time.perf_counter())
            marks["cpu_begin"].append(time.process_time())

        def on_train_batch_end(self, batch, logs=None):
            marks["end"].append(time.perf_counter())
            marks["cpu_end"].append(time.process_time())
            if batch == stop - 1:
                clock = time.perf_counter()
                tf.profiler.experimental.stop()
                profiler_seconds.append(time.perf_counter() - clock)

    clock = time.time()
    model.fit(
        task.train_dataset(32, FLAGS.seed, 0, 1), steps_per_epoch=steps,
        epochs=1, callbacks=[StepTimer()], shuffle=False, verbose=0,
    )  # fmt: skip
    # The profiler's start and stop are not the job's.
    phases["train"] = time.time() - clock - sum(profiler_seconds)
    clock = time.time()
    metrics = task.evaluate(model)
    phases["evaluate"] = time.time() - clock
    step_seconds = [b - a for a, b in zip(marks["begin"], marks["end"])]
    step_cpu = [b - a for a, b in zip(marks["cpu_begin"], marks["cpu_end"])]
    rows, traced = op_table(tf_op_rows(logdir), 10_000)
    return {
        "phases": phases,
        "widths": widths,
        "step_seconds": step_seconds,
        "step_cpu_seconds": step_cpu,
        "input_seconds": input_seconds,
        "trace_window": [first, stop],
        "traced_op_seconds": traced,
        "profiler_seconds": sum(profiler_seconds),
        "ops": rows,
        "dev_accuracy": float(metrics["validation"]["accuracy"]),
        "num_train_examples": examples,
        "precision": FLAGS.precision,
    }


def run_profile_torch(start):
    """--race=profile: torch_grouped's loop, timed part by part: the
    record."""
    import numpy as np
    import torch
    import transformers

    from benchmarks.contestants import torch_loop

    phases = {"imports": time.time() - start}
    settings = TORCH_SETTINGS
    model, train, labels, dev, dev_labels = torch_start(phases)
    lengths = [len(ids) for ids in train["input_ids"]]
    order = grouped_order(
        lengths, 32, torch.Generator().manual_seed(FLAGS.seed)
    )
    epoch_steps = math.ceil(len(lengths) / 32)
    steps = min(FLAGS.steps or epoch_steps, epoch_steps)
    optimizer = torch_loop.adamw(
        model, settings["learning_rate"], settings["weight_decay"],
        (settings["adam_beta_1"], settings["adam_beta_2"]),
        settings["adam_epsilon"],
    )  # fmt: skip
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, int(settings["warmup_fraction"] * epoch_steps), epoch_steps
    )
    first, stop = trace_window(steps, FLAGS.trace_steps)
    parts = {k: [] for k in ("input", "forward", "backward", "optimizer")}
    widths, step_cpu, profiler = [], [], None
    model.train()
    profiler_seconds = 0.0  # starting and stopping it, outside the steps
    clock = time.time()
    for k in range(steps):
        if k == first:
            profiler_clock = time.perf_counter()
            profiler = torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU]
            )
            profiler.__enter__()
            profiler_seconds += time.perf_counter() - profiler_clock
        marks, cpu = [time.perf_counter()], time.process_time()
        batch = padded_batch(train, order[32 * k : 32 * (k + 1)], labels)
        widths.append(int(batch["input_ids"].shape[1]))
        marks.append(time.perf_counter())
        with torch_loop.autocast(FLAGS.precision):
            loss = model(**batch).loss
        marks.append(time.perf_counter())
        torch_loop.step(
            model, optimizer, loss, settings["clipnorm"], scheduler,
            after_backward=lambda: marks.append(time.perf_counter()),
        )  # fmt: skip
        marks.append(time.perf_counter())
        step_cpu.append(time.process_time() - cpu)
        for name, a, b in zip(parts, marks, marks[1:]):
            parts[name].append(b - a)
        if k == stop - 1:
            profiler_clock = time.perf_counter()
            profiler.__exit__(None, None, None)
            profiler_seconds += time.perf_counter() - profiler_clock
    phases["train"] = time.time() - clock - profiler_seconds
    clock = time.time()
    predicted = torch_predict(model, dev, FLAGS.precision)
    phases["evaluate"] = time.time() - clock
    averages = profiler.key_averages() if profiler else []
    rows, traced = op_table(
        [(e.key, e.self_cpu_time_total / 1e6) for e in averages], 10_000
    )
    return {
        "phases": phases,
        "widths": widths,
        "step_seconds": [sum(p) for p in zip(*parts.values())],
        "step_parts": parts,
        "step_cpu_seconds": step_cpu,
        "trace_window": [first, stop],
        "traced_op_seconds": traced,
        "profiler_seconds": profiler_seconds,
        "ops": rows,
        "dev_accuracy": float(np.mean(predicted == np.asarray(dev_labels))),
        "num_train_examples": len(lengths),
        "precision": FLAGS.precision,
    }


def profile_job(contestant, k):
    """--race=profile: one contestant's profile in a fresh process."""
    context = common.job_context()
    cpu_before = common.children_cpu_seconds()
    command = common.script_command(
        SCRIPT, f"--worker=profile_{contestant}", f"--seed={k}",
        *common.flag_values("glue_dir", "steps", "trace_steps", "precision"),
    )  # fmt: skip
    record, seconds, _ = common.run_worker(command)
    return dict(
        record, total_seconds=round(seconds, 1),
        total_cpu_seconds=round(common.children_cpu_seconds() - cpu_before, 1),
        load_average_end=round(os.getloadavg()[0], 1), **context,
    )  # fmt: skip


def untraced(record):
    """`(widths, step seconds)` of a record's steps outside the traced
    window (the profiler slows the steps it traces)."""
    first, stop = record["trace_window"]
    keep = [
        k for k in range(len(record["step_seconds"])) if not first <= k < stop
    ]
    return (
        [record["widths"][k] for k in keep],
        [record["step_seconds"][k] for k in keep],
    )


def width_rows(records, names):
    """Per width bin: steps and median step ms of each contestant, and
    the ratio of PyTorch's to ours."""
    rows = []
    for low, high in WIDTH_BINS:
        cells, medians = [], {}
        for name in names:
            widths, seconds = untraced(records[name])
            chosen = [s for w, s in zip(widths, seconds) if low <= w <= high]
            if chosen:
                medians[name] = statistics.median(chosen) * 1000
                cells += [len(chosen), f"{medians[name]:.0f}"]
            else:
                cells += [0, "—"]
        ratio = "—"
        if len(medians) == 2 and all(medians.values()):
            ratio = f"{medians[names[1]] / medians[names[0]]:.2f}"
        rows.append([f"{low}-{high}", *cells, ratio])
    return rows


def profiler_note(records):
    """What the train phases leave out: the profilers' start and stop
    (records before this was measured: nothing left out)."""
    if not all("profiler_seconds" in r for r in records.values()):
        return ""
    seconds = ", ".join(
        f"{name} {r['profiler_seconds']:.1f} s" for name, r in records.items()
    )
    return (
        "The train phase leaves out starting and stopping the profilers "
        f"around the traced steps ({seconds}). "
    )


def precision_note(record):
    """How a record's two sides computed (records before the flag: float32)."""
    if record.get("precision", "float32") == "float32":
        return "float32"
    return (
        f"{record['precision']} (ours: Keras' policy; PyTorch: forward "
        "passes under torch.autocast to bfloat16)"
    )


def profile_summary(records, top_ops=12):
    """The RESULTS.md section from the records (`{(contestant, round):
    record}`): the last round both contestants ran, `top_ops` op types
    of each."""
    names = RACES["profile"][1].split()
    rounds = common.paired_rounds(records, names)
    if not rounds:
        raise SystemExit("No round with both contestants: run them.")
    k = rounds[-1]
    by_name = {name: records[(name, k)] for name in names}
    ours, peer = (by_name[name] for name in names)
    phase_names = ["imports", "model", "tokenize", "train", "evaluate"]
    phase_rows = []
    totals = {
        "total job": "total_seconds",
        "total job CPU": "total_cpu_seconds",
    }
    for phase in phase_names + list(totals):
        if phase in totals and not all(
            totals[phase] in r for r in (ours, peer)
        ):
            continue
        values = [
            r[totals[phase]] if phase in totals else r["phases"][phase]
            for r in (ours, peer)
        ]
        ratio = f"{values[1] / values[0]:.2f}"
        phase_rows.append([phase, *(f"{v:.1f}" for v in values), ratio])
    steps = {name: untraced(r)[1] for name, r in by_name.items()}

    def cpu_of(record):
        first, stop = record["trace_window"]
        return [
            s
            for k, s in enumerate(record.get("step_cpu_seconds", []))
            if not first <= k < stop
        ]

    step_rows = [
        ["steps", *(len(s) for s in steps.values())],
        ["sum of step times (s)", *(f"{sum(s):.1f}" for s in steps.values())],
        ["sum of step CPU times (s; all threads)"]
        + [
            f"{sum(cpu_of(r)):.1f}" if cpu_of(r) else "—"
            for r in by_name.values()
        ],
        ["median step (ms)"]
        + [f"{statistics.median(s) * 1000:.0f}" for s in steps.values()],
        ["first step (ms; tracing and compiling)"]
        + [f"{r['step_seconds'][0] * 1000:.0f}" for r in (ours, peer)],
        ["input pipeline alone, the same batches (s)"]
        + [f"{sum(ours['input_seconds']):.1f}"]
        + [
            f"{sum(peer['step_parts']['input']):.1f} (padding, inside the steps)"
        ],
    ] + [
        [f"PyTorch {part}, all steps (s)", ""]
        + [f"{sum(peer['step_parts'][part]):.1f}"]
        for part in ("forward", "backward", "optimizer")
    ]
    op_tables = []
    for name, record in by_name.items():
        first, stop = record["trace_window"]
        op_tables += [
            "",
            f"{name}: op types by self time over steps {first}-{stop - 1} "
            f"(traced {record['traced_op_seconds']:.2f} s of op time):",
            "",
            *common.table(
                ["op type", "self s", "share"],
                [
                    [kind, f"{seconds:.2f}", f"{share:.1%}"]
                    for kind, seconds, share in record["ops"][:top_ops]
                ],
            ),
        ]
    loads = [
        f"{name} {r['load_average']}→{r['load_average_end']}"
        for name, r in by_name.items()
    ]
    commands, *context = common.context_note(records)
    return [
        "## Where the SST-2 fine-tuning job's time goes: recipe vs a "
        "length-grouped PyTorch loop",
        "",
        f"{commands} (what each side runs: the script's docstring). Round "
        f"{k} (seed {k}): {len(ours['step_seconds'])} steps of 1 epoch "
        f"of {ours['num_train_examples']} SST-2 "
        "training examples, MiniLM-L6-H384, batch 32, sequence 128, lr "
        f"2e-5, {precision_note(ours)}; dev accuracy recipe {ours['dev_accuracy']:.4f}, "
        f"torch_grouped {peer['dev_accuracy']:.4f}. {profiler_note(by_name)}"
        "Load average (1 min) "
        f"at each job's start and end: {common.listed(loads)}.",
        *context,
        "",
        *common.table(
            ["phase (s)", *names, "torch_grouped / recipe"], phase_rows
        ),
        "",
        *common.table(["steps outside the traced window", *names], step_rows),
        "",
        *common.table(
            ["batch width (tokens)", "recipe steps", "recipe median ms"]
            + ["torch_grouped steps", "torch_grouped median ms"]
            + ["torch_grouped / recipe"],
            width_rows(by_name, names),
        ),
        *op_tables,
    ]
