"""benchmarks/throughput.py --race=bf16_curve: mixed_bfloat16's loss curve
against float32's seed noise."""

import time

from benchmarks import common
from benchmarks.throughput_races.shared import FLAGS
from benchmarks.throughput_races.shared import SCRIPT
from benchmarks.throughput_races.shared import classifier
from benchmarks.throughput_races.shared import sst2

CURVE_RUNS = [("float32", 0), ("float32", 1), ("mixed_bfloat16", 0)]


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
            SCRIPT, "--race=bf16_curve", f"--worker={precision},{seed}",
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
