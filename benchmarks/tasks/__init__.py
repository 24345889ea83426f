"""The tasks of `benchmarks/task_race.py`, one module each.

A task module names its `CONTESTANTS`, its records' folder (`RECORDS`,
under benchmarks/) and each record's name (`record_name(contestant)`,
the seed in it); `run(contestant)` runs one in this process and returns
its record; `summarize(records)` returns the Markdown of its records (a
`SECTION` of RESULTS.md where it has one). The flags are the harness's;
what both sides of several tasks do is here.
"""

import os

import numpy as np
from absl import flags

from benchmarks import common
from benchmarks.contestants import recipe
from benchmarks.contestants import torch_loop

FLAGS = flags.FLAGS


def run_dir(name):
    """`<--runs_dir>/<name>` (default /tmp/task_race/<task>/<name>)."""
    root = FLAGS.runs_dir or os.path.join("/tmp/task_race", FLAGS.task)
    os.makedirs(root, exist_ok=True)
    return os.path.join(root, name)


def threads(default):
    return FLAGS.threads or default


def epoch_order(num_rows, epoch, seed=None):
    """Epoch `epoch`'s permutation of the training rows, from the seed."""
    seed = FLAGS.seed if seed is None else seed
    return np.random.default_rng([seed, epoch]).permutation(num_rows)


def run_recipe(name, directory, **recipe_flags):
    """`python recipes/<name>.py` with `recipe_flags` (its `--model_dir`:
    `directory`); returns `(its results.json, the command, wall seconds,
    CPU seconds)`."""
    command = recipe.command(name, **recipe_flags)
    wall_seconds, cpu_seconds = recipe.run(command)
    results = common.read_record(os.path.join(directory, "results.json"))
    return results, command, wall_seconds, cpu_seconds


def torch_model(model_class, settings, default_threads=2, **kwargs):
    """`model_class` from all-MiniLM-L6-v2 with a head drawn from the
    seed, on `--threads` threads (default `default_threads`)."""
    import torch

    torch.set_num_threads(threads(default_threads))
    return torch_loop.from_pretrained(
        model_class, common.minilm_dir(), settings["dropout"],
        settings.get("seed", FLAGS.seed), **kwargs,
    )  # fmt: skip


def torch_fine_tune(model, settings, num_rows, step_loss, **kwargs):
    """`torch_loop.fine_tune` on `epoch_order`'s permutations, stopping at
    `--max_steps`."""
    seed = settings.get("seed", FLAGS.seed)
    return torch_loop.fine_tune(
        model, settings, num_rows,
        lambda epoch: epoch_order(num_rows, epoch, seed), step_loss,
        max_steps=FLAGS.max_steps, **kwargs,
    )  # fmt: skip


def torch_predict(model, forward, num_rows, batch_size=64):
    """`forward(rows)` (numpy) of every row, in row order."""
    outputs = torch_loop.predict(model, forward, num_rows, batch_size)
    return np.concatenate([output for _, output in outputs])


def pad(rows, width=None):
    """Lists of ids as one zero-padded int array (to the longest row)."""
    width = width or max(len(row) for row in rows)
    return np.array([list(row) + [0] * (width - len(row)) for row in rows])
