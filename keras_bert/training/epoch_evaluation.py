"""Evaluates a model on whole eval sets every epoch; keeps the best."""

import math
import time

import keras
import tensorflow as tf
from absl import logging

from keras_bert import files

MONITOR_MODES = ("max", "min")


class EpochEvaluation(keras.callbacks.Callback):
    """Scores a task's metrics at every epoch end and saves the best weights.

    `evaluate(model)` computes the metrics over every eval split in full
    (a batch average would be wrong for F1, Matthews correlation, the
    correlations or SQuAD's exact match); it returns
    `{split: {metric: value}}`. The `monitor` metric picks the best
    epoch, whose weights go to `best_weights_path`. Each epoch's scores
    are added to the Keras logs (`<split>_<metric>`) and written, with
    the best epoch, to `history_path`, which a resumed run passes back in
    as `history`.

    Args:
        evaluate: callable. Takes the model, returns a dict split name →
            metric name → number (numpy scalars are fine).
        monitor: str. `"<split>/<metric>"`, e.g.
            `"validation_matched/accuracy"`.
        mode: str. `"max"` if a higher `monitor` is better, `"min"` if a
            lower one is. Defaults to `"max"`.
        best_weights_path: str or `None`. Where to save the best weights
            (`.weights.h5`).
        history_path: str or `None`. A JSON file for the history (any path
            `tf.io.gfile` accepts).
        history: dict or `None`. A history read back from `history_path`
            to continue after a restart.

    Example:
    ```python
    def evaluate(model):
        logits = model.predict(dev_features, verbose=0)
        return {"validation": {"accuracy": np.mean(
            logits.argmax(-1) == dev_labels)}}

    evaluation = EpochEvaluation(
        evaluate, "validation/accuracy",
        best_weights_path="run/best.weights.h5",
    )
    classifier.fit(train_dataset, epochs=3, callbacks=[evaluation])
    evaluation.best  # {"epoch": 2, "metrics": {"validation": {...}}, ...}
    ```
    """

    def __init__(
        self,
        evaluate,
        monitor,
        mode="max",
        best_weights_path=None,
        history_path=None,
        history=None,
    ):
        super().__init__()
        split, _, metric = monitor.partition("/")
        if not split or not metric:
            raise ValueError(
                "Received an invalid value for argument `monitor`, expected "
                f"'<split>/<metric>'. Received: monitor={monitor!r}"
            )
        if mode not in MONITOR_MODES:
            raise ValueError(
                "Received an invalid value for argument `mode`, expected one "
                f"of {MONITOR_MODES}. Received: mode={mode!r}"
            )
        self.evaluate = evaluate
        self.monitor = monitor
        self.mode = mode
        self.monitor_split = split
        self.monitor_metric = metric
        self.best_weights_path = best_weights_path
        self.history_path = history_path
        history = history or {}
        self.epochs = list(history.get("epochs", []))
        self.best = history.get("best")
        self._epoch_start = time.time()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        evaluation_start = time.time()
        results = {
            split: {name: _number(value) for name, value in metrics.items()}
            for split, metrics in self.evaluate(self.model).items()
        }
        if logs is not None:
            for split, metrics in results.items():
                for name, value in metrics.items():
                    logs[f"{split}_{name}"] = value
        entry = {
            "epoch": epoch + 1,
            "loss": None if logs is None else _number(logs.get("loss")),
            "metrics": results,
            "seconds": round(time.time() - self._epoch_start, 1),
            "train_seconds": round(evaluation_start - self._epoch_start, 1),
            "eval_seconds": round(time.time() - evaluation_start, 1),
        }
        # A restarted epoch replaces the record its crashed run left.
        self.epochs = [e for e in self.epochs if e["epoch"] != epoch + 1]
        self.epochs.append(entry)
        score = self._score(entry)
        if score == -math.inf:
            logging.warning(
                "Epoch %d: the monitored %s is %s, not a number (e.g. the "
                "Pearson correlation of constant predictions). The best "
                "epoch is chosen among the epochs where it is a number; "
                "if there is none, it is the first.",
                epoch + 1,
                self.monitor,
                _monitored(entry, self.monitor_split, self.monitor_metric),
            )
        if self.best is None or score > self._score(self.best):
            self.best = entry
            if self.best_weights_path:
                self.model.save_weights(self.best_weights_path)
        if self.history_path:
            # Written whole, then renamed: a crash never leaves half a file.
            files.write_json(self.history_path + ".tmp", self.history())
            tf.io.gfile.rename(
                self.history_path + ".tmp", self.history_path, overwrite=True
            )

    def history(self):
        """Every epoch's metrics and the best epoch, JSON-ready."""
        return {
            "monitor": self.monitor,
            "epochs": self.epochs,
            "best": self.best,
        }

    def _score(self, entry):
        """The entry's monitored value, higher is better; `-inf` if none."""
        if entry is None:
            return -math.inf
        metrics = entry["metrics"].get(self.monitor_split, {})
        if self.monitor_metric not in metrics:
            raise ValueError(
                f"The monitored metric {self.monitor!r} is not among the "
                f"evaluation's results: {_names(entry['metrics'])}. Pass a "
                "`monitor` that `evaluate` returns."
            )
        value = metrics[self.monitor_metric]
        if value is None or math.isnan(value):
            return -math.inf
        return value if self.mode == "max" else -value


def _monitored(entry, split, metric):
    return entry["metrics"].get(split, {}).get(metric)


def _names(results):
    return [
        f"{split}/{name}"
        for split, values in results.items()
        for name in values
    ]


def _number(value):
    return None if value is None else float(value)
