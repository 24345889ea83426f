"""`recipes/pretrain.py` on two real worker processes (127.0.0.1, TF_CONFIG).

- `multi_worker_mirrored` over 2 workers ends with the weights of a
  one-process run with the same global batch, and only the chief writes
  to `--model_dir`.
- SIGTERM to one worker: both save at the same step and exit with code 42;
  restarted, they end at exactly the requested step with the weights of
  the uninterrupted run.
- SIGKILL (no warning): the restarted run resumes from the last periodic
  checkpoint, losing less than one interval, and still ends on the
  uninterrupted run's weights (the data is replayed from that step).

Every test starts its processes itself, bounds them in time and kills
them on the way out. Each run takes tens of seconds on two CPU cores, so
all are marked slow.
"""

import contextlib
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.training import pretraining_data

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
GLOBAL_BATCH = 8
TOLERANCE = 1e-4
RUN_TIMEOUT = 420  # seconds for one run of the recipe


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("data")
    files = pretraining_data.write_training_files(directory)
    # Dropout off: the replicas' and the single process' random streams
    # differ, everything else must not.
    config = dict(pretraining_data.TINY_CONFIG, dropout=0.0)
    files["config"] = str(directory / "config_no_dropout.json")
    with open(files["config"], "w") as f:
        json.dump(config, f)
    return files


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def recipe_command(files, model_dir, strategy, steps, interval):
    return [
        sys.executable,
        os.path.join(REPO, "recipes", "pretrain.py"),
        f"--input_file={files['tfrecord']}",
        f"--vocab_file={files['vocab']}",
        f"--bert_config_file={files['config']}",
        f"--model_dir={model_dir}",
        f"--max_seq_length={pretraining_data.MAX_SEQ_LENGTH}",
        f"--max_predictions_per_seq={pretraining_data.MAX_PREDICTIONS}",
        f"--train_batch_size={GLOBAL_BATCH}",
        f"--num_train_steps={steps}",
        "--num_warmup_steps=2",
        "--learning_rate=1e-3",
        f"--save_checkpoints_steps={interval}",
        f"--strategy={strategy}",
        "--deterministic_ops",
        "--verbose=2",
    ]


def environment(tf_config=None):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="1")
    env.pop("TF_CONFIG", None)
    if tf_config is not None:
        env["TF_CONFIG"] = json.dumps(tf_config)
    return env


