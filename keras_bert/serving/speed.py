"""Examples per second of SavedModels, timed in turn in one process
(what `recipes/distill.py` reports for a teacher and its student)."""

import time

import numpy as np
import tensorflow as tf


def examples_per_second(export_dirs, texts, batch_sizes, seconds=3.0):
    """`{name: {str(batch_size): examples/s}}` of each export's
    `serving_default` on batches of `texts`.

    The models are timed in turn, for three rounds of `seconds / 3` each
    per batch size, after one warm-up call; the best round counts. So
    each model meets the same machine load, and a burst of other work
    on a shared machine costs a round, not the figure.

    Args:
        export_dirs: dict name → SavedModel directory (a raw-text
            classifier export: `text`, or `text_a` and `text_b`).
        texts: a tuple of one or two str sequences (single texts or
            pairs), cycled to fill each batch.
        batch_sizes: ints.
        seconds: float. Time per model and batch size.

    Example:
    ```python
    examples_per_second(
        {"teacher": "runs/a/teacher_export/1", "student": "exports/1"},
        (["a good film", "a dull book"],), [1, 32], seconds=3.0,
    )  # {"teacher": {"1": 77.5, "32": 118.0}, "student": {...}}
    ```
    """
    served = {
        name: tf.saved_model.load(path).signatures["serving_default"]
        for name, path in export_dirs.items()
    }
    keys = ("text",) if len(texts) == 1 else ("text_a", "text_b")
    speeds = {name: {} for name in served}
    for size in batch_sizes:
        batch = {
            key: tf.constant(np.resize(np.asarray(side), size).tolist())
            for key, side in zip(keys, texts)
        }
        for function in served.values():
            function(**batch)  # traced and warm
        for _ in range(3):
            for name, function in served.items():
                calls, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds / 3:
                    function(**batch)
                    calls += 1
                rate = calls * size / (time.perf_counter() - start)
                speeds[name][str(size)] = max(
                    speeds[name].get(str(size), 0.0), rate
                )
    return speeds
