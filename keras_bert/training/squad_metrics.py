"""The official SQuAD v1.1 and v2.0 scores: exact match and token F1.

These follow the rules of the official evaluation scripts,
`evaluate-v1.1.py` and `evaluate-v2.0.py` (Rajpurkar et al.), so that the
numbers are comparable with published ones:

- Answers are normalised before comparing: lower-cased, ASCII punctuation
  removed, the articles "a", "an" and "the" replaced by a space, and runs of
  whitespace collapsed, in that order.
- F1 is over the bag of whitespace tokens of the normalised answers.
- A question scores the maximum over its gold answers.
- Predictions are keyed by question id, so an id that occurs more than
  once in a set has one prediction; each version scores it as its script
  does (below), so the scores always equal the official scripts' on the
  same `predictions.json`.

The two versions differ in details that move the numbers, and each is kept:

- v1.1 scores an empty answer against an empty one as F1 0 and counts a
  question without a prediction as 0. A repeated id is scored at every
  occurrence, each against its own gold answers, and each counts in the
  total.
- v2.0 drops gold answers that normalise to nothing; a question left with
  none (an unanswerable one) has the single gold answer `""`, and an empty
  prediction for it scores 1 (exact and F1). Every question needs a
  prediction. A repeated id is scored once, against the gold answers of
  its last occurrence (the script's dicts keep the last). With
  `null_odds`, the score of each question whose null odds exceed
  `null_odds_threshold` becomes "predicted no answer", and the best
  threshold over the null odds is reported (`best_exact`, `best_f1`).

Examples are the dict that `read_squad_examples` returns; only its `id`,
`answers` and (v2.0) `is_impossible` entries are read.
"""

import collections
import re
import string

from absl import logging

