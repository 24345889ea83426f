"""Choices for a file of questions (`recipes/multiple_choice.py
--predict_file`): the training files' formats, labels optional."""

import tensorflow as tf

from keras_bert.fine_tuning.multiple_choice.examples import read_multiple_choice
from keras_bert.fine_tuning.predictions import check_predict_file
from keras_bert.fine_tuning.predictions import write_jsonl
from keras_bert.models.choice_inputs import choice_dataset
from keras_bert.models.choice_inputs import pack_choices


def read_questions(path):
    """The examples of a file to predict, labels optional (ignored).

    Args:
        path: str. SWAG-layout CSV or JSONL, as the training files
            (`read_multiple_choice`), with or without `label`.

    Returns:
        `read_multiple_choice`'s dict: `contexts`, `choices`, `labels`
        (-1 where there is none).

    Raises:
        ValueError: naming `path` when it does not exist or is not in a
            training file's format.

    Example:
    ```python
    read_questions("swag/test.csv")["choices"].shape  # (20005, 4)
    ```
    """
    check_predict_file(path)
    return read_multiple_choice(path, require_labels=False)


def choice_probabilities(model, preprocessor, contexts, choices, batch_size):
    """Softmax over the choices of every example, `(n, num_choices)`.

    Args:
        model: a `keras_bert.BertMultipleChoice`.
        preprocessor: the `keras_bert.BertPreprocessor` that packs its
            `(context, choice)` pairs.
        contexts: str array `(n,)`.
        choices: str array `(n, num_choices)`.
        batch_size: int. Examples per predict batch.

    Example:
    ```python
    choice_probabilities(model, preprocessor, contexts, choices, 64)
    ```
    """
    features = pack_choices(preprocessor, contexts, choices)
    return packed_probabilities(model, features, batch_size)


def packed_probabilities(model, features, batch_size):
    """Softmax over the choices of packed examples (`pack_choices`)."""
    logits = model.predict(
        choice_dataset(features, batch_size=batch_size), verbose=0
    )
    return tf.nn.softmax(logits).numpy()


def write_choice_predictions(
    model, preprocessor, questions, output_file, batch_size=64
):
    """Predicts every example of `questions` and writes `output_file`.

    One JSON line per example, in input order: `context`, `choices`,
    `choice` (the index of the most probable), `choice_text` and
    `probabilities` (one per choice).

    Args:
        model: the trained `keras_bert.BertMultipleChoice`.
        preprocessor: the `keras_bert.BertPreprocessor` it was trained
            with.
        questions: `read_questions(predict_file)`.
        output_file: str. The JSONL to write (any `tf.io.gfile` path).
        batch_size: int. Examples per predict batch.

    Returns:
        The number of predictions written.

    Example:
    ```python
    result = keras_bert.fine_tuning.run_fine_tuning(job, "runs/swag")
    write_choice_predictions(
        result.model, result.preprocessor, read_questions("new.jsonl"),
        "runs/swag/predictions_new.jsonl",
    )
    ```
    """
    contexts, choices = questions["contexts"], questions["choices"]
    probabilities = choice_probabilities(
        model, preprocessor, contexts, choices, batch_size
    )
    rows = []
    for context, row_choices, row in zip(contexts, choices, probabilities):
        choice = int(row.argmax())
        rows.append(
            {
                "context": str(context),
                "choices": [str(text) for text in row_choices],
                "choice": choice,
                "choice_text": str(row_choices[choice]),
                "probabilities": [round(float(p), 6) for p in row],
            }
        )
    return write_jsonl(output_file, rows)
