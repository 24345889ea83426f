"""GlueEvaluation: whole-set metrics each epoch, best weights kept."""

import json

import numpy as np

from keras_bert.training.glue_evaluation import GlueEvaluation


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


def test_keeps_the_best_epoch_and_writes_the_history(tmp_path):
    labels = np.array([1, 0, 1, 1, 0, 0])
    model = ScriptedModel(
        [
            logits([1, 0, 0, 0, 1, 0]),  # epoch 1: MCC 0.0
            logits([1, 0, 1, 1, 0, 1]),  # epoch 2: MCC 0.707
            logits([1, 1, 0, 0, 1, 1]),  # epoch 3: worse again
        ]
    )
    evaluation = GlueEvaluation(
        "cola",
        {"validation": ({"token_ids": np.zeros((6, 4))}, labels)},
        best_weights_path=str(tmp_path / "best.weights.h5"),
        history_path=str(tmp_path / "history.json"),
    )
    evaluation.set_model(model)
    for epoch in range(3):
        logs = {"loss": 1.0 / (epoch + 1)}
        evaluation.on_epoch_begin(epoch)
        evaluation.on_epoch_end(epoch, logs)
    assert "validation_matthews_corrcoef" in logs
    assert evaluation.best["epoch"] == 2
    assert model.saved == [str(tmp_path / "best.weights.h5")] * 2
    with open(tmp_path / "history.json") as f:
        history = json.load(f)
    assert history["monitor"] == "validation/matthews_corrcoef"
    assert [e["epoch"] for e in history["epochs"]] == [1, 2, 3]
    mcc = history["best"]["metrics"]["validation"]["matthews_corrcoef"]
    assert abs(mcc - 0.7071) < 1e-3


def test_a_restarted_epoch_replaces_its_record():
    labels = np.array([0, 1])
    evaluation = GlueEvaluation(
        "rte",
        {"validation": (None, labels)},
        history={"epochs": [{"epoch": 1, "metrics": {}}], "best": None},
    )
    evaluation.set_model(ScriptedModel([logits([0, 1])]))
    evaluation.on_epoch_end(0, {"loss": 0.5})
    assert len(evaluation.epochs) == 1
    assert evaluation.epochs[0]["metrics"]["validation"]["accuracy"] == 1.0
