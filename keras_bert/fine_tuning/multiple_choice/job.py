"""Multiple choice as a `FineTuningJob`: SWAG-layout or JSONL files."""

import hashlib
import json

import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.data.holdout import holdout_record
from keras_bert.data.holdout import holdout_split
from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.fine_tuning.job import FineTuningJob
from keras_bert.fine_tuning.multiple_choice.examples import read_multiple_choice
from keras_bert.fine_tuning.multiple_choice.predictions import (
    packed_probabilities,
)
from keras_bert.models.choice_inputs import pack_choices
from keras_bert.models.choice_inputs import trim_choices


class MultipleChoiceFineTuning(FineTuningJob):
    """Fine-tuning a `keras_bert.BertMultipleChoice` on files of examples.

    Reads the training file and, if given, the evaluation file
    (`read_multiple_choice`: SWAG's CSV layout or JSONL; the two may have
    different numbers of choices), packs every `(context, choice)` pair
    once, trains on batches shuffled per epoch from the run's seed (each
    cut to its longest row) and scores the accuracy over the whole eval
    file after every epoch (`validation/accuracy` picks the best epoch).
    Without an eval file a seeded `holdout_fraction` of the training
    file's rows is held out of training and scored instead
    (`keras_bert.data.holdout.holdout_split`): never the rows trained
    on. Writes
    `predictions_validation.jsonl`: per eval example the chosen index, the
    label and the probabilities.

    Args:
        train_file: str. Training examples.
        model_fn: callable. Returns `(model, preprocessor)`: a
            `keras_bert.BertMultipleChoice` and the
            `keras_bert.BertPreprocessor` that packs its pairs.
        eval_file: str or `None`. Evaluation examples; `None`: rows held
            out of `train_file`.
        eval_batch_size: int. Examples per batch to predict.
        holdout_fraction: float in `(0, 1)`. Without `eval_file`, the
            share of the training rows held out. Defaults to `0.1`.
        seed: int. The seed of the held-out draw. Defaults to `0`.

    Example:
    ```python
    def model_fn():
        model, tokenizer = keras_bert.fine_tuning.load_task_model(
            keras_bert.BertMultipleChoice, init_checkpoint=checkpoint
        )
        return model, keras_bert.BertPreprocessor(tokenizer, 128)

    keras_bert.fine_tuning.run_fine_tuning(
        MultipleChoiceFineTuning("train.csv", model_fn, "val.csv"), "runs/mc"
    )
    ```
    """

    name = "multiple_choice"

    def __init__(
        self,
        train_file,
        model_fn,
        eval_file=None,
        eval_batch_size=64,
        holdout_fraction=0.1,
        seed=0,
    ):
        self.train_file = train_file
        self.holdout_fraction = holdout_fraction
        self.seed = seed
        self.holdout = None
        self.train = None
        self.model_fn = model_fn
        self.eval_file = eval_file
        self.eval_batch_size = eval_batch_size
        self.preprocessor = None
        self._features = None
        self._last_probabilities = None

    monitor = "validation/accuracy"

    def load_data(self):
        if self.train is not None:
            return  # read already (a recipe reads first, then the runner)
        self.train = read_multiple_choice(self.train_file)
        if self.eval_file:
            evaluation = read_multiple_choice(self.eval_file)
        else:
            total = len(self.train["labels"])
            train, held_out = holdout_split(
                total, self.holdout_fraction, self.seed
            )
            self.holdout = holdout_record(
                len(train),
                len(held_out),
                self.holdout_fraction,
                self.seed,
                self.train_file,
            )
            evaluation = {k: v[held_out] for k, v in self.train.items()}
            self.train = {k: v[train] for k, v in self.train.items()}
        self.eval_sets = {"validation": evaluation}
        logging.info(
            "multiple choice: %d training examples of %d choices; eval %s",
            len(self.train["labels"]),
            self.train["choices"].shape[1],
            {split: len(e["labels"]) for split, e in self.eval_sets.items()},
        )

    def build_model(self):
        model, self.preprocessor = self.model_fn()
        self._features = None
        return model, self.preprocessor

    @property
    def num_train_examples(self):
        return len(self.train["labels"])

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        examples = tf.data.Dataset.from_tensor_slices(
            (self._packed()["train"], self.train["labels"])
        )
        return shuffled_epochs(
            examples, batch_size, seed, first_epoch, num_epochs
        ).map(lambda inputs, labels: (trim_choices(inputs), labels))

    def evaluate(self, model):
        return {
            split: {
                "accuracy": float(
                    np.mean(
                        self.probabilities(model, split).argmax(-1)
                        == examples["labels"]
                    )
                )
            }
            for split, examples in self.eval_sets.items()
        }

    def probabilities(self, model, split):
        """Softmax over the choices of every example of `split`.

        The last result is kept with the head's weights it came from, so
        that `write_outputs` (the best epoch's weights, most often the
        last evaluated) does not predict the split again.
        """
        key = (split, _weights_digest(model))
        if self._last_probabilities is not None:
            if self._last_probabilities[0] == key:
                return self._last_probabilities[1]
        probabilities = packed_probabilities(
            model, self._packed()[split], self.eval_batch_size
        )
        self._last_probabilities = (key, probabilities)
        return probabilities

    def write_outputs(self, model, directory):
        if "validation" not in self.eval_sets:
            return {}
        probabilities = self.probabilities(model, "validation")
        labels = self.eval_sets["validation"]["labels"]
        lines = [
            json.dumps(
                {
                    "choice": int(row.argmax()),
                    "label": int(label),
                    "probabilities": [round(float(p), 6) for p in row],
                }
            )
            for row, label in zip(probabilities, labels)
        ]
        path = files.join(directory, "predictions_validation.jsonl")
        files.write_text(path, "\n".join(lines) + "\n")
        return {"predictions": {"validation": path}}

    def results_extras(self):
        return {
            "num_choices": int(self.train["choices"].shape[1]),
            "holdout": self.holdout,
            "num_eval_examples": {
                split: int(len(examples["labels"]))
                for split, examples in self.eval_sets.items()
            },
        }

    def _packed(self):
        """Every file's pairs, packed once."""
        if self._features is None:
            if self.preprocessor is None:
                raise ValueError(
                    "MultipleChoiceFineTuning has no preprocessor yet: call "
                    "`build_model()` (run_fine_tuning does) first."
                )
            splits = {"train": self.train, **self.eval_sets}
            self._features = {
                split: pack_choices(
                    self.preprocessor, examples["contexts"], examples["choices"]
                )
                for split, examples in splits.items()
            }
        return self._features


def _weights_digest(model):
    """A digest of the model's trainable weights (they change every
    step, so equal digests mean the same weights)."""
    digest = hashlib.sha1()
    for variable in model.trainable_variables:
        digest.update(np.asarray(variable.numpy()).tobytes())
    return digest.hexdigest()
