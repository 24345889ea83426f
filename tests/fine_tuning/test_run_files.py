"""run_fine_tuning's early stopping, TensorBoard logs, weight files and
refusal of a finished model_dir."""

import json
import os
from unittest import mock

import h5py
import keras
import pytest
import tensorflow as tf
from absl import app

from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import run_files
from keras_bert.fine_tuning import run_fine_tuning
from tests.fine_tuning.test_runner import ONE_STEP
from tests.fine_tuning.test_runner import TRAINING
from tests.fine_tuning.test_runner import TinySentiment
from tests.fine_tuning.test_runner import assert_same_weights

# Best at epoch 2, then two epochs without a better score.
SCORES = [0.5, 0.9, 0.7, 0.9, 0.95, 0.99]
FIVE_EPOCHS = {**TRAINING, "epochs": 5}


def test_early_stopping_stops_after_patience_epochs_keeping_the_best(
    tmp_path,
):
    task = TinySentiment(scripted_scores=SCORES)
    result = run_fine_tuning(
        task, str(tmp_path / "run"), early_stopping_patience=2, **FIVE_EPOCHS
    )
    results = result.results
    assert [e["epoch"] for e in results["epochs"]] == [1, 2, 3, 4]
    assert results["best_epoch"] == 2
    assert results["stopped_early"] is True
    assert results["stopped_at_epoch"] == 4
    assert results["config"]["early_stopping_patience"] == 2
    assert_same_weights(result.model.get_weights(), task.evaluated_weights[1])
    assert not os.path.exists(tmp_path / "run" / "backup")

    # Without patience every epoch trains.
    unstopped = run_fine_tuning(
        TinySentiment(scripted_scores=SCORES), str(tmp_path / "all"),
        **FIVE_EPOCHS,
    )  # fmt: skip
    assert len(unstopped.results["epochs"]) == 5
    assert unstopped.results["stopped_early"] is False
    assert unstopped.results["stopped_at_epoch"] is None


def test_a_resumed_run_counts_patience_from_its_history(tmp_path):
    original = keras.callbacks.BackupAndRestore.on_epoch_end

    def crash_after_epoch_three(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 2:
            raise RuntimeError("simulated crash")

    run_dir = str(tmp_path / "run")
    with (
        mock.patch.object(
            keras.callbacks.BackupAndRestore,
            "on_epoch_end",
            crash_after_epoch_three,
        ),
        pytest.raises(RuntimeError, match="simulated crash"),
    ):
        run_fine_tuning(
            TinySentiment(scripted_scores=SCORES), run_dir,
            early_stopping_patience=2, **FIVE_EPOCHS,
        )  # fmt: skip
    # Epoch 3 was one without improvement; epoch 4 is the second.
    resumed = TinySentiment(scripted_scores=SCORES[3:])
    results = run_fine_tuning(
        resumed, run_dir, early_stopping_patience=2, **FIVE_EPOCHS
    ).results
    assert results["resumed_from_epoch"] == 3
    assert len(resumed.evaluated_weights) == 1
    assert results["stopped_at_epoch"] == 4
    assert results["best_epoch"] == 2


def _scalar_tags(log_dir):
    tags = set()
    for directory, _, names in tf.io.gfile.walk(log_dir):
        for name in names:
            if "tfevents" not in name:
                continue
            path = os.path.join(directory, name)
            for event in tf.compat.v1.train.summary_iterator(path):
                tags.update(value.tag for value in event.summary.value)
    return tags


def test_tensorboard_logs_loss_learning_rate_and_eval_metrics(tmp_path):
    run_dir = tmp_path / "run"
    run_fine_tuning(TinySentiment(), str(run_dir), **{**TRAINING, "epochs": 2})
    tags = _scalar_tags(str(run_dir / "logs"))
    expected = {
        "epoch_loss",
        "batch_loss",
        "epoch_learning_rate",
        "epoch_dev_accuracy",
        "epoch_dev_mean_logit",
    }
    assert expected <= tags, tags


def test_best_weights_hold_the_model_without_optimizer_state(tmp_path):
    result = run_fine_tuning(TinySentiment(), str(tmp_path / "run"), **ONE_STEP)
    datasets = []
    with h5py.File(tmp_path / "run" / "best.weights.h5") as f:
        assert "optimizer" not in f
        f.visititems(
            lambda name, item: (
                datasets.append(name)
                if isinstance(item, h5py.Dataset)
                else None
            )
        )
    # One array per weight: not AdamW's two moments per trainable one.
    assert len(datasets) == len(result.model.weights)


def test_a_finished_model_dir_is_refused_unless_overwritten(tmp_path):
    model_dir = str(tmp_path / "run")
    first = run_fine_tuning(TinySentiment(), model_dir, **ONE_STEP)
    task = TinySentiment()
    with pytest.raises(ValueError, match=r"finished \(best epoch 1, dev/"):
        run_fine_tuning(task, model_dir, **ONE_STEP)
    assert task.calls == []  # refused before reading any data
    with pytest.raises(app.UsageError, match="pass --overwrite"):
        recipe_flags.check_flags(_flags(model_dir))
    recipe_flags.check_flags(_flags(model_dir, overwrite=True))

    retrained = TinySentiment()
    again = run_fine_tuning(retrained, model_dir, overwrite=True, **ONE_STEP)
    assert ("train_dataset", 0, 1) in retrained.calls  # trained afresh
    assert again.results["resumed_from_epoch"] is None
    assert again.results["config"]["overwrite"] is True
    assert first.results["config"]["overwrite"] is False


def test_an_interrupted_model_dir_is_not_refused(tmp_path):
    model_dir = tmp_path / "run"
    (model_dir / "backup").mkdir(parents=True)
    (model_dir / "backup" / "training_metadata.json").write_text("{}")
    (model_dir / "results.json").write_text(json.dumps({"best_epoch": 1}))
    run_files.check_finished_run(str(model_dir))  # resumes: no error
    run_files.check_finished_run(str(model_dir), overwrite=True)
    assert sorted(os.listdir(model_dir)) == []


def _flags(model_dir, overwrite=False):
    return {
        "init_checkpoint": "ckpt",
        "preset": None,
        "batch_size": 1,
        "eval_batch_size": 1,
        "epochs": 1,
        "warmup_fraction": 0.1,
        "model_dir": model_dir,
        "overwrite": overwrite,
    }
