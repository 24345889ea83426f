"""SQuAD v1.1 / v2.0 scores: hand-worked cases and the official rules."""

import copy

import numpy as np
import pytest

from keras_bert.fine_tuning.squad.metrics import exact_match
from keras_bert.fine_tuning.squad.metrics import normalize_answer
from keras_bert.fine_tuning.squad.metrics import squad_v1_metrics
from keras_bert.fine_tuning.squad.metrics import squad_v2_metrics
from keras_bert.fine_tuning.squad.metrics import token_f1
from tests.fine_tuning.squad.squad_references import REFERENCES
from tests.fine_tuning.squad.squad_references import examples_from_data
from tests.fine_tuning.squad.squad_references import official_squad_scoring
from tests.fine_tuning.squad.squad_references import squad_dev_data

# Parity with the references is exact up to float summation order.
TOLERANCE = 1e-9


@pytest.mark.parametrize(
    "text, expected",
    [
        # lower "the  eiffel-tower!", drop punctuation "the  eiffeltower",
        # article -> " ": "   eiffeltower", collapse: "eiffeltower".
        ("The  Eiffel-Tower!", "eiffeltower"),
        # Punctuation goes before articles: "a-team" -> "ateam" keeps its a.
        ("a-team", "ateam"),
        # "(the) cat" -> "the cat" -> " cat" -> "cat".
        ("(THE) Cat", "cat"),
        ("An apple a day", "apple day"),
        # Whole words only: "theatre", "another", "banana" keep their letters.
        ("theatre another banana", "theatre another banana"),
        # "_" is ASCII punctuation: "the_end" -> "theend", no article left.
        ("the_end", "theend"),
        # \b is Unicode-aware: "é" is a word character, so "éthe" stays.
        ("éthe the", "éthe"),
        # Only ASCII punctuation goes: the en dash and "’" stay.
        ("Café’s – naïve.", "café’s – naïve"),
        # str.split splits on Unicode whitespace (no-break space, tab).
        ("foo\u00a0bar\tbaz\n", "foo bar baz"),
        # Articles become a space: between non-ASCII dashes that splits.
        ("rock–the–boat", "rock– –boat"),
        ("the a an", ""),
        ("", ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_partial_overlap_f1():
    # pred [denver, broncos, won], gold [denver, broncos]: 2 in common,
    # precision 2/3, recall 2/2, F1 = 2 * (2/3) * 1 / (2/3 + 1) = 4/5.
    assert token_f1("Denver Broncos won", "the Denver Broncos") == (
        pytest.approx(0.8, abs=1e-15)
    )
    # Bags, not sets: {x: 2, y: 1} & {x: 1, y: 2} = {x: 1, y: 1}, 2 in
    # common; precision = recall = 2/3, F1 = 2/3.
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3, abs=1e-15)
    assert token_f1("cat", "dog") == 0
    assert exact_match("Denver Broncos won", "the Denver Broncos") == 0


def test_empty_answers_v1_and_v2_rules():
    # "the" and "a" both normalise to "": exact match 1 under both rules;
    # v1.1's F1 finds no common token (0), v2.0's says both empty -> 1.
    assert exact_match("the", "a") == 1
    assert token_f1("the", "a") == 0
    assert token_f1("the", "a", version_2_with_negative=True) == 1
    # One side empty: 0 under both rules.
    assert token_f1("", "Broncos") == 0
    assert token_f1("", "Broncos", version_2_with_negative=True) == 0
    assert token_f1("Broncos", "", version_2_with_negative=True) == 0


def test_v1_max_over_gold_answers_and_missing_predictions():
    examples = {
        "id": ["q1", "q2", "q3", "q4"],
        "answers": [
            ["Denver Broncos", "Broncos", "the Denver Broncos team"],
            ["Denver Broncos", "Broncos", "the Denver Broncos team"],
            ["Santa Clara, California"],
            ["1990"],
        ],
    }
    predictions = {
        # Matches the second gold answer: exact 1, F1 1.
        "q1": "broncos",
        # vs "denver broncos": p 1, r 1/2 -> 2/3; vs "broncos": 0;
        # vs "denver broncos team": p 1, r 1/3 -> 1/2. Max: exact 0, F1 2/3.
        "q2": "Denver",
        # [santa, clara] vs [santa, clara, california]: p 1, r 2/3 -> 4/5.
        "q3": "Santa Clara",
        # q4 has no prediction: scored 0, still counted in the total.
    }
    result = squad_v1_metrics(examples, predictions)
    # exact (1 + 0 + 0 + 0) / 4; F1 (1 + 2/3 + 4/5 + 0) / 4 = 37/60.
    assert result["exact_match"] == pytest.approx(25.0, abs=1e-12)
    assert result["f1"] == pytest.approx(100 * 37 / 60, abs=1e-12)
    assert set(result) == {"exact_match", "f1"}


def test_v1_rejects_unanswerable_questions():
    with pytest.raises(ValueError, match="squad_v2_metrics"):
        squad_v1_metrics({"id": ["q1"], "answers": [[]]}, {"q1": ""})


def _repeated_ids_data():
    """A file where "q1" names two questions; "q2" is unanswerable once."""

    def qa(qid, answers):
        return {
            "id": qid,
            "question": "?",
            "answers": [{"text": t, "answer_start": 0} for t in answers],
            "is_impossible": not answers,
        }

    qas = [qa("q1", ["Denver"]), qa("q2", []), qa("q1", ["Paris"])]
    qas += [qa("q3", ["7"]), qa("q2", ["Lyon"])]
    context = "Denver, Paris, Lyon, 7."
    return [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]


def test_repeated_ids_score_as_the_official_scripts():
    # One prediction per id, however often the id occurs.
    predictions = {"q1": "Paris", "q2": "Lyon", "q3": "7"}
    v1_examples = {
        "id": ["q1", "q1", "q3", "q2"],
        "answers": [["Denver"], ["Paris"], ["7"], ["Lyon"]],
    }
    # v1.1: every occurrence, against its own answers: 0 + 1 + 1 + 1.
    assert squad_v1_metrics(v1_examples, predictions) == {
        "exact_match": 75.0,
        "f1": 75.0,
    }
    # v2.0: each id once, as its last occurrence: q1 "Paris" (right), q2
    # answerable "Lyon" (right), q3 (right).
    examples = examples_from_data(_repeated_ids_data())
    result = squad_v2_metrics(examples, predictions)
    assert result["total"] == 3 and result["HasAns_total"] == 3
    assert "NoAns_total" not in result
    assert result["exact"] == result["f1"] == 100.0


@pytest.mark.parametrize("reference", REFERENCES)
def test_repeated_ids_match_reference(reference):
    official = official_squad_scoring(reference)
    data = _repeated_ids_data()
    examples = examples_from_data(data)
    # v1.1 scores answerable questions only.
    v1_data = copy.deepcopy(data)
    qas = v1_data[0]["paragraphs"][0]["qas"]
    qas[:] = [qa for qa in qas if qa["answers"]]
    v1 = examples_from_data(v1_data)
    null_odds = {"q1": 0.5, "q2": 2.0, "q3": -1.0}
    for predictions in (
        {"q1": "Paris", "q2": "Lyon", "q3": "7"},
        {"q1": "Denver", "q2": "", "q3": "the 7"},
    ):
        assert squad_v1_metrics(v1, predictions) == pytest.approx(
            official.evaluate_v1(v1_data, predictions), abs=TOLERANCE
        )
        for odds in (None, null_odds):
            expected = official.evaluate_v2(data, predictions, odds)
            result = squad_v2_metrics(examples, predictions, odds)
            assert list(result) == list(expected)
            assert result == pytest.approx(expected, abs=TOLERANCE)


def _v2_examples():
    return {
        "id": ["q1", "q2", "q3", "q4"],
        "answers": [["Denver Broncos"], ["Santa Clara"], [""], [""]],
        "is_impossible": [False, False, True, True],
    }


def test_v2_without_null_odds():
    predictions = {
        "q1": "the Denver Broncos",  # exact 1, F1 1
        "q2": "Clara",  # p 1, r 1/2: exact 0, F1 2/3
        "q3": "Levi's Stadium",  # unanswerable, answered: 0, 0
        "q4": "",  # unanswerable, "" predicted: 1, 1
    }
    result = squad_v2_metrics(_v2_examples(), predictions)
    assert result == pytest.approx(
        {
            "exact": 100 * 2 / 4,
            "f1": 100 * (1 + 2 / 3 + 0 + 1) / 4,
            "total": 4,
            "HasAns_exact": 100 * 1 / 2,
            "HasAns_f1": 100 * (1 + 2 / 3) / 2,
            "HasAns_total": 2,
            "NoAns_exact": 100 * 1 / 2,
            "NoAns_f1": 100 * 1 / 2,
            "NoAns_total": 2,
        },
        abs=1e-12,
    )
    assert list(result)[:3] == ["exact", "f1", "total"]


def test_v2_null_odds_threshold_and_best_threshold():
    predictions = {"q1": "Denver Broncos", "q2": "Clara", "q3": "x", "q4": ""}
    # Raw exact 1, 0, 0, 1; raw F1 1, 2/3, 0, 1.
    null_odds = {"q1": -2.0, "q2": 0.5, "q3": 3.0, "q4": -1.0}
    result = squad_v2_metrics(_v2_examples(), predictions, null_odds)
    # Threshold 1.0: only q3 (3.0 > 1.0) becomes "no answer", which is
    # right for it: exact (1 + 0 + 1 + 1) / 4, F1 (1 + 2/3 + 1 + 1) / 4.
    assert result["exact"] == pytest.approx(75.0, abs=1e-12)
    assert result["f1"] == pytest.approx(100 * (11 / 3) / 4, abs=1e-12)
    assert result["NoAns_exact"] == pytest.approx(100.0, abs=1e-12)
    # Sweep by odds, starting from 2 (the unanswerable q3, q4 right):
    # exact: q1 (-2.0) +1 -> 3, best, thresh -2.0; q4 (-1.0) "" +0;
    #        q2 (0.5) +0; q3 (3.0) answered -1 -> 2. Best 3/4 at -2.0.
    # F1:    q1 +1 -> 3 (thresh -2.0); q4 +0; q2 +2/3 -> 11/3, best,
    #        thresh 0.5; q3 -1. Best (11/3)/4 at 0.5.
    assert result["best_exact"] == pytest.approx(75.0, abs=1e-12)
    assert result["best_exact_thresh"] == -2.0
    assert result["best_f1"] == pytest.approx(100 * (11 / 3) / 4, abs=1e-12)
    assert result["best_f1_thresh"] == 0.5
    # A higher threshold lets q3's wrong answer count: exact 2/4.
    higher = squad_v2_metrics(
        _v2_examples(), predictions, null_odds, null_odds_threshold=5.0
    )
    assert higher["exact"] == pytest.approx(50.0, abs=1e-12)
    assert higher["best_exact"] == result["best_exact"]


def test_v2_best_threshold_ties_follow_null_odds_order():
    examples = {
        "id": ["a", "b"],
        "answers": [["yes"], [""]],
        "is_impossible": [False, True],
    }
    predictions = {"a": "yes", "b": "no"}
    # Start at 1 (b right). Visiting b first: -1 -> 0, then a: +1 -> 1,
    # never above 1: best 1/2 at the initial 0.0. Visiting a first:
    # +1 -> 2, best 2/2 (the official sweep's view of a tie), then 1.
    b_first = squad_v2_metrics(examples, predictions, {"b": 0.0, "a": 0.0})
    a_first = squad_v2_metrics(examples, predictions, {"a": 0.0, "b": 0.0})
    assert b_first["best_exact"] == 50.0
    assert a_first["best_exact"] == 100.0


def test_v2_unanswerable_gold_forms_and_breakdown_keys():
    # Unanswerable gold as [] or [""], or only answers that normalise to
    # "" ("The", flagged answerable): each scores "" as right.
    examples = {
        "id": ["q1", "q2", "q3"],
        "answers": [[], [""], ["The"]],
        "is_impossible": [True, True, False],
    }
    result = squad_v2_metrics(examples, {"q1": "", "q2": "", "q3": ""})
    assert result["exact"] == result["f1"] == 100.0
    assert result["HasAns_total"] == 1 and result["NoAns_total"] == 2
    # Without `is_impossible`, no non-empty answer means unanswerable.
    del examples["is_impossible"]
    result = squad_v2_metrics(examples, {"q1": "", "q2": "", "q3": ""})
    assert result["HasAns_total"] == 1 and result["NoAns_total"] == 2
    # Keys only for the kinds of questions present, as the official script.
    answerable_only = {"id": ["q"], "answers": [["x"]]}
    result = squad_v2_metrics(answerable_only, {"q": "x"})
    assert "HasAns_exact" in result and "NoAns_exact" not in result
    assert "best_exact" not in result


def test_v2_needs_every_prediction_and_null_odds():
    with pytest.raises(ValueError, match="q4"):
        squad_v2_metrics(_v2_examples(), {"q1": "", "q2": "", "q3": ""})
    with pytest.raises(ValueError, match="null_odds"):
        squad_v2_metrics(
            _v2_examples(),
            dict.fromkeys(["q1", "q2", "q3", "q4"], ""),
            {"q1": 0.0},
        )


# --- Parity with independent ports of the official scripts -------------------


def _synthetic_predictions(data, seed):
    """Realistic right, partly right, wrong and empty answers."""
    rng = np.random.default_rng(seed)
    predictions = {}
    for article in data:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            words = context.split()
            for qa in paragraph["qas"]:
                golds = [a["text"] for a in qa["answers"]] or [""]
                gold = golds[rng.integers(len(golds))]
                kind = rng.integers(8)
                if kind == 0:
                    text = gold
                elif kind == 1:  # case, punctuation and article noise
                    text = f"The {gold.upper()}."
                elif kind == 2:  # a word dropped or added
                    gold_words = gold.split()
                    text = " ".join(gold_words[1:] or ["extra"] + gold_words)
                elif kind == 3:  # a random span of the context
                    start = rng.integers(len(context))
                    text = context[start : start + rng.integers(1, 40)]
                elif kind == 4:  # random words of the context
                    start = rng.integers(len(words))
                    text = " ".join(words[start : start + rng.integers(1, 6)])
                elif kind == 5:
                    text = ""
                elif kind == 6:  # only an article and punctuation
                    text = rng.choice(["the", "a.", " , "])
                else:  # a gold answer of another question
                    text = rng.choice(golds) + " " + rng.choice(words)
                predictions[qa["id"]] = text
    return predictions


def _as_v2(data, seed):
    """The dev set with every fourth question made unanswerable."""
    data = copy.deepcopy(data)
    rng = np.random.default_rng(seed)
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if rng.random() < 0.25:
                    qa["plausible_answers"] = qa["answers"]
                    qa["answers"] = []
                    qa["is_impossible"] = True
    return data


def _small_v2_data():
    """A hand-written v2.0 file: answerable and unanswerable questions."""
    context = "The Broncos beat the Panthers 24–10 in Santa Clara in 2016."
    unanswerable = [("u1", "Tampa"), ("u2", ""), ("u3", "2015"), ("u4", "")]
    answerable = [
        ("h1", ["Denver Broncos", "Broncos"], "Broncos"),
        ("h2", ["24–10"], "24–10 in"),
        ("h3", ["Santa Clara"], ""),
        ("h4", ["2016"], "in 2016."),
    ]
    qas = [
        {"id": qid, "question": "?", "answers": [], "is_impossible": True}
        for qid, _ in unanswerable
    ] + [
        {
            "id": qid,
            "question": "?",
            "answers": [{"text": t, "answer_start": 0} for t in texts],
            "is_impossible": False,
        }
        for qid, texts, _ in answerable
    ]
    data = [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]
    predictions = dict(unanswerable)
    predictions.update({qid: text for qid, _, text in answerable})
    return data, predictions


@pytest.mark.parametrize("reference", REFERENCES)
def test_exact_and_f1_match_reference_on_dev(reference):
    official = official_squad_scoring(reference)
    data = squad_dev_data()
    predictions = _synthetic_predictions(data, seed=0)
    examples = examples_from_data(data)
    for question_id, golds in zip(examples["id"], examples["answers"]):
        prediction = predictions[question_id]
        for gold in golds:
            assert exact_match(prediction, gold) == official.compute_exact(
                gold, prediction
            )
            assert token_f1(
                prediction, gold, version_2_with_negative=True
            ) == pytest.approx(
                official.compute_f1(gold, prediction), abs=TOLERANCE
            )


@pytest.mark.parametrize("reference", REFERENCES)
def test_v1_metrics_match_reference_on_dev(reference):
    official = official_squad_scoring(reference)
    data = squad_dev_data()
    examples = examples_from_data(data)
    for seed in range(2):
        predictions = _synthetic_predictions(data, seed)
        del predictions[examples["id"][seed]]  # a missing one scores 0
        expected = official.evaluate_v1(data, predictions)
        result = squad_v1_metrics(examples, predictions)
        assert result == pytest.approx(expected, abs=TOLERANCE)
        assert 10 < result["exact_match"] < result["f1"] < 90


@pytest.mark.parametrize("reference", REFERENCES)
def test_v2_metrics_match_reference(reference):
    official = official_squad_scoring(reference)
    small_data, small_predictions = _small_v2_data()
    dev_data = _as_v2(squad_dev_data(), seed=1)
    cases = [
        (small_data, small_predictions),
        (dev_data, _synthetic_predictions(dev_data, seed=1)),
    ]
    for case, (data, predictions) in enumerate(cases):
        examples = examples_from_data(data)
        rng = np.random.default_rng(case)
        ids = list(predictions)
        rng.shuffle(ids)  # the sweep's tie order follows the dict's
        # One decimal makes ties; odds around the default threshold 1.0.
        odds = np.round(rng.normal(0.5, 2.0, len(ids)), 1)
        null_odds = {q: float(o) for q, o in zip(ids, odds)}
        for odds_or_none in (None, null_odds):
            expected = official.evaluate_v2(data, predictions, odds_or_none)
            result = squad_v2_metrics(examples, predictions, odds_or_none)
            assert list(result) == list(expected)
            assert result == pytest.approx(expected, abs=TOLERANCE)
        assert result["NoAns_total"] > 0 and result["HasAns_total"] > 0
        assert result["best_f1"] >= result["f1"] - TOLERANCE
