"""benchmarks/throughput.py --race=recipe_steps: the GLUE recipe's step,
as shipped and in variants."""

import time

from absl import app

from benchmarks import common
from benchmarks.throughput_races.shared import FLAGS
from benchmarks.throughput_races.shared import alternating_windows
from benchmarks.throughput_races.shared import classifier
from benchmarks.throughput_races.shared import sst2

STEP_VARIANTS = tuple(
    "recipe ungrouped full_last_block bucket_16 bucket_32 bucket_64 "
    "unfused_32".split()
)


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
