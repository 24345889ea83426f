"""The GLUE recipe's own training step, against the ways to run fast kernels.

What `python recipes/glue.py --task=sst2` runs at each step (real MiniLM
weights, SST-2 train from `../shared/glue`, sequence 128, batch 32,
`OneDeviceStrategy`, BERT's AdamW with warmup and decay), as the recipe
runs it and in the variants below, in one process: each variant is its
own model with the same weights on the same batches in the same order,
timed in alternating windows (A B C A B C ...) under the same load.

  recipe           as shipped: like-length batches (`--group_by_length`),
                   each cut to its longest row, Keras' train function,
                   the last block on [CLS] only (`BertBackbone.outputs_at`).
  ungrouped        plainly shuffled batches (`--nogroup_by_length`).
  full_last_block  the last block at every position (optimisation
                   `query_positions_only` off).
  bucket_16, bucket_32, bucket_64
                   the recipe's batches padded up to a multiple of 16, 32
                   or 64 (`keras_bert.data.trim_batch`), the step traced
                   once per shape (`training.trace_per_shape`), so that the
                   XLA-fused element-wise kernels run.
  unfused_32       `bucket_32`'s batches with Keras' own train function.
  lora             (asked for with `--variants=recipe,lora`) the recipe
                   with `--lora_rank=8`.

Reported: each variant's median step time and the paired ratio "variant /
recipe" of each window's step time (>1: the recipe's way is faster).

    python benchmarks/recipe_steps.py [--rounds=8] [--window=10]
        [--variants=recipe,bucket_32,...]

Writes the "recipe_steps" section of benchmarks/RESULTS.md (when all the
default variants ran).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

VARIANTS = (
    "recipe",
    "ungrouped",
    "full_last_block",
    "bucket_16",
    "bucket_32",
    "bucket_64",
    "unfused_32",
)
flags.DEFINE_integer("rounds", 8, "Alternating rounds of timed windows.")
flags.DEFINE_integer("window", 10, "Training steps per timed window.")
flags.DEFINE_integer("warmup", 40, "Untimed steps first (every shape traced).")
flags.DEFINE_list("variants", None, "Variants to time; default: all.")
flags.DEFINE_string(
    "glue_dir", os.path.join(common.SHARED, "glue"), "GLUE data directory."
)
FLAGS = flags.FLAGS


def build(variant, features, labels, strategy, total_steps):
    """The variant's model (compiled as `run_fine_tuning` compiles it) and
    an iterator over its batches."""
    import keras_bert
    from keras_bert.fine_tuning.glue.dataset import glue_dataset
    from keras_bert.layers.optimizations import ALL
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw
    from keras_bert.training import support_distributed_fit
    from keras_bert.training import trace_per_shape

    multiple = {"bucket_16": 16, "bucket_32": 32, "bucket_64": 64}.get(
        variant, 32 if variant == "unfused_32" else True
    )
    skipped = "query_positions_only" if variant == "full_last_block" else None
    with strategy.scope():
        model = keras_bert.BertClassifier.from_checkpoint(
            common.minilm_dir(),
            num_classes=2,
            optimizations=[n for n in ALL if n != skipped],
        )
        if variant == "lora":
            model.backbone.enable_lora(8)
        schedule = WarmupLinearDecay(2e-5, total_steps, total_steps // 10)
        model.compile(optimizer=create_adamw(schedule))
    if variant.startswith("bucket_"):
        trace_per_shape(model)
    support_distributed_fit(model)
    dataset = glue_dataset(
        features,
        labels,
        32,
        shuffle=True,
        seed=0,
        first_epoch=0,
        num_epochs=100,
        trim_padding=multiple,
        group_by_length=variant != "ungrouped",
    )
    model.make_train_function()
    return model, iter(strategy.experimental_distribute_dataset(dataset))


def main(argv):
    del argv
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert.fine_tuning.glue.dataset import preprocess_glue
    from keras_bert.fine_tuning.glue.loader import load_glue

    variants = FLAGS.variants or list(VARIANTS)
    if set(variants) - set(VARIANTS + ("lora",)):
        raise app.UsageError(
            f"--variants must be among {VARIANTS + ('lora',)}. "
            f"Received: {variants}"
        )
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir()),
        sequence_length=128,
    )
    train = load_glue("sst2", "train", FLAGS.glue_dir)
    features = preprocess_glue("sst2", train, preprocessor)
    total_steps = FLAGS.warmup + FLAGS.rounds * FLAGS.window
    built = {
        v: build(v, features, train["label"], strategy, total_steps)
        for v in variants
    }
    for variant, (model, iterator) in built.items():
        start = time.perf_counter()
        for _ in range(FLAGS.warmup):
            model.train_function(iterator)
        print(f"{variant}: warm-up {time.perf_counter() - start:.1f} s")
    times = {v: [] for v in variants}
    for round_index in range(FLAGS.rounds):
        for variant, (model, iterator) in built.items():
            start = time.perf_counter()
            for _ in range(FLAGS.window):
                logs = model.train_function(iterator)
            float(logs["loss"])  # the window's steps have all run
            times[variant].append((time.perf_counter() - start) / FLAGS.window)
        print(
            f"round {round_index}: "
            + ", ".join(f"{v} {times[v][-1] * 1e3:.0f} ms" for v in variants)
        )
    rows = [
        "| variant | median step (ms) | examples/s | paired ratio to recipe "
        "(median, 10th-90th pct) |",
        "|---|---|---|---|",
    ]
    for variant in variants:
        step = float(np.median(times[variant]))
        ratio = "—"
        if "recipe" in times and variant != "recipe":
            ratios = np.array(times[variant]) / np.array(times["recipe"])
            low, high = np.percentile(ratios, [10, 90])
            ratio = f"{np.median(ratios):.3f} ({low:.3f}–{high:.3f})"
        rows.append(
            f"| {variant} | {step * 1e3:.0f} | {32 / step:.0f} | {ratio} |"
        )
    table = "\n".join(rows)
    print(table)
    if set(variants) == set(VARIANTS):
        common.update_results(
            "recipe_steps",
            "The GLUE recipe's training step with and without its fast "
            "paths (`python benchmarks/recipe_steps.py "
            f"--rounds={FLAGS.rounds} --window={FLAGS.window}`): "
            "MiniLM-L6-H384, SST-2 train, batch 32, sequence 128, "
            f"`OneDeviceStrategy`, {FLAGS.rounds} alternating windows of "
            f"{FLAGS.window} steps after {FLAGS.warmup} warm-up steps each.\n"
            f"{common.machine_description()}\n\n{table}\n",
        )


if __name__ == "__main__":
    app.run(main)
