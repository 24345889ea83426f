"""`fit`, `evaluate` and `predict` of a tagger on words with their tags.

A `BertTokenClassifier` with a `preprocessor` takes pre-split sentences
(a list of word lists) and a tag name per word, as `recipes/ner.py` reads
them from CoNLL files, and treats them as the recipe does
(`keras_bert.training.ner_features`, the same code): each word is
tokenized on its own, a sentence longer than the preprocessor's
`sequence_length` is cut into overlapping windows (stride: half a window),
each word's tag goes on its first sub-token in every window and its other
sub-tokens are left out of the loss (`-100`); windows of like length are
batched together, each epoch in an order set by `(seed, epoch)`. Each
word is predicted once, from the window where it has the most context.
Everything is checked before any window is made or any step traced.
"""

import inspect
import math

import keras
import numpy as np
import tensorflow as tf

from keras_bert.text.tag_schemes import label_list
from keras_bert.training import ner_features
from keras_bert.training.ner_metrics import entity_scores


def is_word_lists(x):
    """Whether `x` is pre-split sentences: a non-empty list of lists (or
    tuples) of str. A list of str (texts) and the ids dict are not."""
    return (
        isinstance(x, list)
        and bool(x)
        and all(
            isinstance(words, (list, tuple))
            and all(isinstance(word, str) for word in words)
            for words in x
        )
    )


def check_word_tags(words, tags, argument="y"):
    """Raises a `ValueError` unless `tags` has a tag per word of `words`."""
    if tags is None:
        raise ValueError(
            f"Received no `{argument}` for the sentences (lists of words) "
            "in `x`: pass a list of tag lists, one tag name per word."
        )
    if not isinstance(tags, (list, tuple)) or len(tags) != len(words):
        received = len(tags) if isinstance(tags, (list, tuple)) else tags
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: expected "
            f"a list of {len(words)} tag lists, one per sentence. "
            f"Received: {received!r}."
        )
    for index, (sentence, sentence_tags) in enumerate(zip(words, tags)):
        count = 1 if isinstance(sentence_tags, str) else len(sentence_tags)
        if count != len(sentence):
            raise ValueError(
                f"Sentence {index} has {len(sentence)} words but {count} "
                f"tags in `{argument}`. Pass exactly one tag per word."
            )


def infer_labels(tags):
    """The label names of the tags: `"O"`, then `B-`, `I-` per entity type
    as `recipes/ner.py` makes them (`label_list`), when that covers every
    tag; else the distinct tags sorted, `"O"` first."""
    distinct = {tag for sentence in tags for tag in sentence}
    try:
        labels = label_list(tags)
    except ValueError:
        labels = []
    if distinct <= set(labels):
        return labels
    return sorted(distinct, key=lambda tag: (tag != "O", tag))


def tag_ids(tags, labels, argument="y"):
    """Each tag's index in `labels`; an unknown tag is a `ValueError`."""
    index = {label: i for i, label in enumerate(labels)}
    for sentence, sentence_tags in enumerate(tags):
        for tag in sentence_tags:
            if tag not in index:
                raise ValueError(
                    f"Unknown tag {tag!r} (sentence {sentence} of "
                    f"`{argument}`): the model's label names are {labels}. "
                    "Use only these tags, or build the model with "
                    "`labels` covering every tag."
                )
    return [[index[tag] for tag in sentence] for sentence in tags]


