"""`recipes/glue.py` on two real worker processes (127.0.0.1, TF_CONFIG).

- `multi_worker_mirrored` over 2 workers scores the dev sets exactly as a
  one-process run with the same global batch does (the eval sets do not
  divide by the batch, so a dropped or repeated example would show), ends
  with the same best weights within 1e-4, and only the chief writes to
  `--model_dir` (the other worker's temporary directory is removed).
- Both workers (or the one process of a `one_device` run) crash right
  after epoch 1 has been backed up; restarted
  with the same command, both resume at epoch 2 (the worker from the
  chief's backup) and the run ends with the uninterrupted run's weights
  and metrics.

The data is the recipe's own MNLI demo sample, with a 1-layer checkpoint
without dropout. Each run takes tens of seconds on two CPU cores, so the
tests are marked slow; every process is bounded in time and killed on the
way out.
"""

import contextlib
import glob
import json
import os
import re
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import save_huggingface
from keras_bert.fine_tuning.glue.demo import write_mnli_demo
from tests.training.test_distribute_multi_worker import free_ports

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
RUN_TIMEOUT = 420  # seconds for one run of the recipe
TOLERANCE = 1e-4
# Loaded first by every recipe process (it is on PYTHONPATH): with
# KB_TEST_CRASH_AFTER_EPOCH=N, the process dies (no clean-up, like a
# machine failure) right after its backup of epoch N is written.
SITECUSTOMIZE = """
import os
if os.environ.get("KB_TEST_CRASH_AFTER_EPOCH"):
    import keras
    _crash_epoch = int(os.environ["KB_TEST_CRASH_AFTER_EPOCH"])
    _original = keras.callbacks.BackupAndRestore.on_epoch_end

    def _on_epoch_end(self, epoch, logs=None):
        _original(self, epoch, logs)
        if epoch + 1 == _crash_epoch:
            os._exit(3)

    keras.callbacks.BackupAndRestore.on_epoch_end = _on_epoch_end
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("glue_multi_worker")
    data_dir = str(root / "glue")
    write_mnli_demo(data_dir)
    words = set()
    for path in glob.glob(os.path.join(data_dir, "MNLI", "*.tsv")):
        with open(path) as f:
            words.update(f.read().lower().replace("\t", " ").split())
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + sorted(
        w for w in words if w.isalpha()
    )
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=64,
        dropout=0.0,  # the head takes the checkpoint's dropout too
    )
    checkpoint = str(root / "checkpoint")
    save_huggingface(backbone, keras_bert.BertTokenizer(vocabulary), checkpoint)
    hook = root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    # The runs' own temporary directory (TMPDIR): what a worker leaves
    # there is its own, whatever else runs on the machine at the time.
    temp = root / "temp"
    temp.mkdir()
    return {
        "data_dir": data_dir,
        "checkpoint": checkpoint,
        "hook": str(hook),
        "root": root,
        "temp": str(temp),
    }


def recipe_command(files, model_dir, strategy):
    return [
        sys.executable,
        os.path.join(REPO, "recipes", "glue.py"),
        "--task=mnli",
        f"--data_dir={files['data_dir']}",
        f"--init_checkpoint={files['checkpoint']}",
        f"--model_dir={model_dir}",
        f"--export_dir={model_dir}_export",
        "--sequence_length=48",
        "--batch_size=16",
        "--eval_batch_size=64",  # 120 dev pairs: the last batch is partial
        "--learning_rate=5e-3",
        "--epochs=2",
        "--seed=3",
        f"--strategy={strategy}",
    ]


def environment(files, tf_config=None, crash_after_epoch=None):
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([files["hook"], REPO]),
        TF_CPP_MIN_LOG_LEVEL="1",
        TF_DETERMINISTIC_OPS="1",
        TMPDIR=files["temp"],
    )
    env.pop("TF_CONFIG", None)
    env.pop("KB_TEST_CRASH_AFTER_EPOCH", None)
    if tf_config is not None:
        env["TF_CONFIG"] = json.dumps(tf_config)
    if crash_after_epoch is not None:
        env["KB_TEST_CRASH_AFTER_EPOCH"] = str(crash_after_epoch)
    return env


@contextlib.contextmanager
def started(commands_and_envs, log_paths):
    processes = []
    try:
        for (command, env), log_path in zip(commands_and_envs, log_paths):
            log = open(log_path, "w")
            processes.append(
                subprocess.Popen(
                    command, env=env, stdout=log, stderr=subprocess.STDOUT
                )
            )
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()


def run(files, model_dir, name, workers, crash_after_epoch=None):
    """Runs the recipe in 1 process or `workers` processes; returns codes."""
    log_dir = files["root"] / "logs"
    log_dir.mkdir(exist_ok=True)
    if workers == 1:
        jobs = [
            (
                recipe_command(files, model_dir, "one_device"),
                environment(files, crash_after_epoch=crash_after_epoch),
            )
        ]
    else:
        addresses = [f"127.0.0.1:{port}" for port in free_ports(workers)]
        jobs = [
            (
                recipe_command(files, model_dir, "multi_worker_mirrored"),
                environment(
                    files,
                    {
                        "cluster": {"worker": addresses},
                        "task": {"type": "worker", "index": index},
                    },
                    crash_after_epoch,
                ),
            )
            for index in range(workers)
        ]
    log_paths = [log_dir / f"{name}_{i}.log" for i in range(len(jobs))]
    with started(jobs, log_paths) as processes:
        for process in processes:
            process.wait(timeout=RUN_TIMEOUT)
        codes = [process.returncode for process in processes]
    log = "\n".join(path.read_text() for path in log_paths)
    return codes, log


def tail(log):
    return log[-6000:]


def results(model_dir):
    with open(os.path.join(model_dir, "results.json")) as f:
        return json.load(f)


def best_weights(model_dir):
    arrays = []
    with h5py.File(os.path.join(model_dir, "best.weights.h5"), "r") as f:
        f.visititems(
            lambda name, item: (
                arrays.append((name, item[()]))
                if isinstance(item, h5py.Dataset)
                else None
            )
        )
    return dict(arrays)


def flat(metrics):
    return {
        f"{split}/{name}": value
        for split, values in metrics.items()
        for name, value in values.items()
    }


def max_difference(first, second):
    assert first.keys() == second.keys()
    return max(
        float(np.max(np.abs(first[name] - second[name]))) for name in first
    )


def worker_temp_dirs(files):
    return set(
        glob.glob(os.path.join(files["temp"], "keras_bert_workertemp_1_*"))
    )


@pytest.fixture(scope="module")
def reference_runs(files):
    one = files["root"] / "one_process"
    codes, log = run(files, one, "one", workers=1)
    assert codes == [0], tail(log)
    temp_before = worker_temp_dirs(files)
    two = files["root"] / "two_workers"
    codes, log = run(files, two, "two", workers=2)
    assert codes == [0, 0], tail(log)
    return {
        "one": one,
        "two": two,
        "log": tail(log),
        "new_temp_dirs": worker_temp_dirs(files) - temp_before,
    }


def test_two_workers_score_and_train_like_one_process(reference_runs):
    one = results(reference_runs["one"])
    two = results(reference_runs["two"])
    assert two["num_eval_examples"] == {
        "validation_matched": 120,
        "validation_mismatched": 120,
    }
    assert [e["epoch"] for e in two["epochs"]] == [1, 2]
    for mine, theirs in zip(two["epochs"], one["epochs"]):
        # Accuracy over 120 pairs: equal unless a prediction flipped.
        assert flat(mine["metrics"]) == pytest.approx(
            flat(theirs["metrics"]), abs=1e-6
        )
        assert mine["loss"] == pytest.approx(theirs["loss"], abs=1e-4)
    difference = max_difference(
        best_weights(reference_runs["one"]), best_weights(reference_runs["two"])
    )
    # docs/distributed.md quotes these lines (`pytest -s`).
    print(f"2 workers vs one process: best weights differ by {difference:.2g}")
    assert difference < TOLERANCE


def run_files(run_dir):
    """The files of a run, relative to it; TensorBoard event files (named
    after their time, host and process) as `events.out.tfevents.*`."""
    return sorted(
        re.sub(
            r"events\.out\.tfevents\..*",
            "events.out.tfevents.*",
            os.path.relpath(os.path.join(directory, name), run_dir),
        )
        for directory, _, names in os.walk(run_dir)
        for name in names
    )


def test_only_the_chief_writes_to_model_dir(reference_runs):
    written = run_files(reference_runs["two"])
    expected = run_files(reference_runs["one"])
    assert "logs/train/events.out.tfevents.*" in expected
    assert written == expected
    assert not any(path.startswith("workers") for path in written)
    exported = os.listdir(f"{reference_runs['two']}_export")
    assert exported == ["1"]  # one version, by the chief
    assert reference_runs["new_temp_dirs"] == set(), reference_runs["log"]


def crash_then_resume(files, name, workers):
    """Kills every process right after epoch 1's backup, then reruns."""
    model_dir = files["root"] / name
    codes, log = run(
        files, model_dir, f"{name}_crash", workers, crash_after_epoch=1
    )
    assert codes == [3] * workers, tail(log)
    assert not os.path.exists(model_dir / "results.json")
    assert os.listdir(model_dir / "backup")
    codes, log = run(files, model_dir, f"{name}_resume", workers)
    assert codes == [0] * workers, tail(log)
    assert results(model_dir)["resumed_from_epoch"] == 1
    return model_dir, log


