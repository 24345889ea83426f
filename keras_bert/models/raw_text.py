"""`fit`, `evaluate` and `predict` on raw text: what `Task` mixes in.

With a `preprocessor` attached, a task model takes raw strings wherever
it takes ids: this mixin recognises them (`keras_bert.models.text_inputs`),
builds the `tf.data` pipeline that tokenizes them
(`keras_bert.models.text_datasets`; `fit`'s arguments:
`keras_bert.models.text_fit_arguments`) and hands it to `keras.Model`'s own
method. Ids go to `keras.Model` unchanged.
"""

import inspect

import numpy as np

from keras_bert.keras_workarounds import trace_predict_once
from keras_bert.models.labels import checked_labels
from keras_bert.models.labels import checked_validation
from keras_bert.models.small_calls import empty_outputs
from keras_bert.models.small_calls import small_evaluate
from keras_bert.models.small_calls import small_predict
from keras_bert.models.text_datasets import inference_dataset
from keras_bert.models.text_fit_arguments import text_fit_arguments
from keras_bert.models.text_inputs import checked_x
from keras_bert.models.text_inputs import is_text


class RawTextMethods:
    """`fit`, `evaluate` and `predict` that also take raw text.

    Mixed into `keras_bert.models.Task` before `keras.Model`: each method
    reads the model's `preprocessor` and calls `keras.Model`'s own with the
    tokenized batches. A subclass names in `TEXT_METHODS` which of them
    read text; one whose inputs are more than the preprocessor's three
    sets `_inputs_from_text`, a method `(features, all_features) ->
    inputs` (see `BertMaskedLM`).
    """

    TEXT_METHODS = ()
    _inputs_from_text = None
    # Whether `fit` on texts refuses `y=None` (a distiller does not).
    _FIT_NEEDS_LABELS = True

    def fit(self, x=None, y=None, *args, seed=None, **kwargs):
        """Trains the model; with a preprocessor, on raw text too.

        Without raw text this is `keras.Model.fit`, unchanged. With a
        preprocessor attached (and `"fit"` in the class's `TEXT_METHODS`),
        `x` may be raw text:

        - a list or 1-D array of `str` (one text per example), or a tuple
          `(texts_a, texts_b)` of two such for sentence pairs (or a list
          of `[text_a, text_b]` rows), with labels `y` (and optionally
          `sample_weight`) as usual. Every text is tokenized once in a
          parallel `tf.data` map; each epoch is then
          shuffled (`shuffle=True`, the default) into batches of
          like-length examples, each cut to its longest row, as the GLUE
          recipe batches (`keras_bert.data.packed_batches`). Such a run
          covers `epochs - initial_epoch` whole epochs; `steps_per_epoch`
          is set for it. `validation_split` takes the last examples, as
          Keras does.
        - a `tf.data.Dataset` of text batches, or of `(texts, labels)`
          batches: tokenized in the pipeline (`dataset.map`), each batch
          cut to its longest row, in the dataset's own order.

        `validation_data` may hold raw text the same ways (`(texts,
        labels)`, or a dataset); it is read in order.

        Args:
            x: the backbone's ids dict (as `keras.Model.fit`), or raw text
                as above.
            y: labels, one per text (or pair).
            *args: `keras.Model.fit`'s other arguments, in its order.
            seed: int or `None`. Seed of the data order when `fit` batches
                raw text itself; `None` draws one from NumPy's global
                generator (which `keras.utils.set_random_seed` seeds).
                Only for raw text in lists or arrays.
            **kwargs: `keras.Model.fit`'s keyword arguments
                (`batch_size`, `epochs`, `validation_data`, ...).

        Returns:
            A `keras.callbacks.History`.

        Example:
        ```python
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                      "a", "good", "bad", "film", "book"]
        preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(vocabulary), sequence_length=16
        )
        backbone = keras_bert.BertBackbone(
            vocabulary_size=len(vocabulary), num_layers=1, num_heads=2,
            hidden_dim=8, intermediate_dim=16,
        )
        classifier = keras_bert.BertClassifier(
            backbone, num_classes=2, preprocessor=preprocessor
        )
        classifier.fit(
            ["a good film", "a bad book", "good", "bad film"], [1, 0, 1, 0],
            batch_size=2, epochs=2, verbose=0,
        )
        ```
        """
        x = checked_x(self, x, "fit")
        if not is_text(x):
            if seed is not None:
                raise ValueError(
                    "Received an invalid value for argument `seed`: it "
                    "orders raw text that `fit` batches itself, and `x` "
                    f"is not raw text. Received: seed={seed!r}; shuffle "
                    "ids with `keras.utils.set_random_seed` instead."
                )
            arguments = _bind(super().fit, x, y, *args, **kwargs)
            arguments["y"] = checked_labels(x, y, "fit", self._head_labels)
            arguments["validation_data"] = checked_validation(
                arguments["validation_data"], self._head_labels
            )
            return super().fit(**arguments)
        self._check_text_method("fit", "x")
        arguments = _bind(super().fit, x, y, *args, **kwargs)
        y = arguments["y"] = checked_labels(x, y, "fit", self._head_labels)
        self._note_text_layout(x)
        validation = checked_validation(
            arguments.pop("validation_data"), self._head_labels
        )
        if isinstance(validation, tuple) and validation:
            if is_text(validation[0]):
                self._check_text_layout(validation[0])
        elif is_text(validation):
            self._check_text_layout(validation)
        arguments = text_fit_arguments(
            arguments,
            x,
            y,
            validation,
            seed,
            self._text_packer(),
            self._inputs_from_text,
            needs_labels=self._FIT_NEEDS_LABELS,
        )
        return super().fit(**arguments)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """Scores the model; with a preprocessor, on raw text too.

        Without raw text this is `keras.Model.evaluate`, unchanged. With a
        preprocessor (and `"evaluate"` in `TEXT_METHODS`), `x` may be raw
        text as `fit` takes it, read in order in batches cut to their
        longest row: texts, or a pair `(texts_a, texts_b)`, with labels
        `y`; or a `tf.data.Dataset` of `(texts, labels)` batches.

        As in `predict`, at most `batch_size` (default 32) examples, with
        no `steps`, `callbacks` or progress bar asked for, run the model's
        `test_step` in one compiled function kept on the model (once the
        first `evaluate` or `fit` has built the metrics), to the same
        loss and metrics (`keras_bert.models.small_calls.small_evaluate`).

        Args:
            x: the ids dict, or raw text.
            y: labels, one per text (or pair).
            *args, **kwargs: `keras.Model.evaluate`'s other arguments.

        Example:
        ```python
        classifier.evaluate(["a good film", "a bad book"], [1, 0])
        ```
        """
        x = checked_x(self, x, "evaluate")
        text = is_text(x)
        if text:
            self._check_text_method("evaluate", "x")
            self._check_text_layout(x)
        arguments = _bind(super().evaluate, x, y, *args, **kwargs)
        y = arguments["y"] = checked_labels(x, y, "evaluate", self._head_labels)
        kwargs = arguments.pop("kwargs", {})
        if not kwargs:
            result = small_evaluate(self, **arguments)
            if result is not None:
                return result
        if not text:
            return super().evaluate(**arguments, **kwargs)
        arguments["x"] = inference_dataset(
            self._text_packer(),
            self._inputs_from_text,
            x,
            y,
            sample_weight=arguments["sample_weight"],
            batch_size=arguments["batch_size"],
        )
        arguments.update(y=None, batch_size=None, sample_weight=None)
        return super().evaluate(**arguments, **kwargs)

    def predict(self, x, *args, **kwargs):
        """The model's outputs; with a preprocessor, for raw text too.

        Without raw text this is `keras.Model.predict`. With a
        preprocessor (and `"predict"` in `TEXT_METHODS`), `x` may be
        texts, a pair `(texts_a, texts_b)` or a `tf.data.Dataset` of text
        batches; the outputs come in the order of the texts, as for ids.

        At most `batch_size` (default 32) texts or rows of ids, with no
        `steps`, `callbacks` or progress bar asked for, run through one
        compiled function kept on the model (no dataset, no callbacks, no
        new trace for a new length; `keras_bert.models.small_calls`), to
        the same outputs. No examples give empty outputs at once: batch
        axis 0, e.g. `(0, num_classes)`.

        Args:
            x: the ids dict, or raw text.
            *args, **kwargs: `keras.Model.predict`'s other arguments
                (`batch_size`, `verbose`, ...).

        Example:
        ```python
        logits = classifier.predict(["a good book"])  # (1, num_classes)
        ```
        """
        x = checked_x(self, x, "predict")
        if is_text(x):
            self._check_text_layout(x)
        arguments = _bind(super().predict, x, *args, **kwargs)
        outputs = small_predict(
            self,
            x,
            **{name: arguments[name] for name in _SMALL_CALL_ARGUMENTS},
        )
        if outputs is not None:
            return outputs
        if _no_examples(x):
            return empty_outputs(self)
        if not is_text(x):
            trace_predict_once(self, x)
            return super().predict(x, *args, **kwargs)
        self._check_text_method("predict", "x")
        arguments["x"] = inference_dataset(
            self._text_packer(),
            self._inputs_from_text,
            x,
            batch_size=arguments["batch_size"],
        )
        arguments["batch_size"] = None
        trace_predict_once(self, arguments["x"])
        return super().predict(**arguments)

    def _check_text_method(self, method, argument):
        name = type(self).__name__
        if method not in self.TEXT_METHODS:
            raise ValueError(
                f"`{name}.{method}` takes the backbone's ids dict "
                "(`token_ids`, `segment_ids`, `padding_mask`), not raw "
                f"text; received raw text for `{argument}`. Tokenize it "
                f"with a keras_bert.BertPreprocessor first."
            )
        if self.preprocessor is None:
            raise ValueError(
                f"`{name}.{method}` received raw text for `{argument}`, but "
                "the model has no preprocessor to tokenize it. Build the "
                f"model with one (`{name}(backbone, ..., preprocessor="
                "keras_bert.BertPreprocessor(tokenizer))`, or set "
                "`model.preprocessor`), or pass the ids dict "
                "(`token_ids`, `segment_ids`, `padding_mask`)."
            )

    def _text_packer(self):
        """What turns a batch of raw text into the model's inputs: the
        `preprocessor` (a head reading text otherwise overrides it, as
        `BertClassifier` with `doc_stride` does)."""
        return self.preprocessor

    def _head_labels(self, labels, argument):
        """Labels as the head takes them (`BertClassifier`: class ids)."""
        return labels

    def _note_text_layout(self, x):
        """`fit` on raw text `x` calls it first (see `BertClassifier`)."""

    def _check_text_layout(self, x):
        """`evaluate`, `predict` and `fit`'s `validation_data` call it on
        raw text `x`: a head that knows its layout (single texts or
        pairs, see `BertClassifier`) raises for the other one."""


# `keras.Model.predict`'s arguments that decide whether a call is small.
_SMALL_CALL_ARGUMENTS = ("batch_size", "verbose", "steps", "callbacks")


def _no_examples(x):
    """Whether `x` is an empty list or array, or a tuple of them."""
    parts = x if isinstance(x, tuple) else (x,)
    return bool(parts) and all(
        isinstance(part, (list, np.ndarray)) and len(part) == 0
        for part in parts
    )


def _bind(method, *args, **kwargs):
    """`{argument: value}` of a call of `method`, defaults included."""
    bound = inspect.signature(method).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)
