"""EpochEvaluation: whole-set metrics each epoch, best weights kept."""

import json
import logging

import numpy as np
import pytest

from keras_bert.fine_tuning.glue.metrics import compute_glue_metrics
from keras_bert.training.epoch_evaluation import EpochEvaluation


class ScriptedModel:
    """Stands in for a model: returns the next scripted logits each call."""

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.saved = []

    def predict(self, inputs, batch_size=None, verbose=0):
        return self.outputs.pop(0)

    def save_weights(self, path):
        self.saved.append(path)


def logits(predicted_ids):
    return np.eye(2)[predicted_ids]


def cola_evaluation(labels):
    """GLUE CoLA's evaluation: Matthews correlation over the whole split."""

    def evaluate(model):
        outputs = model.predict(None)
        return {"validation": compute_glue_metrics("cola", labels, outputs)}

    return evaluate


def run_epochs(evaluation, model, count):
    evaluation.set_model(model)
    for epoch in range(count):
        logs = {"loss": 1.0 / (epoch + 1)}
        evaluation.on_epoch_begin(epoch)
        evaluation.on_epoch_end(epoch, logs)
    return logs


def test_keeps_the_best_epoch_and_writes_the_history(tmp_path):
    labels = np.array([1, 0, 1, 1, 0, 0])
    model = ScriptedModel(
        [
            logits([1, 0, 0, 0, 1, 0]),  # epoch 1: MCC 0.0
            logits([1, 0, 1, 1, 0, 1]),  # epoch 2: MCC 0.707
            logits([1, 1, 0, 0, 1, 1]),  # epoch 3: worse again
        ]
    )
    evaluation = EpochEvaluation(
        cola_evaluation(labels),
        "validation/matthews_corrcoef",
        best_weights_path=str(tmp_path / "best.weights.h5"),
        history_path=str(tmp_path / "history.json"),
    )
    logs = run_epochs(evaluation, model, 3)
    assert "validation_matthews_corrcoef" in logs
    assert evaluation.best["epoch"] == 2
    assert model.saved == [str(tmp_path / "best.weights.h5")] * 2
    with open(tmp_path / "history.json") as f:
        history = json.load(f)
    assert history["monitor"] == "validation/matthews_corrcoef"
    assert [e["epoch"] for e in history["epochs"]] == [1, 2, 3]
    assert [e["loss"] for e in history["epochs"]] == [1.0, 0.5, 1 / 3]
    assert history["epochs"][1]["train_logs"] == {"loss": 0.5}
    mcc = history["best"]["metrics"]["validation"]["matthews_corrcoef"]
    assert abs(mcc - 0.7071) < 1e-3


def test_min_mode_keeps_the_lowest_and_nan_never_wins():
    scores = iter([float("nan"), 0.4, 0.2, 0.3])
    evaluation = EpochEvaluation(
        lambda model: {"dev": {"loss": next(scores)}}, "dev/loss", mode="min"
    )
    run_epochs(evaluation, ScriptedModel([]), 4)
    assert evaluation.best["epoch"] == 3


def test_every_epoch_nan_keeps_the_first_and_warns(tmp_path, caplog):
    """STS-B with constant predictions: Pearson and Spearman are undefined
    (NaN) every epoch. The run must not crash choosing its best epoch."""
    caplog.set_level(logging.WARNING, logger="absl")
    labels = np.array([0.5, 2.0, 3.5, 5.0])
    constant = np.full((4, 1), 2.5)
    model = ScriptedModel([constant, constant, constant])

    def evaluate(model):
        outputs = model.predict(None)
        return {"validation": compute_glue_metrics("stsb", labels, outputs)}

    evaluation = EpochEvaluation(
        evaluate,
        "validation/pearson",
        best_weights_path=str(tmp_path / "best.weights.h5"),
    )
    run_epochs(evaluation, model, 3)
    assert evaluation.best["epoch"] == 1
    assert model.saved == [str(tmp_path / "best.weights.h5")]
    assert "Epoch 3: the monitored validation/pearson is nan" in caplog.text


def test_a_restarted_epoch_replaces_its_record():
    labels = np.array([0, 1])
    evaluation = EpochEvaluation(
        lambda model: {
            "validation": compute_glue_metrics(
                "rte", labels, model.predict(None)
            )
        },
        "validation/accuracy",
        history={"epochs": [{"epoch": 1, "metrics": {}}], "best": None},
    )
    evaluation.set_model(ScriptedModel([logits([0, 1])]))
    evaluation.on_epoch_end(0, {"loss": 0.5})
    assert len(evaluation.epochs) == 1
    assert evaluation.epochs[0]["metrics"]["validation"]["accuracy"] == 1.0


def test_the_history_goes_through_gfile():
    tf = pytest.importorskip("tensorflow")
    path = "ram://epoch_evaluation/history.json"
    evaluation = EpochEvaluation(
        lambda model: {"dev": {"f1": 0.5}}, "dev/f1", history_path=path
    )
    run_epochs(evaluation, ScriptedModel([]), 1)
    with tf.io.gfile.GFile(path) as f:
        assert json.load(f)["best"]["metrics"] == {"dev": {"f1": 0.5}}


def test_bad_monitor_and_mode_say_what_was_received():
    with pytest.raises(ValueError, match="monitor='accuracy'"):
        EpochEvaluation(lambda model: {}, "accuracy")
    with pytest.raises(ValueError, match="mode='up'"):
        EpochEvaluation(lambda model: {}, "dev/accuracy", mode="up")
    evaluation = EpochEvaluation(
        lambda model: {"dev": {"f1": 0.5}}, "dev/accuracy"
    )
    with pytest.raises(ValueError, match="dev/f1"):
        run_epochs(evaluation, ScriptedModel([]), 1)


def test_patience_stops_training_and_a_resumed_history_remembers_it():
    labels = np.array([1, 0, 1, 1, 0, 0])
    best, worse = logits([1, 0, 1, 1, 0, 0]), logits([1, 1, 0, 0, 1, 1])
    model = ScriptedModel([worse, best, worse, worse, worse])
    evaluation = EpochEvaluation(
        cola_evaluation(labels), "validation/matthews_corrcoef", patience=2
    )
    evaluation.set_params({"epochs": 5})
    evaluation.set_model(model)
    for epoch in range(3):
        evaluation.on_epoch_end(epoch, {"loss": 1.0})
        assert not getattr(model, "stop_training", False)
    assert evaluation.stopped_at_epoch is None
    evaluation.on_epoch_end(3, {"loss": 1.0})  # epoch 4: 2 after the best
    assert model.stop_training and evaluation.stopped_at_epoch == 4
    # A run resumed from this history knows it had stopped.
    resumed = EpochEvaluation(
        cola_evaluation(labels),
        "validation/matthews_corrcoef",
        patience=2,
        history=json.loads(json.dumps(evaluation.history())),
    )
    assert resumed.stopped_at_epoch == 4
    # The last epoch ends training anyway: not an early stop.
    last = EpochEvaluation(
        cola_evaluation(labels), "validation/matthews_corrcoef", patience=1
    )
    last.set_params({"epochs": 2})
    last.set_model(ScriptedModel([best, worse]))
    run_epochs(last, last.model, 2)
    assert last.stopped_at_epoch is None
    with pytest.raises(ValueError, match="patience"):
        EpochEvaluation(cola_evaluation(labels), "a/b", patience=0)