def assert_same_run(model_dir, reference_dir):
    """Same dev metrics every epoch, best weights within TOLERANCE
    (printed)."""
    resumed, uninterrupted = results(model_dir), results(reference_dir)
    for mine, theirs in zip(resumed["epochs"], uninterrupted["epochs"]):
        assert flat(mine["metrics"]) == pytest.approx(
            flat(theirs["metrics"]), abs=1e-6
        )
    difference = max_difference(
        best_weights(model_dir), best_weights(reference_dir)
    )
    print(
        f"{os.path.basename(model_dir)}: resumed run vs uninterrupted: best "
        f"weights differ by {difference:.2g}"
    )
    assert difference < TOLERANCE


def test_crash_after_epoch_one_resumes_on_every_worker(files, reference_runs):
    model_dir, log = crash_then_resume(files, "crashed", workers=2)
    assert "copied the chief's backup" in log
    assert_same_run(model_dir, reference_runs["two"])


def test_crash_after_epoch_one_resumes_exactly_in_one_process(
    files, reference_runs
):
    # Weights, AdamW moments and step come back: the learning-rate
    # schedule and the updates go on as if nothing had happened.
    model_dir, log = crash_then_resume(files, "crashed_one", workers=1)
    assert "Skipping variable loading for optimizer" not in log
    assert_same_run(model_dir, reference_runs["one"])
