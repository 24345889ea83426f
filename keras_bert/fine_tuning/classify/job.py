"""Classification on a user's own files as a `FineTuningJob`."""

import json
import os

import numpy as np
from absl import logging

from keras_bert import files
from keras_bert.data.packed_batches import pack_texts
from keras_bert.data.packed_batches import packed_batches
from keras_bert.data.window_batches import pack_windows
from keras_bert.data.window_batches import window_batches
from keras_bert.fine_tuning.classify.examples import (
    read_classification_examples,
)
from keras_bert.fine_tuning.classify.predictions import probabilities_of
from keras_bert.fine_tuning.job import FineTuningJob
from keras_bert.models.labels import class_labels
from keras_bert.models.multi_hot_labels import multi_hot_labels
from keras_bert.text.document_windows import check_documents
from keras_bert.training.multi_label_metrics import multi_label_scores
from keras_bert.training.multi_label_metrics import tune_thresholds

EVAL_SPLIT = "validation"


class ClassificationFineTuning(FineTuningJob):
    """Fine-tuning a classifier on a train file, scored on an eval file.

    Reads both files (`read_classification_examples`: JSONL or TSV, one
    label per text or, with `multi_label`, a list), names the classes
    after the train file's labels (sorted), and trains the model
    `model_fn` builds. After every epoch it predicts the whole eval file
    and scores it: `accuracy` for a single-label classifier; `micro_f1`
    (which picks the best epoch), `macro_f1` and `subset_accuracy` at
    threshold 0.5 for a multi-label one. With the best epoch's weights, a
    multi-label model's per-label thresholds are tuned on the eval file
    (`BertClassifier.tune_thresholds`' rule), so the export and the
    saved model decide with them; `results.json` then holds the scores
    at 0.5 (`metrics`) and at the tuned thresholds (`tuned_metrics`,
    optimistic: tuned and scored on the same file). Writes
    `predictions_<split>.jsonl` (text, gold, predicted, probabilities).

    Long documents: a model built with `doc_stride`
    (`BertClassifier(..., doc_stride=N)`) reads every text whole, in
    windows. The job then cuts each file's texts into the model's windows
    once (`keras_bert.data.pack_windows`) and trains on batches of
    `batch_size` documents with all their windows
    (`keras_bert.data.window_batches`, shuffled and length-grouped per
    epoch as texts are, so a resumed run replays the same batches); the
    labels, metrics, predictions and the export are per document, as the
    model's `fit`, `predict` and export are. Single texts only, none
    empty: sentence pairs or an empty text are refused by `build_model`,
    naming the file.

    Args:
        train_file: str. The training examples.
        eval_file: str. The examples scored every epoch.
        model_fn: callable `(job) -> (model, preprocessor)`: a
            `keras_bert.BertClassifier` with `len(job.label_names)`
            classes, `label_names=job.label_names` and
            `multi_label=job.multi_label` (and `doc_stride` to read long
            texts in windows), and the `keras_bert.BertPreprocessor` it
            reads text with (its `sequence_length` is the window's).
        multi_label: bool. Several labels per text. Defaults to `False`.
        tune_thresholds: bool. With `multi_label`, tune each label's
            threshold on the eval file at the end. Defaults to `True`.
        eval_batch_size: int. Batch size to predict with.
        group_by_length: bool. Train on batches of like-length texts
            (each cut to its longest row; documents read in windows: of
            like token counts, cut to their most windows). Defaults to
            `True`.

    Example:
    ```python
    def model_fn(job):
        model, tokenizer = keras_bert.fine_tuning.load_task_model(
            keras_bert.BertClassifier, init_checkpoint=checkpoint,
            num_classes=len(job.label_names), label_names=job.label_names,
            multi_label=job.multi_label,
        )
        return model, keras_bert.BertPreprocessor(tokenizer, 128)

    job = ClassificationFineTuning(
        "train.jsonl", "dev.jsonl", model_fn, multi_label=True
    )
    keras_bert.fine_tuning.run_fine_tuning(job, "runs/tags")
    ```
    """

    name = "classify"

    def __init__(
        self,
        train_file,
        eval_file,
        model_fn,
        multi_label=False,
        tune_thresholds=True,
        eval_batch_size=64,
        group_by_length=True,
    ):
        self.train_file = train_file
        self.eval_file = eval_file
        self.model_fn = model_fn
        self.multi_label = bool(multi_label)
        self.tune_thresholds = bool(tune_thresholds)
        self.eval_batch_size = eval_batch_size
        self.group_by_length = group_by_length
        self.preprocessor = None
        self.label_names = None
        self._windows = None
        self._features = None

    @property
    def monitor(self):
        metric = "micro_f1" if self.multi_label else "accuracy"
        return f"{EVAL_SPLIT}/{metric}"

    @property
    def pair(self):
        """Whether the files hold sentence pairs (`text_a`, `text_b`)."""
        return len(self.train.texts) == 2

    def load_data(self):
        self.train = read_classification_examples(
            self.train_file, self.multi_label
        )
        self.eval_sets = {
            EVAL_SPLIT: read_classification_examples(
                self.eval_file, self.multi_label
            )
        }
        self.label_names = self.train.label_set
        for split, examples in self.eval_sets.items():
            if len(examples.texts) != len(self.train.texts):
                raise ValueError(
                    f"{examples.path} holds "
                    f"{_layout(examples)} but {self.train_file} "
                    f"{_layout(self.train)}. Give both files the same "
                    "text fields."
                )
            unseen = sorted(set(examples.label_set) - set(self.label_names))
            if unseen:
                raise ValueError(
                    f"{examples.path} has labels the training file "
                    f"{self.train_file} never has: {unseen}. A classifier "
                    "learns only the train file's labels "
                    f"({self.label_names}); add examples of these to it, "
                    "or drop them from the eval file."
                )
        if not self.multi_label and len(self.label_names) < 2:
            raise ValueError(
                f"{self.train_file} has one label only "
                f"({self.label_names}): nothing to choose between. A "
                "single-label classifier needs examples of at least two "
                "labels."
            )
        self.train_labels = self._label_array(self.train)
        self.eval_labels = {
            split: self._label_array(examples)
            for split, examples in self.eval_sets.items()
        }
        logging.info(
            "%d training examples, %s eval; %d labels%s: %s",
            len(self.train),
            {split: len(e) for split, e in self.eval_sets.items()},
            len(self.label_names),
            " (multi-label)" if self.multi_label else "",
            self.label_names,
        )

    def build_model(self):
        model, self.preprocessor = self.model_fn(self)
        self._windows = self._document_windows(model)
        self._features = None
        return model, self.preprocessor

    @property
    def num_train_examples(self):
        return len(self.train)

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        return self._batches(
            self._packed()["train"],
            self.train_labels,
            batch_size,
            shuffle=True,
            seed=seed,
            first_epoch=first_epoch,
            num_epochs=num_epochs,
            group_by_length=self.group_by_length,
        )

    def evaluate(self, model, thresholds=None):
        """`{split: metrics}`; multi-label at `thresholds` (default the
        model's)."""
        results = {}
        for split in self.eval_sets:
            probabilities = self.probabilities(model, split)
            results[split] = self._scores(
                split, probabilities, thresholds or _thresholds(model)
            )
        return results

    def probabilities(self, model, split):
        """Class probabilities `(examples, classes)` of an eval split:
        softmax of the logits, or a multi-label model's sigmoids (one row
        per document, with windows)."""
        outputs = model.predict(
            self._batches(
                self._packed()["eval"][split], None, self.eval_batch_size
            ),
            verbose=0,
        )
        return probabilities_of(outputs, self.multi_label)

    def write_outputs(self, model, directory):
        outputs = {}
        if self.multi_label and self.tune_thresholds:
            probabilities = self.probabilities(model, EVAL_SPLIT)
            model.thresholds = tune_thresholds(
                self.eval_labels[EVAL_SPLIT], probabilities
            )
            outputs["tuned_metrics"] = {
                EVAL_SPLIT: self._scores(
                    EVAL_SPLIT, probabilities, model.thresholds
                )
            }
            logging.info(
                "Thresholds tuned on %s: %s -> %s",
                self.eval_file,
                dict(zip(self.label_names, model.thresholds)),
                outputs["tuned_metrics"],
            )
        if self.multi_label:
            outputs["thresholds"] = dict(
                zip(self.label_names, model.thresholds)
            )
        outputs["predictions"] = {
            split: self._write_predictions(model, split, directory)
            for split in self.eval_sets
        }
        return outputs

    def export_options(self):
        return {"pair": self.pair}

    def results_extras(self):
        return {
            "label_names": self.label_names,
            "multi_label": self.multi_label,
            "num_eval_examples": {
                split: len(examples)
                for split, examples in self.eval_sets.items()
            },
        }

    def _scores(self, split, probabilities, thresholds):
        labels = self.eval_labels[split]
        if self.multi_label:
            return multi_label_scores(labels, probabilities, thresholds)
        return {
            "accuracy": float(np.mean(probabilities.argmax(axis=-1) == labels))
        }

    def _label_array(self, examples):
        if self.multi_label:
            return multi_hot_labels(
                [tuple(names) for names in examples.labels],
                len(self.label_names),
                self.label_names,
                argument=f"the labels of {examples.path}",
            )
        return class_labels(
            np.array(examples.labels),
            len(self.label_names),
            self.label_names,
            argument=f"the labels of {examples.path}",
        )

    def _write_predictions(self, model, split, directory):
        examples = self.eval_sets[split]
        probabilities = self.probabilities(model, split)
        if self.multi_label:
            predicted = model.predicted_labels(probabilities)
        else:
            predicted = [
                self.label_names[i] for i in probabilities.argmax(axis=-1)
            ]
        lines = []
        for i, label in enumerate(examples.labels):
            row = {"text": examples.texts[0][i]}
            if self.pair:
                row = {
                    "text_a": examples.texts[0][i],
                    "text_b": examples.texts[1][i],
                }
            row["labels" if self.multi_label else "label"] = label
            row["predicted"] = predicted[i]
            row["probabilities"] = {
                name: round(float(p), 6)
                for name, p in zip(self.label_names, probabilities[i])
            }
            lines.append(_json_line(row))
        path = os.path.join(directory, f"predictions_{split}.jsonl")
        files.write_text(path, "".join(lines))
        logging.info("Wrote %s", path)
        return path

    @property
    def _batches(self):
        """`packed_batches`, or `window_batches` for documents read in
        windows (the same arguments)."""
        return packed_batches if self._windows is None else window_batches

    def _document_windows(self, model):
        """The `DocumentWindows` of a model built with `doc_stride`, after
        checking the files hold what windows read; else `None`."""
        doc_stride = getattr(model, "doc_stride", None)
        if doc_stride is None:
            return None
        if self.pair:
            raise ValueError(
                f"{self.train_file} holds sentence pairs (`text_a`, "
                f"`text_b`), but the model reads documents in windows "
                f"(doc_stride={doc_stride}): single texts only. Give "
                "`text` fields, or build the model without doc_stride "
                "(truncation)."
            )
        for examples in (self.train, *self.eval_sets.values()):
            check_documents(examples.texts[0], argument=examples.path)
        return model.document_windows(self.preprocessor)

    def _packed(self):
        """Every split's model inputs: texts packed in one tokenizer
        pass, or documents cut into windows (`pack_windows`' dicts)."""
        if self._features is None:
            if self.preprocessor is None:
                raise ValueError(
                    "ClassificationFineTuning has no preprocessor yet: call "
                    "`build_model()` (run_fine_tuning does) first."
                )
            if self._windows is not None:
                cut = self._windows.flat_function()
                self._features = {
                    "train": pack_windows(self.train.texts[0], cut),
                    "eval": {
                        split: pack_windows(examples.texts[0], cut)
                        for split, examples in self.eval_sets.items()
                    },
                }
                return self._features
            splits = [self.train, *self.eval_sets.values()]
            texts = tuple(
                np.concatenate([s.texts[i] for s in splits])
                for i in range(len(self.train.texts))
            )
            features = pack_texts(texts, self.preprocessor)
            ends = np.cumsum([len(s) for s in splits])
            starts = np.concatenate([[0], ends[:-1]])
            parts = [
                {name: value[start:end] for name, value in features.items()}
                for start, end in zip(starts, ends)
            ]
            self._features = {
                "train": parts[0],
                "eval": dict(zip(self.eval_sets, parts[1:])),
            }
        return self._features


def _json_line(row):
    return json.dumps(row, ensure_ascii=False) + "\n"


def _thresholds(model):
    return getattr(model, "thresholds", None) or 0.5


def _layout(examples):
    return "sentence pairs" if len(examples.texts) == 2 else "single texts"