class WordTagMethods:
    """`fit`, `evaluate` and `predict` on words with tags, mixed into
    `BertTokenClassifier` before `Task`; anything else goes on to `Task`."""

    def fit(self, x=None, y=None, *args, seed=None, **kwargs):
        """Trains the tagger; on words with tags too.

        Anything but word lists goes to `Task.fit` unchanged (ids, raw
        text). On word lists `x` with tag lists `y`, each epoch trains on
        every window of every sentence as `recipes/ner.py` does (see the
        module), in like-length batches ordered by `(seed, epoch)`
        (`shuffle=False`: in order). The model's `labels` name the
        classes; with `labels=None` they are taken from `y`
        (`infer_labels`) and set on the model, so that `get_config`, a
        `.keras` file and the export carry them.

        Args:
            x: a list of sentences, each a list of str (the words).
            y: a list of tag lists, one tag name per word.
            *args, **kwargs: `keras.Model.fit`'s other arguments;
                `validation_data` as `(words, tags)`, `validation_split`
                takes the last sentences. No `sample_weight`,
                `class_weight` or `steps_per_epoch` with words.
            seed: int or `None`. Seed of the data order; `None` draws one
                from NumPy's global generator.

        Returns:
            A `keras.callbacks.History`.

        Raises:
            ValueError: before any training, for a sentence whose tag count
                is not its word count (naming the sentence and both counts),
                a tag outside fixed `labels` (naming it and the labels), or
                inferred labels of another count than `num_classes`.

        Example:
        ```python
        model.fit([["John", "lives", "in", "Paris"]],
                  [["B-PER", "O", "O", "B-LOC"]], epochs=1, batch_size=8)
        ```
        """
        if not is_word_lists(x):
            return super().fit(x, y, *args, seed=seed, **kwargs)
        arguments = _bind(keras.Model.fit, self, x, y, *args, **kwargs)
        for name in ("sample_weight", "steps_per_epoch", "class_weight"):
            if arguments[name] is not None:
                raise ValueError(
                    f"`fit` on words with tags takes no `{name}`. "
                    f"Received: {name}={arguments[name]!r}."
                )
        check_word_tags(x, y)
        validation = arguments.pop("validation_data")
        split = arguments.pop("validation_split")
        if split:
            if validation is not None:
                raise ValueError(
                    "Pass `validation_split` or `validation_data`, not both."
                )
            cut = int(len(x) * (1 - split))
            x, y, validation = x[:cut], y[:cut], (x[cut:], y[cut:])
        if validation is not None:
            if not (
                isinstance(validation, tuple)
                and len(validation) == 2
                and is_word_lists(validation[0])
            ):
                raise ValueError(
                    "With words and tags in `x` and `y`, `validation_data` "
                    "must be a pair `(words, tags)` of the same kind."
                )
            check_word_tags(*validation, argument="validation_data")
        labels = self.labels or self._inferred_labels(y)
        label_ids = tag_ids(y, labels)
        if validation is not None:
            validation = (
                validation[0],
                tag_ids(validation[1], labels, "validation_data"),
            )
        batch_size = arguments.pop("batch_size") or 32
        features = self._word_features(x, label_ids)
        if validation is not None:
            validation = self._in_order(
                self._word_features(*validation),
                arguments["validation_batch_size"] or batch_size,
            )
        del arguments["validation_batch_size"]
        self.labels = list(labels)  # all checked: the classes are named
        if seed is None:
            seed = int(np.random.randint(2**31 - 1))
        epochs, first = arguments["epochs"], arguments["initial_epoch"]
        if arguments["shuffle"]:
            batches = ner_features.training_batches(
                features, batch_size, seed, first, epochs
            )
        else:
            batches = self._in_order(features, batch_size)
            batches = batches.repeat(epochs - first)
        arguments.update(
            x=batches,
            y=None,
            steps_per_epoch=math.ceil(len(features["token_ids"]) / batch_size),
            shuffle=False,
            validation_data=validation,
        )
        return super().fit(**arguments)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """Scores the tagger; on words with tags, entity F1 too.

        Anything but word lists goes to `Task.evaluate`. On word lists `x`
        with tag lists `y`: the loss and metrics over every window (as
        `fit` trains), then `entity_precision`, `entity_recall` and
        `entity_f1` of the tags `predict` gives, scored as `conlleval`
        (`keras_bert.fine_tuning.ner.entity_scores`).

        Args:
            x: a list of sentences, each a list of str.
            y: a list of tag lists; every tag one of the model's `labels`.
            *args, **kwargs: `keras.Model.evaluate`'s other arguments.

        Returns:
            With `return_dict=True` a dict (`loss`, `accuracy`,
            `entity_precision`, `entity_recall`, `entity_f1`), else its
            values as a list in that order.

        Example:
        ```python
        model.evaluate(words, tags, return_dict=True)["entity_f1"]
        ```
        """
        if not is_word_lists(x):
            return super().evaluate(x, y, *args, **kwargs)
        arguments = _bind(keras.Model.evaluate, self, x, y, *args, **kwargs)
        check_word_tags(x, y)
        batch_size = arguments.pop("batch_size") or 32
        dataset = self._in_order(
            self._word_features(x, tag_ids(y, self.label_names)), batch_size
        )
        return_dict = arguments.pop("return_dict")
        arguments.update(x=dataset, y=None, return_dict=True)
        results = super().evaluate(**arguments)
        scores = entity_scores(y, self.predict(x, batch_size=batch_size))
        for name in ("precision", "recall", "f1"):
            results[f"entity_{name}"] = scores[name]
        return results if return_dict else list(results.values())

    def _predict_word_tags(self, words, batch_size=None):
        """The tag name of every word of every sentence of `words`."""
        features = self._word_features(words, None)
        logits = ner_features.window_logits(self, features, batch_size or 32)
        labels = self.label_names
        outside = labels.index("O") if "O" in labels else 0
        ids, _ = ner_features.word_predictions(
            features, logits, [len(s) for s in words], outside
        )
        return [[labels[i] for i in sentence] for sentence in ids]

    def _inferred_labels(self, tags):
        labels = infer_labels(tags)
        if len(labels) != self.num_classes:
            raise ValueError(
                f"The tags make {len(labels)} label names {labels}, but the "
                f"model has num_classes={self.num_classes}. Build it with "
                f"num_classes={len(labels)}, or with `labels` naming its "
                "classes."
            )
        return labels

    def _word_features(self, words, label_ids):
        if self.preprocessor is None:
            raise ValueError(
                f"`{type(self).__name__}` received words (lists of str) but "
                "has no preprocessor to tokenize them. Build it with one "
                "(`preprocessor=keras_bert.BertPreprocessor(tokenizer)`)."
            )
        return ner_features.ner_features(
            self.preprocessor.tokenizer,
            [list(sentence) for sentence in words],
            label_ids,
            sequence_length=self.preprocessor.sequence_length,
        )

    def _in_order(self, features, batch_size):
        """Labelled windows in order, each batch cut to its longest."""
        rows = (
            {name: features[name] for name in ner_features.INPUT_NAMES},
            features["labels"],
        )
        dataset = tf.data.Dataset.from_tensor_slices(rows).batch(batch_size)
        return dataset.map(ner_features.trim_labelled)


def _bind(method, model, *args, **kwargs):
    """`{argument: value}` of a call of `method` on `model`, defaults in."""
    bound = inspect.signature(method).bind(model, *args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    del arguments["self"]
    arguments.update(arguments.pop("kwargs", {}))
    return arguments