# `string.punctuation` is ASCII only: the official scripts keep "–", "’" etc.
_REMOVE_PUNCTUATION = str.maketrans("", "", string.punctuation)
# `\b` is Unicode-aware for `str` patterns, as in the official scripts.
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text):
    """Normalises an answer as the official SQuAD scripts do.

    Lower-cases, removes ASCII punctuation, replaces the articles "a", "an"
    and "the" by a space, then collapses whitespace. The order matters:
    punctuation goes before articles, so `"a-team"` becomes `"ateam"` and
    keeps its "a".

    Args:
        text: str. An answer.

    Returns:
        The normalised str.

    Example:
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = text.lower()
    text = text.translate(_REMOVE_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction, ground_truth):
    """`1` if both answers normalise to the same text, else `0`.

    Example:
    >>> exact_match("the Broncos", "Broncos.")
    1
    """
    return int(normalize_answer(prediction) == normalize_answer(ground_truth))


def token_f1(prediction, ground_truth, version_2_with_negative=False):
    """Token F1 between two answers after normalisation.

    Overlap counts tokens with multiplicity (a bag, not a set).

    Args:
        prediction: str. The predicted answer.
        ground_truth: str. One gold answer.
        version_2_with_negative: bool. SQuAD v2.0's rule for empty answers:
            when either side normalises to no token, F1 is `1` if both do
            and `0` otherwise. v1.1 (the default) scores that case `0`.

    Returns:
        A float in `[0, 1]` (an int `0` or `1` in the degenerate cases).

    Example:
    >>> token_f1("Denver Broncos", "the Broncos")  # precision 1/2, recall 1
    0.6666666666666666
    """
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    if version_2_with_negative and not (
        prediction_tokens and ground_truth_tokens
    ):
        return int(prediction_tokens == ground_truth_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(
        ground_truth_tokens
    )
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def squad_v1_metrics(examples, predictions):
    """SQuAD v1.1's exact match and F1, in percent, as `evaluate-v1.1.py`.

    Args:
        examples: dict with `id` (question ids) and `answers` (per question,
            the list of gold answer texts), as `read_squad_examples` returns.
        predictions: dict, question id -> predicted answer text. A question
            without a prediction scores 0 (and is logged). A repeated id is
            scored at every occurrence, against that occurrence's answers.

    Returns:
        `{"exact_match": float, "f1": float}`, each in `[0, 100]`.

    Example:
    >>> examples = {"id": ["q1", "q2"], "answers": [["Denver Broncos"], ["7"]]}
    >>> squad_v1_metrics(examples, {"q1": "Broncos", "q2": "7"})
    {'exact_match': 50.0, 'f1': 83.33333333333333}
    """
    ids, answers = _ids_and_answers(examples)
    _log_repeated(ids, "each occurrence scored against the id's prediction")
    exact_total = f1_total = 0
    missing = []
    for question_id, ground_truths in zip(ids, answers):
        if not ground_truths:
            raise ValueError(
                f"Question {question_id!r} has no gold answer; SQuAD v1.1 "
                "scores only answerable questions. Score a set with "
                "unanswerable questions with `squad_v2_metrics`."
            )
        if question_id not in predictions:
            missing.append(question_id)
            continue
        prediction = predictions[question_id]
        exact_total += max(exact_match(prediction, g) for g in ground_truths)
        f1_total += max(token_f1(prediction, g) for g in ground_truths)
    _log_missing(missing, "scored 0")
    return {
        "exact_match": 100.0 * exact_total / len(ids),
        "f1": 100.0 * f1_total / len(ids),
    }


def squad_v2_metrics(
    examples, predictions, null_odds=None, null_odds_threshold=1.0
):
    """SQuAD v2.0's scores, as `evaluate-v2.0.py` computes them.

    Args:
        examples: dict with `id`, `answers` and `is_impossible`, as
            `read_squad_examples(..., version_2_with_negative=True)`
            returns. Without `is_impossible`, a question is unanswerable
            when none of its answers is a non-empty string. A repeated id
            is scored once, as its last occurrence.
        predictions: dict, question id -> predicted answer text (`""` for
            "no answer"). Every question needs one.
        null_odds: optional dict, question id -> float, how strongly the
            model prefers "no answer" (the post-processing's `null_odds`,
            the official script's `--na-prob-file`). Every question needs
            one. With it, the result also has the best-threshold scores.
        null_odds_threshold: float. A question whose null odds exceed this
            is scored as if its prediction were "no answer" (the official
            `--na-prob-thresh`). Defaults to `1.0`, the official default.

    Returns:
        A dict, in the official script's order: `exact`, `f1` (percent),
        `total`; `HasAns_exact`, `HasAns_f1`, `HasAns_total` if some
        questions have answers; `NoAns_exact`, `NoAns_f1`, `NoAns_total` if
        some have none; and with `null_odds`, `best_exact`,
        `best_exact_thresh`, `best_f1`, `best_f1_thresh`: the best scores
        over thresholds on the null odds and the thresholds that reach them.

    Example:
    >>> examples = {"id": ["q1", "q2"], "answers": [["Denver Broncos"], []],
    ...             "is_impossible": [False, True]}
    >>> squad_v2_metrics(examples, {"q1": "Broncos", "q2": ""})["f1"]
    83.33333333333333
    """
    ids, answers = _ids_and_answers(examples)
    if "is_impossible" in examples:
        has_answer = [not bool(x) for x in examples["is_impossible"]]
    else:
        has_answer = [any(a for a in gold) for gold in answers]
    _log_repeated(ids, "each scored once, as its last occurrence")
    # evaluate-v2.0.py keys everything by id: a repeated id keeps its first
    # place and its last occurrence's answers, as these dicts do.
    has_answer = dict(zip(ids, has_answer))
    gold_answers = dict(zip(ids, answers))
    ids = list(gold_answers)
    _check_covers(ids, predictions, "predictions", "a prediction")
    if null_odds is not None:
        _check_covers(ids, null_odds, "null_odds", "null odds")

    exact_raw, f1_raw = {}, {}
    for question_id, gold in gold_answers.items():
        # An unanswerable question's only correct answer is "".
        gold = [a for a in gold if normalize_answer(a)] or [""]
        prediction = predictions[question_id]
        exact_raw[question_id] = max(exact_match(prediction, a) for a in gold)
        f1_raw[question_id] = max(
            token_f1(prediction, a, version_2_with_negative=True) for a in gold
        )

    # Without null odds the official script takes them as 0 for every
    # question, which matters only for a negative threshold.
    odds = null_odds if null_odds is not None else dict.fromkeys(ids, 0.0)
    exact = _apply_null_threshold(
        exact_raw, odds, has_answer, null_odds_threshold
    )
    f1 = _apply_null_threshold(f1_raw, odds, has_answer, null_odds_threshold)

    result = _percentages(exact, f1, ids)
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        subset = [q for q in ids if has_answer[q] == wanted]
        if subset:
            for key, value in _percentages(exact, f1, subset).items():
                result[f"{prefix}_{key}"] = value
    if null_odds is not None:
        for name, raw in (("exact", exact_raw), ("f1", f1_raw)):
            best, threshold = _best_null_threshold(
                raw, predictions, null_odds, has_answer
            )
            result[f"best_{name}"] = best
            result[f"best_{name}_thresh"] = threshold
    return result


def _ids_and_answers(examples):
    ids = [str(question_id) for question_id in examples["id"]]
    answers = [list(gold) for gold in examples["answers"]]
    if len(ids) != len(answers):
        raise ValueError(
            "`examples['id']` and `examples['answers']` must have one entry "
            f"per question. Received: {len(ids)} ids and {len(answers)} "
            "answer lists."
        )
    if not ids:
        raise ValueError("Received no examples to score; pass at least one.")
    return ids, answers


def _log_repeated(ids, outcome):
    repeated = [q for q, n in collections.Counter(ids).items() if n > 1]
    if repeated:
        logging.warning(
            "%d question ids occur more than once (%s, as the official "
            "script does), e.g. %s.",
            len(repeated),
            outcome,
            repeated[:3],
        )


def _check_covers(ids, scores, name, what):
    missing = [question_id for question_id in ids if question_id not in scores]
    if missing:
        raise ValueError(
            f"SQuAD v2.0 needs {what} for every question; `{name}` lacks "
            f"{len(missing)} of {len(ids)}, e.g. {missing[:3]}. Predict every "
            'question of the set (`""` for no answer).'
        )


def _log_missing(missing, outcome):
    if missing:
        logging.warning(
            "%d questions have no prediction and are %s, e.g. %s.",
            len(missing),
            outcome,
            missing[:3],
        )


def _apply_null_threshold(scores, null_odds, has_answer, threshold):
    # Above the threshold the answer is taken to be "no answer", which is
    # right exactly when the question has none.
    return {
        question_id: float(not has_answer[question_id])
        if null_odds[question_id] > threshold
        else score
        for question_id, score in scores.items()
    }


def _percentages(exact, f1, ids):
    return {
        "exact": 100.0 * sum(exact[q] for q in ids) / len(ids),
        "f1": 100.0 * sum(f1[q] for q in ids) / len(ids),
        "total": len(ids),
    }


def _best_null_threshold(scores, predictions, null_odds, has_answer):
    """The threshold on the null odds that maximises the total score.

    The sweep starts below every odds, where each question is answered
    "no answer" and only the unanswerable ones score. Passing a question's
    odds lets its prediction through: an answerable question gains its
    score, an unanswerable one loses its point if the prediction is not
    empty. Questions are visited in increasing odds (ties in the order of
    `null_odds`), and the first running maximum wins, as in the official
    `find_best_thresh`.
    """
    running = sum(1 for q in scores if not has_answer[q])
    best, best_threshold = running, 0.0
    for question_id in sorted(null_odds, key=null_odds.__getitem__):
        if question_id not in scores:
            continue
        if has_answer[question_id]:
            running += scores[question_id]
        elif predictions[question_id]:
            running -= 1
        if running > best:
            best, best_threshold = running, float(null_odds[question_id])
    return 100.0 * best / len(scores), best_threshold
