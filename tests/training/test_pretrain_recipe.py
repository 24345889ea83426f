"""`recipes/pretrain.py` killed with SIGKILL mid-run resumes from its last
checkpoint: step counter, optimizer state and schedule, losing at most one
checkpoint interval."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from tests.training import pretraining_data

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
TOTAL_STEPS = 400
INTERVAL = 20


def command(files, model_dir):
    return [
        sys.executable,
        os.path.join(REPO, "recipes", "pretrain.py"),
        f"--input_file={files['tfrecord']}",
        f"--vocab_file={files['vocab']}",
        f"--bert_config_file={files['config']}",
        f"--model_dir={model_dir}",
        f"--max_seq_length={pretraining_data.MAX_SEQ_LENGTH}",
        f"--max_predictions_per_seq={pretraining_data.MAX_PREDICTIONS}",
        "--train_batch_size=4",
        f"--num_train_steps={TOTAL_STEPS}",
        "--num_warmup_steps=10",
        f"--save_checkpoints_steps={INTERVAL}",
        "--verbose=2",
    ]


def checkpointed_epoch(model_dir):
    path = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
    return int(path.rsplit("-", 1)[1]) // INTERVAL if path else 0


@pytest.mark.slow
def test_sigkill_then_rerun_resumes_from_the_last_checkpoint(tmp_path):
    files = pretraining_data.write_training_files(tmp_path)
    model_dir = str(tmp_path / "run")
    log = open(tmp_path / "first.log", "w")
    process = subprocess.Popen(
        command(files, model_dir), stdout=log, stderr=subprocess.STDOUT
    )
    deadline = time.time() + 240
    while checkpointed_epoch(model_dir) < 2 and time.time() < deadline:
        if process.poll() is not None:
            pytest.fail(f"pretrain.py exited early: {open(log.name).read()}")
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    log.close()
    killed_at = checkpointed_epoch(model_dir) * INTERVAL
    assert INTERVAL * 2 <= killed_at < TOTAL_STEPS
    assert not os.path.exists(os.path.join(model_dir, "results.json"))

    rerun = subprocess.run(
        command(files, model_dir), capture_output=True, text=True, timeout=600
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"Resuming from the checkpoint at step {killed_at}" in rerun.stderr
    with open(os.path.join(model_dir, "results.json")) as f:
        results = json.load(f)
    # The last checkpoint is where training picked up (nothing older), and
    # the optimizer's restored step counter, not a fresh one, reached the
    # end: steps this run + checkpointed steps = the whole run.
    assert results["resumed_from_step"] == killed_at
    assert results["final_step"] == TOTAL_STEPS
    assert results["steps_this_run"] == TOTAL_STEPS - killed_at
    remaining_intervals = (TOTAL_STEPS - killed_at) // INTERVAL
    assert len(results["history"]["loss"]) == remaining_intervals
    assert {"config.json", "vocab.txt"} <= set(results["exported_files"])


@pytest.mark.slow
def test_gradient_accumulation_steps_count_updates(tmp_path):
    """`--train_batch_size=2 --gradient_accumulation_steps=2`: batches of
    4 in two micro-batches; steps, checkpoints and throughput count
    updates of 4 examples. A bad value is a usage error naming the flag."""
    files = pretraining_data.write_training_files(tmp_path)
    model_dir = str(tmp_path / "run")
    flags = [f for f in command(files, model_dir) if "steps=" not in f] + [
        "--train_batch_size=2",
        "--gradient_accumulation_steps=2",
        "--num_train_steps=4",
        "--num_warmup_steps=1",
        "--save_checkpoints_steps=2",
    ]
    run = subprocess.run(flags, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    with open(os.path.join(model_dir, "results.json")) as f:
        results = json.load(f)
    assert results["final_step"] == 4
    assert results["configuration"]["gradient_accumulation_steps"] == 2
    assert results["examples_per_second"] == pytest.approx(
        results["steps_per_second"] * 4
    )
    latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
    assert latest.endswith("-4")  # numbered by update
    bad = subprocess.run(
        flags + ["--gradient_accumulation_steps=0"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert bad.returncode != 0
    assert "`--gradient_accumulation_steps`, expected a positive" in bad.stderr
