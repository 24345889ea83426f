"""Reads SQuAD v1.1 / v2.0 JSON files into a dict of example lists."""

import collections
import json
import re

import tensorflow as tf
from absl import logging

# How many ids each warning lists before "...".
_IDS_SHOWN = 5
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_squad_examples(path, version_2_with_negative=False):
    """Reads a SQuAD file in the official JSON format.

    One example per question, in file order. The first gold answer is the
    training target; all gold answers are kept for evaluation. Problems in
    the file never drop it silently; each has a defined result and a logged
    count with the ids concerned:

    - an answer whose `answer_start` does not point at its text (the
      official files hold a few): the occurrence of the text nearest to
      `answer_start` is used; if the text is not in the context at all, the
      example is kept for evaluation but marked untrainable;
    - an empty (or all-whitespace) question or context, or an empty answer
      text: kept for evaluation, marked untrainable;
    - an unanswerable question (`is_impossible`, or no answers) in a file
      read without `version_2_with_negative`: `ValueError` naming the id
      and the flag;
    - a question id that occurs more than once: every occurrence is kept
      (and trained on); the predictions, keyed by id, hold the answer of
      its last occurrence, and the metrics score that as the official
      scripts score `predictions.json` (v1.1: every occurrence; v2.0: the
      id once, as its last occurrence);
    - a file that is not JSON, or a missing or mistyped field: `ValueError`
      naming the file and the path of the field, e.g.
      `data[3].paragraphs[0].qas[7].answers[0].answer_start`.

    Offsets are Unicode code points (Python `str` indexing), as in the
    official files.

    Args:
        path: str. The JSON file; anything `tf.io.gfile` opens (`gs://...`
            included).
        version_2_with_negative: bool. Accept unanswerable questions
            (SQuAD v2.0). Defaults to `False`.

    Returns:
        A dict of equal-length lists, one entry per question:
        `id` (str), `title` (str), `question` (str), `context` (str),
        `answer_text` (str, the first gold answer; `""` if impossible),
        `answer_start` (int, its code-point offset in `context`; `-1` if
        impossible or not found), `answers` (list of str, every gold
        answer; `[""]` if impossible, as the official v2.0 script scores
        it), `is_impossible` (bool) and `trainable` (bool, `False` for the
        examples training skips).

    Example:

    ```python
    examples = read_squad_examples("squad/dev-v1.1.json")
    examples["question"][0]     # "Which NFL team represented the AFC ..."
    examples["answer_text"][0]  # "Denver Broncos"
    ```
    """
    with tf.io.gfile.GFile(path, "rb") as file:
        raw = file.read()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(
            f"{path} is not a SQuAD JSON file: {error}. Expected the "
            'official format {"data": [{"title", "paragraphs": [...]}]}.'
        ) from None
    reader = _Reader(path, version_2_with_negative)
    articles = reader.field(data, "data", list, "")
    for article_index, article in enumerate(articles):
        reader.read_article(article, f"data[{article_index}]")
    reader.log_problems()
    return reader.examples


