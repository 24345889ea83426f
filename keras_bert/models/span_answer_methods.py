"""`fit` and `evaluate` of a question answerer on raw SQuAD-style data.

`BertQuestionAnswerer` mixes `SpanAnswerMethods` in before `Task`: given a
dict of `question` and `context` strings and SQuAD-style answers, `fit`
cuts every question + context into the windows `recipes/squad.py` trains
on (`keras_bert.fine_tuning.squad.squad_features`, labelled from each
answer's character span through the token offsets) and trains on them as
the recipe does; `evaluate` adds SQuAD's exact match and F1, after the
recipe's post-processing (`compute_predictions`), to the loss. The checks
of `keras_bert.models.span_answers` run before anything is traced.
"""

import inspect
import math

import keras
import numpy as np

from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.decoding import span_predictions
from keras_bert.models.span_answers import is_question_and_context
from keras_bert.models.span_answers import span_examples
from keras_bert.models.span_answers import span_windows
from keras_bert.models.span_answers import window_dataset
from keras_bert.models.span_answers import window_inputs
from keras_bert.training import squad_metrics

# The windows of `predict` on raw text (`answer_text_function`'s defaults).
DOC_STRIDE = 128
MAX_QUERY_LENGTH = 64
# `keras.Model.fit` arguments that windows of raw text cannot honour.
_FIT_UNSUPPORTED = {
    "validation_split": 0.0,
    "class_weight": None,
    "sample_weight": None,
    "steps_per_epoch": None,
}