@contextlib.contextmanager
def cluster(files, model_dir, steps, interval, log_dir, name):
    """Starts 2 workers of the recipe; always kills them on exit."""
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = []
    try:
        for index in range(2):
            tf_config = {
                "cluster": {"worker": addresses},
                "task": {"type": "worker", "index": index},
            }
            log = open(os.path.join(log_dir, f"{name}_{index}.log"), "w")
            processes.append(
                subprocess.Popen(
                    recipe_command(
                        files,
                        model_dir,
                        "multi_worker_mirrored",
                        steps,
                        interval,
                    ),
                    env=environment(tf_config),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()


def wait_all(processes, timeout=RUN_TIMEOUT):
    deadline = time.time() + timeout
    for process in processes:
        process.wait(timeout=max(1, deadline - time.time()))
    return [process.returncode for process in processes]


def logs(log_dir, name):
    return "\n".join(
        open(path).read()[-3000:]
        for path in sorted(glob.glob(os.path.join(log_dir, f"{name}_*.log")))
    )


def run_single_process(files, model_dir, steps, interval, log_dir):
    with open(os.path.join(log_dir, "single.log"), "w") as log:
        completed = subprocess.run(
            recipe_command(files, model_dir, "one_device", steps, interval),
            env=environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=RUN_TIMEOUT,
        )
    assert completed.returncode == 0, open(log.name).read()[-3000:]


def run_cluster(files, model_dir, steps, interval, log_dir, name):
    with cluster(files, model_dir, steps, interval, log_dir, name) as ps:
        codes = wait_all(ps)
    assert codes == [0, 0], logs(log_dir, name)


def latest_step(model_dir):
    path = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
    return int(path.rsplit("-", 1)[1]) if path else 0


def checkpoint_steps(model_dir):
    paths = glob.glob(os.path.join(model_dir, "checkpoints", "ckpt-*.index"))
    return sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in paths)


def wait_for_checkpoint(model_dir, step, processes, log, timeout=RUN_TIMEOUT):
    deadline = time.time() + timeout
    while time.time() < deadline:
        # The `checkpoint` state file, not a `ckpt-*.index` file: the index
        # is written first, and a kill between the two leaves a run that
        # restarts from step 0 (seen under load).
        if latest_step(model_dir) >= step:
            return
        if any(p.poll() is not None for p in processes):
            pytest.fail(f"a worker exited before checkpoint {step}:\n{log()}")
        time.sleep(0.05)
    pytest.fail(f"no checkpoint {step} after {timeout} s:\n{log()}")


def model_weights(model_dir):
    """Trained variables of the latest checkpoint, by checkpoint key.

    Keras 3 models reach most of their variables in a `tf.train.Checkpoint`
    through the optimizer's list of the variables it trains.
    """
    path = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
    reader = tf.train.load_checkpoint(path)
    return {
        key: reader.get_tensor(key)
        for key in reader.get_variable_to_shape_map()
        if key.startswith(("model/", "optimizer/_trainable_variables/"))
    }


def max_difference(first, second):
    assert sorted(first) == sorted(second)
    assert len(first) > 10
    return max(float(np.max(np.abs(first[k] - second[k]))) for k in first)


def results(model_dir):
    with open(os.path.join(model_dir, "results.json")) as f:
        return json.load(f)


def written_files(model_dir):
    return sorted(
        os.path.relpath(os.path.join(root, name), model_dir)
        for root, _, names in os.walk(model_dir)
        for name in names
    )


@pytest.fixture(scope="module")
def reference_runs(files, tmp_path_factory):
    """One process and 2 workers, same global batch, 24 steps."""
    directory = tmp_path_factory.mktemp("reference")
    single, multi = str(directory / "single"), str(directory / "multi")
    run_single_process(files, single, 24, 8, str(directory))
    run_cluster(files, multi, 24, 8, str(directory), "multi")
    return single, multi


def test_two_workers_match_one_process(reference_runs):
    single, multi = reference_runs
    assert results(multi)["final_step"] == 24
    difference = max_difference(model_weights(single), model_weights(multi))
    # docs/distributed.md quotes these lines (`pytest -s`).
    print(f"2 workers vs one process: max weight difference {difference:.2g}")
    assert difference < TOLERANCE


def test_only_the_chief_writes_to_model_dir(reference_runs):
    single, multi = reference_runs
    written = written_files(multi)
    assert not [path for path in written if "workertemp" in path]
    # One TensorBoard writer per log directory, as in a one-process run.
    events = [path for path in written if "tfevents" in path]
    assert len(events) == len(
        [path for path in written_files(single) if "tfevents" in path]
    )
    assert "results.json" in written
    assert checkpoint_steps(multi) == [8, 16, 24]


STEPS, INTERVAL = 200, 50


@pytest.fixture(scope="module")
def uninterrupted(files, tmp_path_factory):
    directory = tmp_path_factory.mktemp("uninterrupted")
    model_dir = str(directory / "run")
    run_cluster(files, model_dir, STEPS, INTERVAL, str(directory), "run")
    return model_weights(model_dir)


def test_sigterm_saves_and_restart_ends_at_the_exact_step(
    files, uninterrupted, tmp_path
):
    model_dir, log_dir = str(tmp_path / "run"), str(tmp_path)
    with cluster(files, model_dir, STEPS, INTERVAL, log_dir, "first") as ps:
        wait_for_checkpoint(
            model_dir, INTERVAL, ps, lambda: logs(log_dir, "first")
        )
        ps[1].send_signal(signal.SIGTERM)  # not the chief
        codes = wait_all(ps)
    assert codes == [42, 42], logs(log_dir, "first")
    saved = latest_step(model_dir)
    assert INTERVAL < saved < STEPS and saved % INTERVAL, saved

    run_cluster(files, model_dir, STEPS, INTERVAL, log_dir, "second")
    result = results(model_dir)
    assert result["resumed_from_step"] == saved
    assert result["final_step"] == STEPS
    assert result["steps_this_run"] == STEPS - saved
    difference = max_difference(uninterrupted, model_weights(model_dir))
    print(
        f"SIGTERM: saved at step {saved}; restarted run vs uninterrupted: "
        f"max weight difference {difference:.2g}"
    )
    assert difference < TOLERANCE


def test_sigkill_loses_at_most_one_interval(files, uninterrupted, tmp_path):
    model_dir, log_dir = str(tmp_path / "run"), str(tmp_path)
    with cluster(files, model_dir, STEPS, INTERVAL, log_dir, "first") as ps:
        wait_for_checkpoint(
            model_dir, INTERVAL, ps, lambda: logs(log_dir, "first")
        )
        ps[1].send_signal(signal.SIGKILL)
        killed_after = latest_step(model_dir)
        # The survivor cannot finish a step without its peer; the context
        # manager kills it.
    last = latest_step(model_dir)
    assert last in (killed_after, killed_after + INTERVAL)
    assert last % INTERVAL == 0 and last >= INTERVAL, last

    run_cluster(files, model_dir, STEPS, INTERVAL, log_dir, "second")
    result = results(model_dir)
    assert result["resumed_from_step"] == last
    assert result["final_step"] == STEPS
    difference = max_difference(uninterrupted, model_weights(model_dir))
    print(
        f"SIGKILL: resumed from step {last}; restarted run vs uninterrupted: "
        f"max weight difference {difference:.2g}"
    )
    assert difference < TOLERANCE
