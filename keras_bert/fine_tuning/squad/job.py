"""SQuAD as a `FineTuningJob`: windows, span head, official scores."""

import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.fine_tuning.job import FineTuningJob
from keras_bert.fine_tuning.squad.examples import read_squad_examples
from keras_bert.fine_tuning.squad.features import INPUT_NAMES
from keras_bert.fine_tuning.squad.features import check_window_arguments
from keras_bert.fine_tuning.squad.features import squad_features
from keras_bert.fine_tuning.squad.features import trainable_examples
from keras_bert.fine_tuning.squad.metrics import squad_v1_metrics
from keras_bert.fine_tuning.squad.metrics import squad_v2_metrics
from keras_bert.fine_tuning.squad.postprocess import compute_predictions
from keras_bert.fine_tuning.squad.postprocess import write_predictions
from keras_bert.text.bert_preprocessor import BertPreprocessor


class SquadFineTuning(FineTuningJob):
    """SQuAD v1.1 / v2.0 fine-tuning (`keras_bert.fine_tuning.run_fine_tuning`).

    Reads the official JSON files, cuts every example into windows as
    `run_squad.py` does (`features.py`), trains a
    `keras_bert.BertQuestionAnswerer` on every window of the trainable
    examples (a window without the answer is labelled at `[CLS]`), and
    after every epoch predicts every window of `predict_file`, picks each
    question's answer (`postprocess.py`) and scores it with the official
    rules (`metrics.py`); the F1 on the predict file picks the best epoch.
    With the best weights, writes `predictions.json` (id → answer, what
    the official scripts read), `nbest_predictions.json` and, for v2.0,
    `null_odds.json`, and puts `exact_match` and `f1` at the top of
    `results.json`. Bad input in the files has the results
    `read_squad_examples` describes, logged when `load_data` reads them,
    before training; a question id that occurs more than once in
    `predict_file` gets one answer (its last occurrence's) and is scored
    as the official scripts score `predictions.json`.

    Args:
        model_fn: callable `() -> model`: builds the
            `keras_bert.BertQuestionAnswerer` to fine-tune (called in the
            strategy's scope).
        tokenizer: `keras_bert.BertTokenizer`. The model's tokenizer; the
            windows are made with it before the model is built.
        train_file: str. SQuAD JSON to train on.
        predict_file: str. SQuAD JSON to evaluate on (its answers score the
            predictions).
        version_2_with_negative: bool. SQuAD v2.0 (unanswerable questions).
        max_seq_length: int. Tokens per window. Defaults to `384`.
        doc_stride: int. Context tokens between window starts (not the
            overlap). Defaults to `128`.
        max_query_length: int. Question tokens kept. Defaults to `64`.
        n_best_size: int. Candidates per window and n-best length.
        max_answer_length: int. Longest answer, in tokens.
        null_score_diff_threshold: float. v2.0: predict no answer when the
            null score beats the best span by more than this.
        eval_batch_size: int. Windows per prediction batch.

    Example:
    ```python
    def model_fn():
        return keras_bert.BertQuestionAnswerer.from_checkpoint(checkpoint)

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(checkpoint)
    task = SquadFineTuning(
        model_fn, tokenizer, "train-v1.1.json", "dev-v1.1.json"
    )
    keras_bert.fine_tuning.run_fine_tuning(task, "runs/squad", epochs=2)
    ```
    """

    name = "squad"
    static_batch_shapes = True  # windows of max_seq_length

    def __init__(
        self,
        model_fn,
        tokenizer,
        train_file,
        predict_file,
        version_2_with_negative=False,
        max_seq_length=384,
        doc_stride=128,
        max_query_length=64,
        n_best_size=20,
        max_answer_length=30,
        null_score_diff_threshold=0.0,
        eval_batch_size=64,
    ):
        check_window_arguments(max_seq_length, doc_stride, max_query_length)
        self.model_fn = model_fn
        self.train_file = train_file
        self.predict_file = predict_file
        self.version_2_with_negative = version_2_with_negative
        self.windows = dict(
            max_seq_length=max_seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
        )
        self.n_best_size = n_best_size
        self.max_answer_length = max_answer_length
        self.null_score_diff_threshold = null_score_diff_threshold
        self.eval_batch_size = eval_batch_size
        self.tokenizer = tokenizer
        self._train_features = None
        self._eval_features = None

    monitor = "predict/f1"

    def load_data(self):
        read = dict(version_2_with_negative=self.version_2_with_negative)
        self.train = read_squad_examples(self.train_file, **read)
        self.predict = read_squad_examples(self.predict_file, **read)
        logging.info(
            "SQuAD: %d training questions (%s), %d to predict (%s)",
            len(self.train["id"]),
            self.train_file,
            len(self.predict["id"]),
            self.predict_file,
        )

    def build_model(self):
        model = self.model_fn()
        if self.windows["max_seq_length"] > model.backbone.max_sequence_length:
            raise ValueError(
                f"max_seq_length={self.windows['max_seq_length']} exceeds the "
                f"model's {model.backbone.max_sequence_length} positions. "
                "Lower max_seq_length."
            )
        preprocessor = BertPreprocessor(
            self.tokenizer, sequence_length=self.windows["max_seq_length"]
        )
        return model, preprocessor

    @property
    def num_train_examples(self):
        return len(self._training_windows()["token_ids"])

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        features = self._training_windows()
        windows = tf.data.Dataset.from_tensor_slices(
            (
                {name: features[name] for name in INPUT_NAMES},
                {
                    "start_logits": features["start_positions"],
                    "end_logits": features["end_positions"],
                },
            )
        )
        return shuffled_epochs(
            windows, batch_size, seed, first_epoch, num_epochs
        ).prefetch(tf.data.AUTOTUNE)

    def evaluate(self, model):
        scores, _ = self._predict_and_score(model)
        return {"predict": scores}

    def write_outputs(self, model, directory):
        scores, (predictions, nbest, null_odds) = self._predict_and_score(model)
        paths = write_predictions(directory, predictions, nbest, null_odds)
        exact_name = "exact" if self.version_2_with_negative else "exact_match"
        return {
            "exact_match": scores[exact_name],
            "f1": scores["f1"],
            "predictions": paths,
        }

    def export_options(self):
        return {
            "doc_stride": self.windows["doc_stride"],
            "max_query_length": self.windows["max_query_length"],
            "max_answer_length": self.max_answer_length,
            "n_best_size": self.n_best_size,
            "version_2_with_negative": self.version_2_with_negative,
            "null_score_diff_threshold": self.null_score_diff_threshold,
        }

    def results_extras(self):
        return {
            "version_2_with_negative": self.version_2_with_negative,
            "num_train_questions": len(self.train["id"]),
            "num_train_windows": self.num_train_examples,
            "num_predict_questions": len(self.predict["id"]),
            "num_predict_windows": len(self._evaluation_windows()["token_ids"]),
        }

    def _predict_and_score(self, model):
        features = self._evaluation_windows()
        outputs = model.predict(
            {name: features[name] for name in INPUT_NAMES},
            batch_size=self.eval_batch_size,
            verbose=0,
        )
        answers = compute_predictions(
            self.predict,
            features,
            outputs["start_logits"],
            outputs["end_logits"],
            n_best_size=self.n_best_size,
            max_answer_length=self.max_answer_length,
            version_2_with_negative=self.version_2_with_negative,
            null_score_diff_threshold=self.null_score_diff_threshold,
        )
        predictions, _, null_odds = answers
        if self.version_2_with_negative:
            scores = squad_v2_metrics(self.predict, predictions, null_odds)
        else:
            scores = squad_v1_metrics(self.predict, predictions)
        return scores, answers

    def _training_windows(self):
        if self._train_features is None:
            examples, _ = trainable_examples(self.train)
            self._train_features = squad_features(
                examples, self.tokenizer, **self.windows
            )
            with_answer = np.mean(self._train_features["start_positions"] > 0)
            logging.info(
                "SQuAD training: %d windows of %d questions, %.1f%% holding "
                "their answer",
                len(self._train_features["token_ids"]),
                len(examples["id"]),
                100 * with_answer,
            )
        return self._train_features

    def _evaluation_windows(self):
        if self._eval_features is None:
            self._eval_features = squad_features(
                self.predict, self.tokenizer, **self.windows
            )
        return self._eval_features
