"""Evaluates a GLUE model on whole eval sets every epoch; keeps the best."""

import json
import math
import os
import time

import keras

from keras_bert.data.glue import get_glue_task
from keras_bert.data.glue_metrics import compute_glue_metrics


class GlueEvaluation(keras.callbacks.Callback):
    """Scores GLUE's metrics at every epoch end and saves the best weights.

    Predicts every eval split in full and computes the task's metrics
    over all of it (a batch average would be wrong for F1, Matthews and
    the correlations). The task's first metric on the first eval split
    picks the best epoch, whose weights go to `best_weights_path`. Each
    epoch's scores are added to the Keras logs (`<split>_<metric>`) and
    written, with the best epoch, to `history_path`, which a resumed run
    passes back in as `history`.

    Args:
        task: `GlueTask` or str.
        eval_data: dict. Split name → `(inputs, labels)`: the model's
            inputs (a dict of arrays, e.g. from `preprocess_glue`, or a
            dataset, whose labels are ignored) and the numpy labels in the
            same order.
        batch_size: int or `None`. Batch size to predict arrays with.
        best_weights_path: str or `None`. Where to save the best weights
            (`.weights.h5`).
        history_path: str or `None`. A JSON file for the history.
        history: dict or `None`. A history read back from `history_path`
            to continue after a restart.

    Example:
    ```python
    evaluation = GlueEvaluation(
        "rte", {"validation": (dev_features, dev["label"])},
        best_weights_path="run/best.weights.h5",
    )
    classifier.fit(train_dataset, epochs=3, callbacks=[evaluation])
    evaluation.best  # {"epoch": 2, "metrics": {"validation": {...}}}
    ```
    """

    def __init__(
        self,
        task,
        eval_data,
        batch_size=None,
        best_weights_path=None,
        history_path=None,
        history=None,
    ):
        super().__init__()
        if not eval_data:
            raise ValueError("Expected at least one eval split. Received none.")
        self.task = get_glue_task(task) if isinstance(task, str) else task
        self.eval_data = eval_data
        self.batch_size = batch_size
        self.monitor_split = next(iter(eval_data))
        self.monitor_metric = self.task.metrics[0]
        self.best_weights_path = best_weights_path
        self.history_path = history_path
        history = history or {}
        self.epochs = list(history.get("epochs", []))
        self.best = history.get("best")
        self._epoch_start = time.time()

    def evaluate(self):
        """Metrics of the current weights: split → metric → value."""
        results = {}
        for split, (inputs, labels) in self.eval_data.items():
            outputs = self.model.predict(
                inputs, batch_size=self.batch_size, verbose=0
            )
            results[split] = compute_glue_metrics(self.task, labels, outputs)
        return results

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        results = self.evaluate()
        if logs is not None:
            for split, metrics in results.items():
                for name, value in metrics.items():
                    logs[f"{split}_{name}"] = value
        entry = {
            "epoch": epoch + 1,
            "loss": None if logs is None else _number(logs.get("loss")),
            "metrics": results,
            "seconds": round(time.time() - self._epoch_start, 1),
        }
        # A restarted epoch replaces the record its crashed run left.
        self.epochs = [e for e in self.epochs if e["epoch"] != epoch + 1]
        self.epochs.append(entry)
        if self._score(entry) > self._score(self.best):
            self.best = entry
            if self.best_weights_path:
                self.model.save_weights(self.best_weights_path)
        if self.history_path:
            with open(self.history_path + ".tmp", "w") as f:
                json.dump(self.history(), f, indent=2)
            os.replace(self.history_path + ".tmp", self.history_path)

    def history(self):
        """Every epoch's metrics and the best epoch, JSON-ready."""
        return {
            "monitor": f"{self.monitor_split}/{self.monitor_metric}",
            "epochs": self.epochs,
            "best": self.best,
        }

    def _score(self, entry):
        if entry is None:
            return -math.inf
        value = entry["metrics"][self.monitor_split][self.monitor_metric]
        return -math.inf if math.isnan(value) else value


def _number(value):
    return None if value is None else float(value)
