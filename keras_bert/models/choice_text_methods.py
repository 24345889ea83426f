"""`fit`, `evaluate` and `predict` on `(contexts, choices)`: what
`BertMultipleChoice` mixes in.

A multiple-choice model's raw text is a pair of columns unlike the
texts `keras_bert.models.raw_text` reads: contexts, and for each as many
choices as every other example has. These methods check it (with the
labels and sample weights) before anything is packed, pack every
context-choice pair once with the model's `preprocessor` and batch the
examples, each batch cut to its longest row
(`keras_bert.models.choice_inputs`); anything else goes on to the next
class's method (`Task`'s) unchanged.
"""

import numpy as np

from keras_bert.models.choice_inputs import check_choice_labels
from keras_bert.models.choice_inputs import check_choices
from keras_bert.models.choice_inputs import choice_dataset
from keras_bert.models.choice_inputs import is_choice_text
from keras_bert.models.choice_inputs import pack_choices


class ChoiceTextMethods:
    """`fit`, `evaluate` and `predict` that also take `(contexts,
    choices)` raw text, mixed in before `Task` (see `BertMultipleChoice`).
    """

    def fit(self, x=None, y=None, *args, seed=None, **kwargs):
        """Trains the model on ids, or on `(contexts, choices)` raw text.

        Raw text needs the model's `preprocessor`: every pair is packed
        once, each epoch is shuffled from `seed` (`None`: drawn from
        NumPy's global generator) and batched (`batch_size`, default 32),
        each batch cut to its longest row. `validation_data` may be
        `((contexts, choices), labels)`. Anything else goes to
        `keras.Model.fit` unchanged.

        Args:
            x: the ids dict `(batch, choices, sequence)`, or
                `(contexts, choices)`.
            y: int labels, the index of each example's right choice.
            *args, **kwargs: `keras.Model.fit`'s other arguments.
            seed: int or `None`. Seed of the data order of raw text.

        Example (`model`, `contexts`, `choices` as in the class docstring):
        ```python
        model.fit((contexts, choices), [0, 1], batch_size=2, epochs=2,
                  seed=0, verbose=0)
        ```
        """
        if not is_choice_text(x):
            return super().fit(x, y, *args, **kwargs)
        self._check_preprocessor("fit")
        kwargs = _keyword_arguments(
            ("batch_size", "epochs", "verbose", "callbacks"), args, kwargs
        )
        if y is None:
            raise ValueError(
                "`fit` on `(contexts, choices)` needs labels: pass `y`, the "
                "index of each example's right choice."
            )
        if kwargs.get("validation_split") or kwargs.get("steps_per_epoch"):
            raise ValueError(
                "`fit` on `(contexts, choices)` takes neither "
                "`validation_split` nor `steps_per_epoch`: pass "
                "`validation_data=((contexts, choices), labels)`."
            )
        if seed is None:
            seed = int(np.random.randint(2**31 - 1))
        validation = kwargs.pop("validation_data", None)
        validation_text = (
            isinstance(validation, (tuple, list))
            and len(validation) in (2, 3)
            and is_choice_text(validation[0])
        )
        # Every check (validation data's too) before anything is packed.
        train = self._checked(x, y, kwargs.pop("sample_weight", None))
        if validation_text:
            validation = self._checked(
                validation[0],
                validation[1],
                validation[2] if len(validation) == 3 else None,
                argument="validation_data",
            )
        dataset = self._text_dataset(
            *train,
            kwargs.pop("batch_size", None),
            shuffle=kwargs.pop("shuffle", True),
            seed=seed,
        )
        if validation_text:
            validation = self._text_dataset(
                *validation, kwargs.pop("validation_batch_size", None)
            )
        # Each epoch is shuffled already (Keras does not shuffle datasets).
        return super().fit(
            dataset, validation_data=validation, shuffle=False, **kwargs
        )

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """Loss and accuracy on ids, or on `(contexts, choices)` and labels.

        Example (as in the class docstring):
        ```python
        model.evaluate((contexts, choices), [0, 1], verbose=0)
        ```
        """
        if not is_choice_text(x):
            return super().evaluate(x, y, *args, **kwargs)
        self._check_preprocessor("evaluate")
        kwargs = _keyword_arguments(("batch_size", "verbose"), args, kwargs)
        if y is None:
            raise ValueError(
                "`evaluate` on `(contexts, choices)` needs labels: pass `y`, "
                "the index of each example's right choice."
            )
        dataset = self._text_dataset(
            *self._checked(x, y, kwargs.pop("sample_weight", None)),
            kwargs.pop("batch_size", None),
        )
        return super().evaluate(dataset, **kwargs)

    def predict(self, x, *args, **kwargs):
        """Logits `(num_examples, num_choices)` for ids or raw text.

        On `(contexts, choices)` (with the model's `preprocessor`) the
        pairs are packed and run in order, `batch_size` examples (default
        32) at a time; `softmax` of the logits gives what the exported
        model's `probabilities` output gives, their argmax its `choice`.

        Example (as in the class docstring):
        ```python
        logits = model.predict((["the cat sat"], [["on the mat", "up"]]))
        ```
        """
        if not is_choice_text(x):
            return super().predict(x, *args, **kwargs)
        self._check_preprocessor("predict")
        kwargs = _keyword_arguments(("batch_size", "verbose"), args, kwargs)
        dataset = self._text_dataset(
            *self._checked(x, None, None), kwargs.pop("batch_size", None)
        )
        return super().predict(dataset, **kwargs)

    def _checked(self, x, y, sample_weight, argument="x"):
        """`(contexts, choices, labels, sample_weight)`, checked."""
        contexts, choices = check_choices(x, argument)
        labels = check_choice_labels(
            y,
            len(contexts),
            choices.shape[1],
            "y" if argument == "x" else argument,
        )
        if sample_weight is not None and len(sample_weight) != len(contexts):
            raise ValueError(
                "Received an invalid value for argument `sample_weight`: "
                f"{len(sample_weight)} weights for {len(contexts)} examples. "
                "Pass one weight per example."
            )
        return contexts, choices, labels, sample_weight

    def _text_dataset(
        self,
        contexts,
        choices,
        labels,
        sample_weight,
        batch_size,
        shuffle=False,
        seed=None,
    ):
        features = pack_choices(self.preprocessor, contexts, choices)
        return choice_dataset(
            features,
            labels,
            sample_weight,
            batch_size or 32,
            shuffle=bool(shuffle),
            seed=seed,
        )

    def _check_preprocessor(self, method):
        if self.preprocessor is None:
            raise ValueError(
                f"`{type(self).__name__}.{method}` received raw text, but the "
                "model has no preprocessor to tokenize it. Build it with "
                "`preprocessor=keras_bert.BertPreprocessor(tokenizer)` (or "
                "load it with `from_checkpoint` / `from_preset`, which "
                "attach one), or pass the ids dict `(batch, choices, "
                "sequence)`."
            )


def _keyword_arguments(names, args, kwargs):
    """`kwargs` with the positional `args` after `x, y` named by `names`."""
    if len(args) > len(names):
        raise ValueError(
            f"Received {len(args)} positional arguments after `x` and `y`; "
            f"on raw text pass at most {list(names)} by position, the rest "
            "by keyword."
        )
    kwargs = dict(kwargs)
    for name, value in zip(names, args):
        kwargs[name] = value
    return kwargs