class SpanAnswerMethods:
    """`fit` and `evaluate` on raw questions, contexts and answers."""

    def fit(
        self,
        x=None,
        y=None,
        *args,
        seed=None,
        doc_stride=None,
        max_query_length=None,
        **kwargs,
    ):
        """Trains on ids, or on raw questions and contexts with answers.

        On raw text (with a `preprocessor`) `x` is `{"question": [...],
        "context": [...]}` (or a tuple `(questions, contexts)`) and `y`
        names the answers as SQuAD does: `{"text": [...], "answer_start":
        [...]}` (character offsets in the context), or a list of SQuAD
        `answers` entries (the first answer is the target). A text `""`
        (with `answer_start` -1, or none) is a question without an answer:
        its windows are labelled at `[CLS]`, as SQuAD v2.0. Each context
        is cut into windows of `preprocessor.sequence_length` tokens as
        `recipes/squad.py` cuts them (`squad_features`); a window without
        the answer is labelled at `[CLS]`. Each epoch's windows are
        shuffled from `seed` as the recipe shuffles them. Bad answers
        raise `ValueError` before anything is traced.

        Args:
            x: the ids dict (then `keras.Model.fit`), or raw text as above.
            y: labels for ids, or answers as above.
            *args: `keras.Model.fit`'s other arguments, in its order.
            seed: int or `None`. Seed of the window order on raw text;
                `None` draws one from NumPy's global generator.
            doc_stride: int. Context tokens between window starts.
                Defaults to `128`, as `predict`.
            max_query_length: int. Question tokens kept. Defaults to `64`.
            **kwargs: `keras.Model.fit`'s keyword arguments (`batch_size`
                in windows, `epochs`, `validation_data=(x, y)` with raw
                text as `x` and `y`, ...).

        Returns:
            A `keras.callbacks.History`.

        Example (`model` as in `predict`'s example):
        ```python
        model.fit(
            x={"question": ["Who jumped?"], "context": ["The fox jumped."]},
            y={"text": ["The fox"], "answer_start": [0]},
            doc_stride=4, max_query_length=4, epochs=1, verbose=0,
        )
        ```
        """
        if not is_question_and_context(x):
            _check_no_window_options("fit", doc_stride, max_query_length)
            return super().fit(x, y, *args, seed=seed, **kwargs)
        arguments = _bind(keras.Model.fit, self, x, y, *args, **kwargs)
        for name, default in _FIT_UNSUPPORTED.items():
            value = arguments[name]
            if value is not None if default is None else value != default:
                raise ValueError(
                    f"Received an invalid value for argument `{name}`: "
                    "`fit` on raw questions and contexts does not take it. "
                    f"Received: {name}={arguments[name]!r}."
                )
        _, windows = self._span_windows(
            "fit", x, y, doc_stride, max_query_length
        )
        batch_size = arguments.pop("batch_size") or 32
        epochs, first = arguments["epochs"], arguments["initial_epoch"]
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        data = window_dataset(windows)
        if arguments.pop("shuffle"):
            data = shuffled_epochs(data, batch_size, seed, first, epochs)
        else:
            data = data.batch(batch_size).repeat(max(epochs - first, 1))
        validation = arguments.pop("validation_data")
        validation_batch_size = (
            arguments.pop("validation_batch_size") or batch_size
        )
        if validation is not None:
            if not isinstance(validation, tuple) or len(validation) != 2:
                raise ValueError(
                    "Received an invalid value for argument "
                    "`validation_data`: on raw text, pass `(x, y)` as "
                    f"`fit`'s. Received: {type(validation).__name__}."
                )
            _, validation = self._span_windows(
                "fit", *validation, doc_stride, max_query_length,
                names=("validation_data[0]", "validation_data[1]"),
            )  # fmt: skip
            validation = window_dataset(validation).batch(validation_batch_size)
        for name in ("x", "y", *_FIT_UNSUPPORTED):
            arguments.pop(name)
        return super().fit(
            data,
            steps_per_epoch=math.ceil(len(windows["token_ids"]) / batch_size),
            validation_data=validation,
            shuffle=False,
            **arguments,
        )

    def evaluate(
        self,
        x=None,
        y=None,
        *args,
        doc_stride=None,
        max_query_length=None,
        n_best_size=20,
        max_answer_length=30,
        version_2_with_negative=None,
        null_score_diff_threshold=0.0,
        **kwargs,
    ):
        """Loss and metrics, and on raw text SQuAD's exact match and F1.

        On ids this is `keras.Model.evaluate`. On raw questions and
        contexts with answers (`fit`'s `x` and `y`), the windows are
        scored for the loss, then each question's answer is picked from
        its windows' logits as `recipes/squad.py` picks it
        (`compute_predictions`) and scored by the official rules
        (`squad_v1_metrics`; `squad_v2_metrics` with
        `version_2_with_negative`).

        Args:
            x, y: the ids dict and labels, or raw text and answers.
            *args: `keras.Model.evaluate`'s other arguments (`batch_size`
                in windows, `verbose`, ...).
            doc_stride, max_query_length: windows, as in `fit`.
            n_best_size, max_answer_length, null_score_diff_threshold: the
                post-processing's (`compute_predictions`).
            version_2_with_negative: bool, or `None` for "when some
                question of `y` has no answer": allow "no answer".
            **kwargs: `keras.Model.evaluate`'s keyword arguments.

        Returns:
            On raw text, a dict: `loss` and the compiled metrics, plus
            `exact_match` and `f1` in percent (v2.0: also the official
            breakdown, e.g. `HasAns_f1`).

        Example (`model` as in `fit`'s example):
        ```python
        scores = model.evaluate(
            {"question": ["Who jumped?"], "context": ["The fox jumped."]},
            {"text": ["The fox"], "answer_start": [0]},
            doc_stride=4, max_query_length=4, verbose=0,
        )
        scores["f1"]  # in [0, 100]
        ```
        """
        if not is_question_and_context(x):
            _check_no_window_options("evaluate", doc_stride, max_query_length)
            return super().evaluate(x, y, *args, **kwargs)
        arguments = _bind(keras.Model.evaluate, self, x, y, *args, **kwargs)
        examples, windows = self._span_windows(
            "evaluate", x, y, doc_stride, max_query_length
        )
        batch_size = arguments["batch_size"] or 32
        scores = super().evaluate(
            window_dataset(windows).batch(batch_size),
            verbose=arguments["verbose"],
            callbacks=arguments["callbacks"],
            return_dict=True,
        )
        outputs = self.predict(
            window_inputs(windows), batch_size=batch_size, verbose=0
        )
        if version_2_with_negative is None:
            version_2_with_negative = min(examples["answer_start"]) < 0
        predictions, _, null_odds = span_predictions.compute_predictions(
            examples,
            windows,
            outputs["start_logits"],
            outputs["end_logits"],
            n_best_size=n_best_size,
            max_answer_length=max_answer_length,
            version_2_with_negative=version_2_with_negative,
            null_score_diff_threshold=null_score_diff_threshold,
        )
        if version_2_with_negative:
            squad = squad_metrics.squad_v2_metrics(
                examples, predictions, null_odds
            )
            squad["exact_match"] = squad["exact"]
        else:
            squad = squad_metrics.squad_v1_metrics(examples, predictions)
        return {**scores, **squad}

    def _span_windows(
        self, method, x, y, doc_stride, max_query_length, names=("x", "y")
    ):
        """The checked examples and their windows, with labels."""
        name = type(self).__name__
        if self.preprocessor is None:
            raise ValueError(
                f"`{name}.{method}` received raw questions and contexts, "
                "but the model has no preprocessor to tokenize them. Build "
                f"it with one (`{name}(backbone, preprocessor=keras_bert."
                "BertPreprocessor(tokenizer, sequence_length=384))`), or "
                "pass the ids dict."
            )
        if y is None:
            raise ValueError(
                f"`{name}.{method}` on raw questions and contexts needs "
                f'their answers: pass `y={{"text": [...], "answer_start": '
                '[...]}` (`""` and -1 for no answer).'
            )
        examples = span_examples(x, y, *names)
        if not examples["id"]:
            raise ValueError(
                f"Received an invalid value for argument `{names[0]}`: no "
                "questions. Pass at least one."
            )
        return examples, span_windows(
            examples,
            self.preprocessor,
            DOC_STRIDE if doc_stride is None else doc_stride,
            MAX_QUERY_LENGTH if max_query_length is None else max_query_length,
        )


def _check_no_window_options(method, doc_stride, max_query_length):
    for name, value in (
        ("doc_stride", doc_stride),
        ("max_query_length", max_query_length),
    ):
        if value is not None:
            raise ValueError(
                f"Received an invalid value for argument `{name}`: `{method}`"
                " cuts windows only from raw questions and contexts, and "
                f"`x` is not. Received: {name}={value!r}."
            )


def _bind(method, *args, **kwargs):
    """`{argument: value}` of a call of `method`, defaults included."""
    bound = inspect.signature(method).bind(*args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    arguments.pop("self", None)
    arguments.update(arguments.pop("kwargs", {}))
    return arguments
