"""keras-bert's side of a comparison: a recipe of `recipes/`, run as a user
runs it (its own process), with the PyTorch loop's settings."""

import os
import subprocess
import sys
import tempfile
import time

from absl import logging

from benchmarks import common


def command(name, **flags):
    """`python recipes/<name>.py --flag=value ...`, the flags in order."""
    path = os.path.join(common.REPO, "recipes", f"{name}.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist.")
    return [sys.executable, path] + [
        f"--{flag}={value}" for flag, value in flags.items()
    ]


def training_flags(settings, run_dir):
    """The recipe flags of the settings every fine-tuning recipe shares,
    AdamW's epsilon added as PyTorch adds it (`--noadam_epsilon_hat`); the
    export goes to `<run_dir>_export`, where `export_check.py` reads it."""
    return {
        "model_dir": run_dir,
        "batch_size": settings["batch_size"],
        "learning_rate": settings["learning_rate"],
        "epochs": settings["epochs"],
        "warmup_fraction": settings["warmup_fraction"],
        "seed": settings["seed"],
        "adam_epsilon_hat": False,
        "export_dir": f"{run_dir}_export",
    }


def run(command):
    """Runs `command` to its end (raising if it fails); returns its wall
    seconds and its process's CPU seconds (user and system)."""
    logging.info("running %s", " ".join(command))
    before = os.times()
    start = time.perf_counter()
    subprocess.run(command, check=True)
    wall_seconds = time.perf_counter() - start
    after = os.times()
    cpu_seconds = (after.children_user + after.children_system) - (
        before.children_user + before.children_system
    )
    return wall_seconds, cpu_seconds


def fine_tune(name, env=None, **flags):
    """Runs `recipes/<name>.py` with `flags` in a temporary `--model_dir`;
    returns its `results.json` and the process's wall seconds."""
    with tempfile.TemporaryDirectory() as model_dir:
        seconds = common.run_process(
            command(name, model_dir=model_dir, **flags), env
        )[1]
        return common.read_record(f"{model_dir}/results.json"), seconds
