"""Evaluates a model on whole eval sets every epoch; keeps the best."""

import math
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.validation import check_positive_int

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
    as `history`. With `patience`, training stops once the `monitor`
    metric has not improved for `patience` epochs (counted from the epoch
    numbers, so a resumed run counts the epochs of its history); the best
    weights stay in `best_weights_path`, and `stopped_at_epoch` says where
    it stopped. The best weights are saved without the optimizer's state
    (`save_weights_only`): a file the size of the model.

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
        patience: int or `None`. Stop training after this many epochs
            without a better `monitor`; `None` (the default) never stops.
        weights_model: a `keras.Model` or `None`. The model whose weights
            are saved as the best (e.g. a distiller's student); `None`
            (the default): the model being trained.

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
        patience=None,
        weights_model=None,
    ):
        super().__init__()
        if patience is not None:
            check_positive_int("patience", patience)
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
        self.weights_model = weights_model
        self.history_path = history_path
        history = history or {}
        self.epochs = list(history.get("epochs", []))
        self.best = history.get("best")
        self.patience = patience
        self.stopped_at_epoch = history.get("stopped_at_epoch")
        self._epoch_start = time.time()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.time()

    def on_epoch_end(self, epoch, logs=None):
        evaluation_start = time.time()
        # The epoch's training logs (losses, metrics), before eval's join.
        train_logs = {
            name: _number(value)
            for name, value in (logs or {}).items()
            if np.ndim(value) == 0
        }
        results = {
            split: {name: _number(value) for name, value in metrics.items()}
            for split, metrics in self.evaluate(self.model).items()
        }
        if logs is not None:
            for split, metrics in results.items():
                for name, value in metrics.items():
                    if value is not None:  # TensorBoard takes numbers
                        logs[f"{split}_{name}"] = value
        entry = {
            "epoch": epoch + 1,
            "loss": None if logs is None else _number(logs.get("loss")),
            "train_logs": train_logs,
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
                save_weights_only(
                    self.weights_model or self.model, self.best_weights_path
                )
        if (
            self.patience
            and epoch + 1 - self.best["epoch"] >= self.patience
            and epoch + 1 < (self.params or {}).get("epochs", math.inf)
        ):
            logging.info(
                "Epoch %d: no better %s for %d epochs (best: epoch %d); "
                "stopping early.",
                epoch + 1,
                self.monitor,
                self.patience,
                self.best["epoch"],
            )
            self.stopped_at_epoch = epoch + 1
            self.model.stop_training = True
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
            "stopped_at_epoch": self.stopped_at_epoch,
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


def save_weights_only(model, path):
    """Saves `model`'s weights to `path` (`.weights.h5`), not its
    optimizer's: Keras' `model.save_weights` saves a compiled model's
    optimizer variables too (AdamW's two moments: twice the weights).

    Args:
        model: a built `keras.Model`.
        path: str. A `.weights.h5` path (any path `tf.io.gfile` accepts).

    Example:
    ```python
    save_weights_only(classifier, "run/best.weights.h5")
    ```
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:  # nothing to leave out
        model.save_weights(path)
    else:
        keras.saving.save_weights(model, path, objects_to_skip=[optimizer])


def load_weights_only(model, path):
    """Loads weights `save_weights_only` saved, leaving the optimizer's
    state as it is (Keras would warn that the file has none).

    Args:
        model: a built `keras.Model`.
        path: str. A `.weights.h5` path.

    Example:
    ```python
    load_weights_only(classifier, "run/best.weights.h5")
    ```
    """
    optimizer = getattr(model, "optimizer", None)
    skip = None if optimizer is None else [optimizer]
    model.load_weights(path, objects_to_skip=skip)


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
