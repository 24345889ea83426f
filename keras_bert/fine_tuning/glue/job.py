"""A GLUE task as a `FineTuningJob`: its data, metrics and submissions."""

import os

import tensorflow as tf
from absl import logging

from keras_bert.data.packed_batches import predict_packed
from keras_bert.fine_tuning.glue.dataset import glue_dataset
from keras_bert.fine_tuning.glue.dataset import preprocess_glue_splits
from keras_bert.fine_tuning.glue.loader import load_glue
from keras_bert.fine_tuning.glue.loader import split_holdout
from keras_bert.fine_tuning.glue.metrics import compute_glue_metrics
from keras_bert.fine_tuning.glue.submission import write_glue_submission
from keras_bert.fine_tuning.glue.tasks import get_glue_task
from keras_bert.fine_tuning.glue.tfds import GlueDataNotFoundError
from keras_bert.fine_tuning.glue.tsv import glue_split_path
from keras_bert.fine_tuning.job import FineTuningJob
from keras_bert.validation import check_rate


class GlueFineTuning(FineTuningJob):
    """Fine-tuning on one GLUE task (`keras_bert.fine_tuning.run_fine_tuning`).

    Reads the task's train, dev and test splits (from a GLUE directory's
    TSV files, or from TFDS), packs every split's texts in one pass of the
    tokenizer, scores each dev split with GLUE's metrics over the whole
    split after every epoch (the task's first metric on its first dev
    split picks the best epoch), and writes GLUE submission files for the
    test splits that are there (`submissions/MNLI-m.tsv`, ...; `mnli` also
    writes `AX.tsv`). Missing test files are skipped and listed in
    `results.json`'s `submissions_skipped`.

    Args:
        task: `GlueTask` or str. `"ax"` trains on MNLI and predicts the
            diagnostic set.
        model_fn: callable. Takes the `GlueTask` to train on (MNLI for
            `ax`) and returns `(model, preprocessor)`: a classifier with
            `task.num_classes` outputs (1: a regressor, for STS-B) and the
            `keras_bert.BertPreprocessor` it reads text with.
        data_dir: str or `None`. A GLUE directory (`CoLA/`, `MNLI/`, ...);
            `None` reads TFDS's `glue/<task>`.
        tfds_data_dir: str or `None`. TFDS's data directory.
        holdout_fraction: float. If more than 0, this share of the train
            split (a fixed split, seed 0) is held out and evaluated
            instead of the dev files (e.g. MRPC without its dev file).
        eval_batch_size: int. Batch size to predict with.
        group_by_length: bool. Train on batches of like-length examples
            (`glue_dataset(group_by_length=True)`, as the NER task does):
            each batch is cut to its longest example, so short-sentence
            tasks compute far less padding.

    Example:
    ```python
    def model_fn(task):
        model, tokenizer = keras_bert.fine_tuning.load_task_model(
            keras_bert.BertClassifier, init_checkpoint=checkpoint,
            num_classes=task.num_classes,
        )
        return model, keras_bert.BertPreprocessor(tokenizer, 128)

    keras_bert.fine_tuning.run_fine_tuning(
        GlueFineTuning("rte", model_fn, data_dir="glue"), "runs/rte"
    )
    ```
    """

    def __init__(
        self,
        task,
        model_fn,
        data_dir=None,
        tfds_data_dir=None,
        holdout_fraction=0.0,
        eval_batch_size=64,
        group_by_length=True,
    ):
        check_rate("holdout_fraction", holdout_fraction)
        self.task = get_glue_task(task) if isinstance(task, str) else task
        self.train_task = get_glue_task(
            self.task.training_task or self.task.name
        )
        self.model_fn = model_fn
        self.data_dir = data_dir
        self.tfds_data_dir = tfds_data_dir
        self.holdout_fraction = holdout_fraction
        self.eval_batch_size = eval_batch_size
        self.group_by_length = group_by_length
        self.preprocessor = None
        self._features = None

    @property
    def name(self):
        return self.task.name

    @property
    def monitor(self):
        if self.holdout_fraction:
            split = "holdout"
        else:
            split = self.train_task.eval_splits[0]
        return f"{split}/{self.train_task.metrics[0]}"

    def load_data(self):
        self.train = self._load(self.train_task, "train")
        if self.holdout_fraction:
            self.train, holdout = split_holdout(
                self.train, self.holdout_fraction
            )
            self.eval_sets = {"holdout": holdout}
        else:
            self.eval_sets = {
                split: self._load(self.train_task, split)
                for split in self.train_task.eval_splits
            }
        self.test_sets, self.skipped_tests = self._load_test_sets()
        logging.info(
            "%s: %d training examples; eval %s; test %s",
            self.train_task.name,
            len(self.train["label"]),
            {split: len(e["label"]) for split, e in self.eval_sets.items()},
            [f"{task.name}/{split}" for task, split, _ in self.test_sets],
        )

    def build_model(self):
        model, self.preprocessor = self.model_fn(self.train_task)
        self._features = None
        return model, self.preprocessor

    @property
    def num_train_examples(self):
        return len(self.train["label"])

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        return glue_dataset(
            self._packed()["train"],
            self.train["label"],
            batch_size,
            shuffle=True,
            seed=seed,
            first_epoch=first_epoch,
            num_epochs=num_epochs,
            group_by_length=self.group_by_length,
        )

    def evaluate(self, model):
        features = self._packed()["eval"]
        results = {}
        for split, examples in self.eval_sets.items():
            outputs = predict_packed(
                model, features[split], self.eval_batch_size
            )
            results[split] = compute_glue_metrics(
                self.train_task, examples["label"], outputs
            )
        return results

    def write_outputs(self, model, directory):
        submissions = {}
        for (task, split, examples), features in zip(
            self.test_sets, self._packed()["test"]
        ):
            outputs = predict_packed(model, features, self.eval_batch_size)
            path = write_glue_submission(
                task,
                split,
                examples["idx"],
                outputs,
                os.path.join(directory, "submissions"),
            )
            submissions[f"{task.name}/{split}"] = path
            logging.info("Wrote %s", path)
        return {
            "submissions": submissions,
            "submissions_skipped": self.skipped_tests,
        }

    def export_options(self):
        return {
            "labels": self.train_task.label_names,
            "pair": len(self.train_task.text_features) == 2,
        }

    def results_extras(self):
        return {
            "training_task": self.train_task.name,
            "num_eval_examples": {
                split: int(len(examples["label"]))
                for split, examples in self.eval_sets.items()
            },
        }

    def _load(self, task, split):
        return load_glue(task, split, self.data_dir, self.tfds_data_dir)

    def _load_test_sets(self):
        """The test splits there are; missing test files are skipped."""
        wanted = [(self.task, split) for split in self.task.test_splits]
        if self.task.name == "mnli":  # GLUE scores AX with the MNLI model.
            wanted.append((get_glue_task("ax"), "test"))
        test_sets, skipped = [], {}
        for task, split in wanted:
            name = f"{task.name}/{split}"
            if self.data_dir:
                path = glue_split_path(task, split, self.data_dir)
                if not tf.io.gfile.exists(path):
                    skipped[name] = f"no file {path}"
                    logging.warning("No %s; skipping its submission.", path)
                    continue
            try:
                examples = self._load(task, split)
            except GlueDataNotFoundError as error:
                skipped[name] = str(error).splitlines()[0]
                logging.warning("Skipping %s: %s", name, skipped[name])
                continue
            test_sets.append((task, split, examples))
        return test_sets, skipped

    def _packed(self):
        """Every split's model inputs, packed in one tokenizer pass."""
        if self._features is None:
            if self.preprocessor is None:
                raise ValueError(
                    "GlueFineTuning has no preprocessor yet: call "
                    "`build_model()` (run_fine_tuning does) first."
                )
            # One pass: the tokenizer's graph is built once.
            packed = preprocess_glue_splits(
                [(self.train_task, self.train)]
                + [(self.train_task, e) for e in self.eval_sets.values()]
                + [(task, e) for task, _, e in self.test_sets],
                self.preprocessor,
            )
            num_eval = len(self.eval_sets)
            self._features = {
                "train": packed[0],
                "eval": dict(zip(self.eval_sets, packed[1 : 1 + num_eval])),
                "test": packed[1 + num_eval :],
            }
        return self._features
