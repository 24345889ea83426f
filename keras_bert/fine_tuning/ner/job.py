"""Token classification (NER) as a `FineTuningJob`."""

import collections
import os

from absl import logging

from keras_bert.fine_tuning.job import FineTuningJob
from keras_bert.fine_tuning.ner.conll import label_list
from keras_bert.fine_tuning.ner.conll import read_conll
from keras_bert.fine_tuning.ner.conll import write_conll_predictions
from keras_bert.text.bert_preprocessor import BertPreprocessor
from keras_bert.training.ner_features import default_stride
from keras_bert.training.ner_features import ner_features
from keras_bert.training.ner_features import training_batches
from keras_bert.training.ner_features import window_logits
from keras_bert.training.ner_features import word_predictions
from keras_bert.training.ner_metrics import entity_scores


class NerFineTuning(FineTuningJob):
    """Named-entity recognition (any BIO tagging), for `run_fine_tuning`.

    Reads CoNLL column files (`conll.read_conll`: IOB1, IOB2 or IOBES on
    disk, IOB2 in the model), takes the label set from the training file,
    and trains a `keras_bert.BertTokenClassifier` on every window of every
    training sentence (`features.py`: labels on each word's first
    sub-token). After every epoch it predicts every word of every eval
    file once and scores the entities as `conlleval` does
    (`metrics.entity_scores`); the validation F1 picks the best epoch.
    With the best weights it writes `predictions_<split>.txt` (`token gold
    predicted`, what `conlleval` reads). A file without a single sentence
    is refused by `load_data`, before any model is built.

    Training batches are cut to their longest window (rounded up to 8), so
    short sentences cost little, the less so with `group_by_length`.

    Args:
        model_fn: callable `(labels) -> model`: builds the
            `keras_bert.BertTokenClassifier` with `len(labels)` classes
            (called in the strategy's scope).
        tokenizer: `keras_bert.BertTokenizer`. The model's tokenizer.
        train_file: str. CoNLL file to train on; its tags give the labels.
        validation_file: str. CoNLL file scored every epoch (picks the best
            epoch).
        test_file: str or `None`. Another CoNLL file scored every epoch.
        sequence_length: int. Positions per window. Defaults to `128`.
        stride: int or `None`. Tokens between window starts; defaults to
            half a window.
        label_all_tokens: bool. Train on every sub-token of a word (later
            ones with the `I-` label), not only the first.
        document_context: bool. Window whole documents (`-DOCSTART-` to
            `-DOCSTART-`) instead of single sentences: each word then sees
            the sentences around it.
        tag_column: int. The column holding the tag (default the last).
        scheme: str. The files' tag scheme: `"auto"`, `"iob1"`, `"iob2"` or
            `"iobes"`.
        group_by_length: bool. Batch windows of like length together
            (`keras_bert.data.length_grouped_epochs`, as Hugging Face's
            `group_by_length`): far less padding to compute. Otherwise each
            epoch is shuffled plainly.
        eval_batch_size: int. Windows per prediction batch.

    Example:
    ```python
    def model_fn(labels):
        return keras_bert.BertTokenClassifier.from_checkpoint(
            checkpoint, num_classes=len(labels), labels=labels
        )

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(checkpoint)
    task = NerFineTuning(model_fn, tokenizer, "train.txt", "valid.txt")
    keras_bert.fine_tuning.run_fine_tuning(task, "runs/ner", epochs=3)
    ```
    """

    name = "ner"
    monitor = "validation/f1"

    def __init__(
        self,
        model_fn,
        tokenizer,
        train_file,
        validation_file,
        test_file=None,
        sequence_length=128,
        stride=None,
        label_all_tokens=False,
        document_context=False,
        tag_column=-1,
        scheme="auto",
        group_by_length=True,
        eval_batch_size=64,
    ):
        self.model_fn = model_fn
        self.tokenizer = tokenizer
        self.files = {"train": train_file, "validation": validation_file}
        if test_file:
            self.files["test"] = test_file
        self.sequence_length = sequence_length
        self.stride = (
            default_stride(sequence_length) if stride is None else stride
        )
        self.label_all_tokens = label_all_tokens
        self.document_context = document_context
        self.tag_column = tag_column
        self.scheme = scheme
        self.group_by_length = group_by_length
        self.eval_batch_size = eval_batch_size
        self.data = {}
        self.labels = None
        self._features = {}

    def load_data(self):
        for split, path in self.files.items():
            self.data[split] = read_conll(
                path, tag_column=self.tag_column, scheme=self.scheme
            )
            data = self.data[split]
            logging.info(
                "NER %s: %d sentences, %d words (%s)",
                split,
                len(data["words"]),
                sum(len(words) for words in data["words"]),
                path,
            )
            if not data["words"]:
                # Refused here: an empty eval file would only fail when it
                # is first scored, after the first epoch of training.
                raise ValueError(_empty_file_message(split, path))
        self.labels = label_list(self.data["train"]["tags"])
        label_id = {label: i for i, label in enumerate(self.labels)}
        for split, data in self.data.items():
            unknown = collections.Counter(
                tag for tags in data["tags"] for tag in tags
                if tag not in label_id
            )  # fmt: skip
            if unknown:
                # Scored as written (its entities count as missed), never
                # trained on: the model cannot predict a tag it never saw.
                logging.warning(
                    "%s has tags the training file lacks, which the model "
                    "cannot predict: %s",
                    self.files[split],
                    dict(unknown),
                )
            data["label_ids"] = [
                [label_id.get(tag, -1) for tag in tags] for tags in data["tags"]
            ]

    def build_model(self):
        model = self.model_fn(self.labels)
        if self.sequence_length > model.backbone.max_sequence_length:
            raise ValueError(
                f"sequence_length={self.sequence_length} exceeds the model's "
                f"{model.backbone.max_sequence_length} positions. Lower "
                "sequence_length."
            )
        if model.num_classes != len(self.labels):
            raise ValueError(
                f"model_fn built a model with {model.num_classes} classes "
                f"for the {len(self.labels)} labels {self.labels}. Build it "
                "with num_classes=len(labels)."
            )
        preprocessor = BertPreprocessor(
            self.tokenizer, sequence_length=self.sequence_length
        )
        return model, preprocessor

    @property
    def num_train_examples(self):
        return len(self._windows("train")["token_ids"])

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        return training_batches(
            self._windows("train"),
            batch_size,
            seed,
            first_epoch,
            num_epochs,
            group_by_length=self.group_by_length,
        )

    def evaluate(self, model):
        results = {}
        for split in self.data:
            if split == "train":
                continue
            scores = self._score(split, self._predict(model, split))
            results[split] = _flat_scores(scores)
        return results

    def write_outputs(self, model, directory):
        paths, per_type = {}, {}
        for split in self.data:
            if split == "train":
                continue
            predicted = self._predict(model, split)
            data = self.data[split]
            path = os.path.join(directory, f"predictions_{split}.txt")
            write_conll_predictions(
                path, data["words"], data["tags"], predicted
            )
            paths[split] = path
            per_type[split] = self._score(split, predicted)["per_type"]
        return {"predictions": paths, "per_type": per_type}

    def export_options(self):
        return {"stride": self.stride}

    def results_extras(self):
        return {
            "labels": self.labels,
            "files": self.files,
            "num_sentences": {
                split: len(data["words"]) for split, data in self.data.items()
            },
            "num_windows": {
                split: len(self._windows(split)["token_ids"])
                for split in self.data
            },
        }

    # --- Predicting ----------------------------------------------------------

    def predict_tags(self, model, sentences, documents=None, scores=False):
        """The predicted tag of every word of `sentences` (lists of str).

        With `document_context` and `documents` (each sentence's document
        index, as `read_conll` gives them), the sentences of a document
        are windowed together, as in training. With `scores`, returns
        `(tags, scores)`: each word's tag probability too.
        """
        if documents is None:
            pieces = None
            sequences, lengths = sentences, [len(s) for s in sentences]
        else:
            data = {"words": sentences, "document": documents}
            sequences, lengths, pieces = self._sequences(data)
        features = self._make_features(sequences, None)
        tags, probabilities = self._tags(model, features, lengths)
        tags = _into_sentences(tags, pieces)
        if not scores:
            return tags
        return tags, _into_sentences(probabilities, pieces)

    def _predict(self, model, split):
        _, lengths, pieces = self._sequences(self.data[split])
        tags, _ = self._tags(model, self._windows(split), lengths)
        return _into_sentences(tags, pieces)

    def _tags(self, model, features, lengths):
        """`(tags, scores)`: per sequence, each word's tag and its
        probability."""
        logits = window_logits(model, features, self.eval_batch_size)
        label_ids, scores = word_predictions(
            features, logits, lengths, outside_id=self.labels.index("O")
        )
        tags = [[self.labels[i] for i in ids] for ids in label_ids]
        return tags, [list(row) for row in scores]

    def _score(self, split, predicted):
        return entity_scores(self.data[split]["tags"], predicted)

    # --- Features ------------------------------------------------------------

    def _sequences(self, data, key="words"):
        """What is windowed: sentences, or with document context documents.

        Returns `(sequences, lengths, sentence_lengths)`; the last is `None`
        without document context.
        """
        if not self.document_context:
            sequences = data[key]
            return sequences, [len(s) for s in sequences], None
        documents = collections.defaultdict(list)
        for index, document in enumerate(data["document"]):
            documents[document].append(index)
        order = [
            i for document in sorted(documents) for i in documents[document]
        ]
        if order != list(range(len(order))):
            raise AssertionError("sentences of a document are not adjacent")
        sequences = [
            [item for i in documents[document] for item in data[key][i]]
            for document in sorted(documents)
        ]
        return (
            sequences,
            [len(s) for s in sequences],
            [len(words) for words in data["words"]],
        )

    def _windows(self, split):
        if split not in self._features:
            data = self.data[split]
            words, _, _ = self._sequences(data)
            label_ids, _, _ = self._sequences(data, key="label_ids")
            self._features[split] = self._make_features(words, label_ids)
            logging.info(
                "NER %s: %d windows of %d tokens",
                split,
                len(self._features[split]["token_ids"]),
                self.sequence_length,
            )
        return self._features[split]

    def _make_features(self, sentences, label_ids):
        continuation = None
        if self.label_all_tokens:
            continuation = [
                self.labels.index("I-" + label[2:])
                if label.startswith("B-") and "I-" + label[2:] in self.labels
                else i
                for i, label in enumerate(self.labels)
            ]
        return ner_features(
            self.tokenizer,
            sentences,
            label_ids,
            sequence_length=self.sequence_length,
            stride=self.stride,
            label_all_tokens=self.label_all_tokens,
            continuation_label_ids=continuation,
        )


def _into_sentences(documents, pieces):
    """Per-word values of documents cut back into their sentences
    (`pieces`: words per sentence; `None`: they are sentences already)."""
    if pieces is None:
        return documents
    flat = [value for document in documents for value in document]
    sentences, start = [], 0
    for length in pieces:
        sentences.append(flat[start : start + length])
        start += length
    return sentences


def _empty_file_message(split, path):
    """What a CoNLL file without a single token line is told."""
    purpose = "to train on" if split == "train" else "to score"
    fix = f"Give `{split}_file` (--{split}_file) a CoNLL file with token lines"
    if split == "test":
        fix += ", or leave it out"
    return (
        f"{path} holds no sentence {purpose}: it has no token line, only "
        f"blank or -DOCSTART- lines. {fix}."
    )


def _flat_scores(scores):
    """`entity_scores`' dict as flat floats: `f1`, `PER_f1`, ..."""
    flat = {
        name: scores[name] for name in ("precision", "recall", "f1", "accuracy")
    }
    for entity_type, values in scores["per_type"].items():
        for name in ("precision", "recall", "f1"):
            flat[f"{entity_type}_{name}"] = values[name]
    return flat
