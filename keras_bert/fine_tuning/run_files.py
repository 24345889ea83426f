"""The files of a fine-tuning run's `model_dir`: resume, finished, fresh.

`run_fine_tuning` writes `results.json` last, and Keras'
`BackupAndRestore` removes `backup/` when training ends, so a `model_dir`
is in one of three states: empty or stale (a fresh start), interrupted
(`backup/` holds an epoch: resume), or finished (`results.json` and no
`backup/`: refused unless `overwrite`).
"""

import json
import os

import tensorflow as tf
from absl import logging

RESULTS = "results.json"
BEST_WEIGHTS = "best.weights.h5"
HISTORY = "eval_history.json"
BACKUP = "backup"
LOGS = "logs"  # TensorBoard's


def run_paths(run_dir):
    """The paths `run_fine_tuning` writes in `run_dir`, by role."""
    return {
        "best_weights": os.path.join(run_dir, BEST_WEIGHTS),
        "history": os.path.join(run_dir, HISTORY),
        "backup": os.path.join(run_dir, BACKUP),
        "logs": os.path.join(run_dir, LOGS),
    }


def interrupted(model_dir):
    """Whether `model_dir` holds the backup of an unfinished run."""
    backup = os.path.join(model_dir, BACKUP)
    return bool(tf.io.gfile.isdir(backup) and tf.io.gfile.listdir(backup))


def check_finished_run(model_dir, overwrite=False):
    """Refuses a `model_dir` whose run finished, or clears it to overwrite.

    Args:
        model_dir: str. The run's directory.
        overwrite: bool. `True` removes the finished (or interrupted) run's
            files, so that the run starts again from scratch.

    Raises:
        ValueError: `model_dir` holds a finished run (`results.json`, no
            `backup/`) and `overwrite` is `False`. An interrupted run is
            not refused: it resumes.

    Example:
    ```python
    check_finished_run("runs/sst2")  # ValueError if it finished
    check_finished_run("runs/sst2", overwrite=True)  # starts afresh
    ```
    """
    results_path = os.path.join(model_dir, RESULTS)
    if overwrite:
        for path in run_paths(model_dir).values():
            if tf.io.gfile.isdir(path):
                tf.io.gfile.rmtree(path)
            elif tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        if tf.io.gfile.exists(results_path):
            tf.io.gfile.remove(results_path)
        return
    if interrupted(model_dir) or not tf.io.gfile.exists(results_path):
        return
    with tf.io.gfile.GFile(results_path) as f:
        results = json.load(f)
    monitor = results.get("monitor") or "?/?"
    split, _, metric = monitor.partition("/")
    value = (results.get("metrics") or {}).get(split, {}).get(metric)
    raise ValueError(
        f"The run in {model_dir} finished (best epoch "
        f"{results.get('best_epoch')}, {monitor}={value}); pass --overwrite "
        "(overwrite=True) to retrain it from scratch, or a new --model_dir."
    )


def copy_resume_state(model_dir, run_dir):
    """Copies the chief's backup, eval history and best weights so far into
    a worker's run_dir (the best epoch may be one before the interruption:
    the worker then restores those weights, as the chief does)."""
    backup = os.path.join(model_dir, BACKUP)
    if not interrupted(model_dir):
        return
    for directory, _, names in tf.io.gfile.walk(backup):
        target = os.path.join(
            run_dir, BACKUP, os.path.relpath(directory, backup)
        )
        tf.io.gfile.makedirs(target)
        for name in names:
            tf.io.gfile.copy(
                os.path.join(directory, name),
                os.path.join(target, name),
                overwrite=True,
            )
    for name in (HISTORY, BEST_WEIGHTS):
        if tf.io.gfile.exists(os.path.join(model_dir, name)):
            tf.io.gfile.copy(
                os.path.join(model_dir, name),
                os.path.join(run_dir, name),
                overwrite=True,
            )
    logging.info("Worker: copied the chief's backup from %s", backup)


def backed_up_epochs(backup_dir):
    """Epochs finished according to BackupAndRestore's backup (0 if none)."""
    path = os.path.join(backup_dir, "training_metadata.json")
    if not tf.io.gfile.exists(path):
        return 0
    with tf.io.gfile.GFile(path) as f:
        return int(json.load(f)["epoch"])


def resumable_history(paths):
    """The eval history of an interrupted run, or `None` for a fresh start
    (whose stale history, best weights and TensorBoard logs are removed)."""
    if not interrupted(os.path.dirname(paths["backup"])):
        for path in (paths["history"], paths["best_weights"]):
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        if tf.io.gfile.isdir(paths["logs"]):
            tf.io.gfile.rmtree(paths["logs"])
        return None
    with tf.io.gfile.GFile(paths["history"]) as f:
        history = json.load(f)
    history["last_epoch"] = max(e["epoch"] for e in history["epochs"])
    logging.info(
        "Resuming from %s after epoch %d",
        paths["backup"],
        history["last_epoch"],
    )
    return history


def remove_backup(paths):
    """Removes `backup/` once the run is over (Keras' `BackupAndRestore`
    does when `fit` ends; not when a resumed run had already stopped
    early and skipped `fit`)."""
    if tf.io.gfile.isdir(paths["backup"]):
        tf.io.gfile.rmtree(paths["backup"])
