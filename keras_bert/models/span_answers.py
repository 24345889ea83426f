"""Raw SQuAD-style questions, contexts and answers for a question answerer.

`BertQuestionAnswerer.fit`, `evaluate` and `predict` take raw text as a
dict of `question` and `context` strings (or a tuple `(questions,
contexts)`), and answers as SQuAD names them: a dict of `text` and
`answer_start` lists, or a list of SQuAD `answers` entries. This module
checks them (before anything is traced) and turns them into the examples
dict of `keras_bert.fine_tuning.squad`, whose `squad_features`
(`keras_bert.text.squad_features`) cuts them
into the windows `recipes/squad.py` trains on and scores.
"""

from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from keras_bert.models.text_inputs import is_text
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.text.squad_features import squad_features

_X_HINT = (
    'Pass `x={"question": [...], "context": [...]}` (or a tuple '
    "`(questions, contexts)`): one question per context."
)
_Y_HINT = (
    'Pass `y={"text": [...], "answer_start": [...]}` (SQuAD\'s names: each '
    'answer and its character offset in its context; `""` and -1 for a '
    "question without an answer), or a list of SQuAD `answers` entries."
)


def is_question_and_context(x):
    """Whether `x` is raw question answering text: a dict naming
    `question` or `context`, or a tuple of two batches of text."""
    if isinstance(x, Mapping):
        return "question" in x or "context" in x
    return isinstance(x, tuple) and len(x) == 2 and is_text(x)


def question_context_dict(x, argument="x"):
    """`x` as `{"question": list of str, "context": list of str}`, checked.

    Raises:
        ValueError: for a missing field or fields of different lengths.
    """
    if isinstance(x, tuple):
        x = {"question": x[0], "context": x[1]}
    missing = [name for name in ("question", "context") if name not in x]
    if missing:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: no "
            f"{' or '.join(repr(m) for m in missing)}. {_X_HINT}"
        )
    columns = {name: _strings(x[name], argument, name) for name in x}
    _check_lengths(columns, argument)
    return columns


def span_examples(x, y=None, argument="x", y_argument="y"):
    """Examples for `keras_bert.fine_tuning.squad` from raw text and answers.

    Args:
        x: dict of `question` and `context` (or a tuple of them).
        y: `None`, a dict of `text` and `answer_start` (`answer_start` may
            be left out when every text is `""`), or a list with one SQuAD
            `answers` entry per question: a list of `{"text",
            "answer_start"}` dicts, or a dict of `text` and `answer_start`
            lists (Hugging Face `datasets`' layout). The first answer is
            the training target; all of them are gold answers for
            `evaluate`. An empty text (or no answers) means no answer: the
            windows are labelled at `[CLS]`, as SQuAD v2.0 is.
        argument, y_argument: the names errors give `x` and `y`.

    Returns:
        A dict of lists: `id` (`"0"`, `"1"`, ...), `question`, `context`
        and, with `y`, `answer_text`, `answer_start` (`-1` for no answer)
        and `answers` (every gold text; `[""]` for no answer).

    Raises:
        ValueError: naming the fields, for lengths that differ; naming the
            example and showing both strings, for an `answer_start` that
            does not point at its text.
    """
    examples = question_context_dict(x, argument)
    count = len(examples["question"])
    examples["id"] = [str(index) for index in range(count)]
    if y is None:
        return examples
    texts, starts, answers = _answers(y, count, y_argument)
    for index, (context, text, start) in enumerate(
        zip(examples["context"], texts, starts)
    ):
        if text and context[start : start + len(text)] != text:
            found = context[max(start, 0) : max(start, 0) + len(text)]
            raise ValueError(
                f"Received an invalid value for argument `{y_argument}`: "
                f"example {index}'s answer_start={start} does not point at "
                f"its text. context[{start}:{start + len(text)}] is "
                f"{found!r}, the text is {text!r}. Give each answer's "
                "character offset in its context (Python `str` indexing)."
            )
    examples.update(
        answer_text=texts,
        answer_start=[
            start if text else -1 for text, start in zip(texts, starts)
        ],
        answers=answers,
    )
    return examples


def span_windows(examples, preprocessor, doc_stride, max_query_length):
    """Every window of every example, with labels when `examples` has
    answers: `squad_features` with the preprocessor's tokenizer and
    `sequence_length` (numpy arrays, one row per window)."""
    return squad_features(
        examples,
        preprocessor.tokenizer,
        max_seq_length=preprocessor.sequence_length,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
    )


def window_inputs(features):
    """The model's inputs among the window fields."""
    return {name: features[name] for name in BACKBONE_INPUTS}


def window_dataset(features):
    """Unbatched `(inputs, labels)` windows, labels as the model names its
    outputs."""
    return tf.data.Dataset.from_tensor_slices(
        (
            window_inputs(features),
            {
                "start_logits": features["start_positions"],
                "end_logits": features["end_positions"],
            },
        )
    )


def _answers(y, count, argument):
    """`(texts, starts, gold answers)`: three lists of `count` entries."""
    if isinstance(y, Mapping):
        if "text" not in y:
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: no "
                f"'text'; it holds {sorted(y)}. {_Y_HINT}"
            )
        texts = _strings(y["text"], argument, "text")
        if "answer_start" in y:
            starts = [
                -1 if s is None else int(s)
                for s in np.asarray(y["answer_start"], dtype=object).ravel()
            ]
        elif any(texts):
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                "'text' without 'answer_start'. Only questions without an "
                f'answer (text "") may leave it out. {_Y_HINT}'
            )
        else:
            starts = [-1] * len(texts)
        _check_lengths(
            {"question and context": [None] * count, "text": texts}
            | ({"answer_start": starts} if "answer_start" in y else {}),
            argument,
        )
        return texts, starts, [[text] for text in texts]
    if not isinstance(y, (list, tuple)):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{type(y).__name__}. {_Y_HINT}"
        )
    _check_lengths(
        {"question and context": [None] * count, "answers": y}, argument
    )
    texts, starts, answers = [], [], []
    for index, entry in enumerate(y):
        if isinstance(entry, Mapping):  # {"text": [...], "answer_start": [...]}
            entry = [
                {"text": t, "answer_start": s}
                for t, s in zip(entry.get("text", []), entry["answer_start"])
            ] if "answer_start" in entry else None  # fmt: skip
        if not isinstance(entry, (list, tuple)) or not all(
            isinstance(a, Mapping) and "text" in a and "answer_start" in a
            for a in entry
        ):
            raise ValueError(
                f"Received an invalid value for argument `{argument}`: "
                f"entry {index} is not a SQuAD `answers` entry (a list of "
                '`{"text", "answer_start"}` dicts). ' + _Y_HINT
            )
        first = entry[0] if entry else {"text": "", "answer_start": -1}
        texts.append(str(first["text"]))
        starts.append(int(first["answer_start"]))
        answers.append([str(a["text"]) for a in entry] or [""])
    return texts, starts, answers


def _strings(values, argument, name):
    """`values` (list, array or tensor of str or bytes) as a list of str."""
    if isinstance(values, (str, bytes)):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: "
            f"{name!r} is one string; pass a list, one per question."
        )
    if isinstance(values, tf.Tensor):
        values = values.numpy()
    values = np.asarray(values, dtype=object).ravel()
    return [
        v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values
    ]


def _check_lengths(columns, argument):
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name}: {n}" for name, n in lengths.items())
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: its "
            f"fields differ in length ({shown}). Pass one entry per "
            "question in each."
        )