class _Reader:
    """Walks the JSON tree, checking each field and collecting examples."""

    def __init__(self, path, version_2_with_negative):
        self.path = path
        self.version_2_with_negative = version_2_with_negative
        self.examples = {
            name: []
            for name in (
                "id", "title", "question", "context", "answer_text",
                "answer_start", "answers", "is_impossible", "trainable",
            )
        }  # fmt: skip
        # Problem name -> ids of the examples it concerns.
        self.problems = collections.defaultdict(list)

    def field(self, node, key, kind, where):
        """`node[key]`, checked to be a `kind`, or a `ValueError`."""
        name = f"{where}.{key}" if where else key
        if not isinstance(node, dict):
            raise ValueError(
                f"{self.path}: {where or 'the top level'} should be a JSON "
                f"object holding {key!r}; found {type(node).__name__}."
            )
        if key not in node:
            raise ValueError(
                f"{self.path}: missing field {name}. Each question needs "
                "`id`, `question` and `answers` (each answer `text` and "
                "`answer_start`); each paragraph `context` and `qas`."
            )
        value = node[key]
        # bool is an int in Python; an answer_start of `true` is an error.
        if not isinstance(value, kind) or (
            kind is int and isinstance(value, bool)
        ):
            raise ValueError(
                f"{self.path}: field {name} should be of type "
                f"{_type_name(kind)}; found {type(value).__name__} "
                f"{_short(value)}."
            )
        return value

    def read_article(self, article, where):
        paragraphs = self.field(article, "paragraphs", list, where)
        title = article.get("title", "")
        title = title if isinstance(title, str) else str(title)
        for index, paragraph in enumerate(paragraphs):
            self.read_paragraph(
                paragraph, f"{where}.paragraphs[{index}]", title
            )

    def read_paragraph(self, paragraph, where, title):
        context = self.field(paragraph, "context", str, where)
        context = self.text(context, f"{where}.context")
        questions = self.field(paragraph, "qas", list, where)
        for index, qa in enumerate(questions):
            self.read_question(qa, f"{where}.qas[{index}]", context, title)

    def read_question(self, qa, where, context, title):
        # Ids are strings in the official files; accept numbers too.
        qid = str(self.field(qa, "id", (str, int), where))
        question = self.field(qa, "question", str, where)
        question = self.text(question, f"{where}.question")
        answers = self.field(qa, "answers", list, where)
        flagged = "is_impossible" in qa and self.field(
            qa, "is_impossible", bool, where
        )
        # v2.0 files flag unanswerable questions with is_impossible (and
        # give them no answers); a question without answers is one too.
        is_impossible = flagged or not answers
        if is_impossible and not self.version_2_with_negative:
            raise ValueError(
                f"{self.path}: question {qid!r} ({where}) is unanswerable "
                f"(is_impossible={flagged}, {len(answers)} answers), which "
                "only SQuAD v2.0 allows. Read the file with "
                "version_2_with_negative=True (the recipe's "
                "--version_2_with_negative flag), or give the question an "
                "answer."
            )
        texts, starts = [], []
        if not is_impossible:  # v2.0 impossible answers are not read
            for index, answer in enumerate(answers):
                answer_where = f"{where}.answers[{index}]"
                text = self.field(answer, "text", str, answer_where)
                texts.append(self.text(text, f"{answer_where}.text"))
                starts.append(
                    self.field(answer, "answer_start", int, answer_where)
                )

        answer_text = texts[0] if texts else ""
        answer_start = -1
        if not context.strip():
            self.problems["empty context"].append(qid)
        elif not is_impossible:
            answer_start = self.locate(qid, context, answer_text, starts[0])
        if not question.strip():
            self.problems["empty question"].append(qid)
        trainable = bool(
            question.strip()
            and context.strip()
            and (is_impossible or answer_start >= 0)
        )

        examples = self.examples
        examples["id"].append(qid)
        examples["title"].append(title)
        examples["question"].append(question)
        examples["context"].append(context)
        examples["answer_text"].append(answer_text)
        examples["answer_start"].append(answer_start)
        examples["answers"].append([""] if is_impossible else texts)
        examples["is_impossible"].append(is_impossible)
        examples["trainable"].append(trainable)

    def locate(self, qid, context, text, start):
        """The code-point offset of answer `text` in `context`, or -1."""
        if not text.strip():
            self.problems["empty answer text"].append(qid)
            return -1
        if start >= 0 and context[start : start + len(text)] == text:
            return start
        found = list(_occurrences(context, text))
        if not found:
            self.problems["answer text not in context"].append(qid)
            return -1
        self.problems["answer_start corrected"].append(qid)
        # Nearest to the stated start; the earlier one on a tie.
        return min(found, key=lambda index: (abs(index - start), index))

    def text(self, string, where):
        """`string`, with lone surrogates (invalid in UTF-8) replaced.

        JSON can escape a lone surrogate, which TensorFlow cannot encode as
        UTF-8; one U+FFFD for each keeps every code-point offset in place.
        """
        fixed = _SURROGATE.sub("\ufffd", string)
        if fixed != string:
            self.problems["lone surrogates replaced by U+FFFD"].append(where)
        return fixed

    def log_problems(self):
        ids = self.examples["id"]
        logging.info(
            "Read %d SQuAD questions (%d unanswerable, %d untrainable) "
            "from %s.",
            len(ids),
            sum(self.examples["is_impossible"]),
            self.examples["trainable"].count(False),
            self.path,
        )
        outcomes = {
            "answer_start corrected": "used the nearest occurrence of the "
            "answer text",
            "answer text not in context": "kept for evaluation, skipped in "
            "training",
            "empty answer text": "kept for evaluation, skipped in training",
            "empty question": "kept for evaluation, skipped in training",
            "empty context": "kept for evaluation, skipped in training",
            "lone surrogates replaced by U+FFFD": "offsets unchanged",
        }
        for problem, concerned in self.problems.items():
            shown = ", ".join(repr(i) for i in concerned[:_IDS_SHOWN])
            more = ", ..." if len(concerned) > _IDS_SHOWN else ""
            logging.warning(
                "%s: %d x %s (%s): %s%s.",
                self.path,
                len(concerned),
                problem,
                outcomes[problem],
                shown,
                more,
            )
        duplicates = [i for i, n in collections.Counter(ids).items() if n > 1]
        if duplicates:
            logging.warning(
                "%s: %d question ids occur more than once (each gets one "
                "prediction, its last occurrence's, scored as the official "
                "scripts score predictions.json: v1.1 at every occurrence, "
                "v2.0 once; give each question its own id to score each "
                "separately): %s",
                self.path,
                len(duplicates),
                duplicates[:_IDS_SHOWN],
            )


def _occurrences(text, part):
    index = text.find(part)
    while index >= 0:
        yield index
        index = text.find(part, index + 1)


def _type_name(kind):
    names = {str: "string", int: "integer", list: "list", bool: "boolean"}
    if isinstance(kind, tuple):
        return " or ".join(names[k] for k in kind)
    return names[kind]


def _short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
