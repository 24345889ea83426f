"""SQuAD post-processing: n-best spans, max context, null answers, files."""

import json
import math
import re

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.fine_tuning.squad.postprocess import compute_predictions
from keras_bert.fine_tuning.squad.postprocess import write_predictions

QUESTION_LENGTH = 2  # [CLS] q q [SEP] context... [SEP] padding
SEQUENCE_LENGTH = 14
LOW = -10.0  # the logit of every position not set by hand


def _token_spans(context):
    """Code-point spans of words and punctuation, like WordPiece offsets."""
    return [m.span() for m in re.finditer(r"\w+|[^\w\s]", context)]


def _window(spans, max_context, sequence_length=SEQUENCE_LENGTH):
    """One window's offset and max-context rows; `-1`/`0` off context."""
    offset_start = np.full(sequence_length, -1, "int32")
    offset_end = np.full(sequence_length, -1, "int32")
    is_max = np.zeros(sequence_length, "int32")
    first = QUESTION_LENGTH + 2
    for position, ((start, end), best) in enumerate(zip(spans, max_context)):
        offset_start[first + position] = start
        offset_end[first + position] = end
        is_max[first + position] = best
    return offset_start, offset_end, is_max


def _features(windows, example_index):
    rows = [_window(*window) for window in windows]
    return {
        "example_index": np.array(example_index, "int32"),
        "offset_start": np.stack([row[0] for row in rows]),
        "offset_end": np.stack([row[1] for row in rows]),
        "max_context": np.stack([row[2] for row in rows]),
    }


def _logits(num_windows, values):
    """Logits at `LOW` except `values[(window, position)] = (start, end)`."""
    start = np.full((num_windows, SEQUENCE_LENGTH), LOW, "float32")
    end = np.full((num_windows, SEQUENCE_LENGTH), LOW, "float32")
    for (window, position), (start_value, end_value) in values.items():
        if start_value is not None:
            start[window, position] = start_value
        if end_value is not None:
            end[window, position] = end_value
    return start, end


# "🚀" lies outside the BMP: a byte or UTF-16 offset would cut elsewhere.
CONTEXT = "🚀 Zoë flew to Zürich in 1999, in spring."
SPANS = _token_spans(CONTEXT)
# Tokens: 0 🚀, 1 Zoë, 2 flew, 3 to, 4 Zürich, 5 in, 6 1999, 7 ",", 8 in,
# 9 spring, 10 ".". Window 0 holds tokens 0-5, window 1 tokens 3-10; of
# the shared tokens 3-5, 3 and 4 have most context in window 0, 5 in 1.
WINDOWS = [
    (SPANS[0:6], [1, 1, 1, 1, 1, 0]),
    (SPANS[3:11], [0, 0, 1, 1, 1, 1, 1, 1]),
]
EXAMPLES = {"id": ["q1"], "context": [CONTEXT]}


def _position(window, token):
    """Sequence position of context token `token` in `window`."""
    first_token = (0, 3)[window]
    return QUESTION_LENGTH + 2 + token - first_token


def _predict(values, **kwargs):
    start, end = _logits(2, values)
    return compute_predictions(
        EXAMPLES, _features(WINDOWS, [0, 0]), start, end, **kwargs
    )


def test_text_is_cut_from_context_by_code_points():
    # "Zürich in": start at token 4, end at token 5 (window 0).
    predictions, nbest, null_odds = _predict(
        {(0, _position(0, 4)): (3.0, None), (0, _position(0, 5)): (None, 2.0)}
    )
    assert predictions == {"q1": "Zürich in"}
    # 🚀 is one code point (4 bytes in UTF-8, 2 in UTF-16), ë one (2 bytes).
    best = nbest["q1"][0]
    assert (best["start"], best["end"]) == (14, 23)
    assert best["start_logit"] == 3.0 and best["end_logit"] == 2.0
    assert null_odds is None
    for entry in nbest["q1"]:
        assert CONTEXT[entry["start"] : entry["end"]] == entry["text"]


def test_token_scored_only_in_its_max_context_window():
    # Token 5 ("in") has most context in window 1. A start there in window
    # 0 (logit 9) is not a candidate; window 1's (logit 1) is.
    predictions, nbest, _ = _predict(
        {
            (0, _position(0, 5)): (9.0, 9.0),
            (1, _position(1, 5)): (1.0, None),
            (1, _position(1, 6)): (None, 1.0),
        }
    )
    assert predictions["q1"] == "in 1999"
    best = nbest["q1"][0]
    assert (best["start_logit"], best["end_logit"]) == (1.0, 1.0)
    # Ends need no max context: window 0's end at token 5 (9) pairs with
    # its start at token 4 (2), which has max context there.
    _, nbest, _ = _predict(
        {(0, _position(0, 4)): (2.0, None), (0, _position(0, 5)): (9.0, 9.0)}
    )
    assert nbest["q1"][0]["text"] == "Zürich in"
    assert nbest["q1"][0]["start_logit"] + nbest["q1"][0]["end_logit"] == 11


def test_max_answer_length_and_end_before_start():
    values = {
        (1, _position(1, 6)): (5.0, None),  # start "1999"
        (1, _position(1, 9)): (None, 5.0),  # end "spring": 4 tokens
        (1, _position(1, 8)): (None, 1.0),  # end "in": 3 tokens
        (1, _position(1, 5)): (None, 9.0),  # end "in": before the start
    }
    predictions, _, _ = _predict(values)
    assert predictions["q1"] == "1999, in spring"  # 5 + 5
    predictions, nbest, _ = _predict(values, max_answer_length=3)
    assert predictions["q1"] == "1999, in"  # 5 + 1
    assert all(len(_token_spans(e["text"])) <= 3 for e in nbest["q1"])
    # One token: "1999" alone scores 5 - 10; the first "in" -10 + 9 wins.
    predictions, nbest, _ = _predict(values, max_answer_length=1)
    assert predictions["q1"] == "in"
    assert nbest["q1"][0]["start"] == CONTEXT.index(" in ") + 1


def test_question_special_and_padding_positions_are_never_chosen():
    offset_start = _features(WINDOWS, [0, 0])["offset_start"]
    # [CLS], the question, both [SEP]s and the padding.
    values = {
        (window, position): (50.0, 50.0)
        for window, position in zip(*np.nonzero(offset_start < 0))
    }
    assert len(values) == 2 * SEQUENCE_LENGTH - 6 - 8
    values[(1, _position(1, 9))] = (1.0, 1.0)
    predictions, nbest, _ = _predict(values)
    assert predictions["q1"] == "spring"
    assert all(entry["start"] >= 0 for entry in nbest["q1"])


def test_duplicate_texts_keep_their_best_span_and_n_best_size():
    # "in" is token 5 and token 8; both as one-token spans, token 8 scores
    # higher (3 + 3 > 2 + 2): one "in" entry, at token 8's offsets.
    predictions, nbest, _ = _predict(
        {
            (1, _position(1, 5)): (2.0, 2.0),
            (1, _position(1, 8)): (3.0, 3.0),
        }
    )
    texts = [entry["text"] for entry in nbest["q1"]]
    assert predictions["q1"] == "in"
    assert texts.count("in") == 1 and len(texts) == len(set(texts))
    assert nbest["q1"][0]["start"] == CONTEXT.index(", in") + 2
    assert len(texts) == 20  # enough distinct spans to fill n_best_size
    # Candidates come from each window's 3 best starts and 3 best ends.
    _, nbest, _ = _predict(
        {(1, _position(1, t)): (t, t) for t in range(5, 11)}, n_best_size=3
    )
    # Starts 10, 9, 8 x ends 10, 9, 8: "." 20, "spring." 19, "spring" 18.
    assert [e["text"] for e in nbest["q1"]] == [".", "spring.", "spring"]


def test_probabilities_are_a_softmax_over_the_n_best():
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=(2, 2, SEQUENCE_LENGTH)).astype("float32")
    _, nbest, _ = compute_predictions(
        EXAMPLES, _features(WINDOWS, [0, 0]), start, end, n_best_size=5
    )
    entries = nbest["q1"]
    totals = [e["start_logit"] + e["end_logit"] for e in entries]
    assert totals == sorted(totals, reverse=True)
    denominator = sum(math.exp(t - totals[0]) for t in totals)
    for entry, total in zip(entries, totals):
        assert entry["probability"] == pytest.approx(
            math.exp(total - totals[0]) / denominator, abs=1e-12
        )
    assert sum(e["probability"] for e in entries) == pytest.approx(1, 1e-12)


def test_v2_null_score_and_threshold():
    values = {
        (0, 0): (1.0, 2.0),  # window 0's null score 3
        (1, 0): (0.5, 1.5),  # window 1's null score 2: the minimum
        (1, _position(1, 9)): (1.0, 0.5),  # best span "spring", 1.5
    }
    predictions, nbest, null_odds = _predict(
        values, version_2_with_negative=True
    )
    # score_diff = null - best span = 2 - 1.5 = 0.5 > 0.0: no answer.
    assert null_odds == {"q1": 0.5}
    assert predictions == {"q1": ""}
    null_entry = next(e for e in nbest["q1"] if e["text"] == "")
    assert null_entry["start_logit"] == 0.5 and null_entry["end_logit"] == 1.5
    assert (null_entry["start"], null_entry["end"]) == (-1, -1)
    assert nbest["q1"][0] is null_entry  # 2 beats 1.5
    # A span scoring the null score ranks before it (run_squad.py sorts
    # with the null entry appended last).
    tied = dict(values)
    tied[(1, _position(1, 9))] = (1.0, 1.0)
    _, nbest, null_odds = _predict(tied, version_2_with_negative=True)
    assert [e["text"] for e in nbest["q1"][:2]] == ["spring", ""]
    assert null_odds == {"q1": 0.0}
    # 0.5 is not above a threshold of 0.5: the span is predicted.
    predictions, _, _ = _predict(
        values, version_2_with_negative=True, null_score_diff_threshold=0.5
    )
    assert predictions == {"q1": "spring"}


def test_v2_null_entry_joins_the_n_best_even_when_ranked_out():
    # The null score (-20) ranks below 20 distinct spans: run_squad.py
    # adds it after them, so the n-best has n_best_size + 1 entries.
    values = {(w, p): (1.0, 1.0) for w in range(2) for p in range(4, 10)}
    _, nbest, null_odds = _predict(values, version_2_with_negative=True)
    assert len(nbest["q1"]) == 21
    assert nbest["q1"][-1]["text"] == ""
    assert null_odds["q1"] == -20 - 2


def test_no_valid_span_gives_the_placeholder():
    features = _features([([], [])], [0])  # a window without context
    start, end = _logits(1, {(0, 0): (1.0, 1.0)})
    predictions, nbest, _ = compute_predictions(EXAMPLES, features, start, end)
    assert predictions == {"q1": "empty"}
    assert [(e["text"], e["probability"]) for e in nbest["q1"]] == [
        ("empty", 1.0)
    ]
    predictions, nbest, null_odds = compute_predictions(
        EXAMPLES, features, start, end, version_2_with_negative=True
    )
    # The placeholder (score 0) stands for the best span: 2 - 0 > 0.
    assert [e["text"] for e in nbest["q1"]] == ["empty", ""]
    assert null_odds == {"q1": 2.0} and predictions == {"q1": ""}


def test_examples_without_windows_or_bad_shapes_are_rejected():
    start, end = _logits(2, {})
    features = _features(WINDOWS, [0, 0])
    two_examples = {"id": ["q1", "q2"], "context": [CONTEXT, CONTEXT]}
    with pytest.raises(ValueError, match="no feature row"):
        compute_predictions(two_examples, features, start, end)
    with pytest.raises(ValueError, match="max_seq_length"):
        compute_predictions(EXAMPLES, features, start[:, :5], end)
    with pytest.raises(ValueError, match="n_best_size=0"):
        compute_predictions(EXAMPLES, features, start, end, n_best_size=0)


@pytest.mark.parametrize("version_2", [False, True])
@pytest.mark.parametrize("where", ["tmp", "ram"])
def test_files_written_and_read_back_through_gfile(where, version_2, tmp_path):
    predictions, nbest, null_odds = _predict(
        {(0, _position(0, 4)): (3.0, 3.0)},
        version_2_with_negative=version_2,
    )
    output_dir = (
        str(tmp_path / "out")
        if where == "tmp"
        else f"ram://squad_postprocess_{version_2}/out"
    )
    paths = write_predictions(output_dir, predictions, nbest, null_odds)
    expected = {
        "predictions.json": predictions,
        "nbest_predictions.json": nbest,
    }
    if version_2:
        expected["null_odds.json"] = null_odds
    assert sorted(paths) == sorted(expected)
    assert sorted(tf.io.gfile.listdir(output_dir)) == sorted(expected)
    for name, content in expected.items():
        with tf.io.gfile.GFile(paths[name]) as f:
            assert json.load(f) == content
    assert json.loads(json.dumps(predictions)) == {"q1": "Zürich"}


# --- A literal transcription of run_squad.py's loops, on random windows ------


def _reference_predictions(
    examples, features, start_logits, end_logits, n_best_size, max_length
):
    """run_squad.py's write_predictions (v2.0 rules), loop by loop."""
    predictions, all_nbest, null_odds = {}, {}, {}
    for index, qid in enumerate(examples["id"]):
        context = examples["context"][index]
        windows = np.flatnonzero(features["example_index"] == index)
        prelim, null = [], None
        for f in windows:
            starts, ends = _best_indexes(start_logits[f], end_logits[f])
            null_score = float(start_logits[f][0]) + float(end_logits[f][0])
            if null is None or null_score < null[0]:
                null = (null_score, start_logits[f][0], end_logits[f][0])
            for s in starts[:n_best_size]:
                for e in ends[:n_best_size]:
                    if features["offset_start"][f][s] < 0:
                        continue
                    if features["offset_end"][f][e] < 0:
                        continue
                    if not features["max_context"][f][s]:
                        continue
                    if e < s or e - s + 1 > max_length:
                        continue
                    begin = features["offset_start"][f][s]
                    text = context[begin : features["offset_end"][f][e]]
                    logits = float(start_logits[f][s]), float(end_logits[f][e])
                    prelim.append((text, *logits))
        prelim.append(("", float(null[1]), float(null[2])))
        prelim.sort(key=lambda x: x[1] + x[2], reverse=True)
        nbest, seen = [], set()
        for text, start, end in prelim:
            if len(nbest) >= n_best_size:
                break
            if text and text in seen:
                continue
            seen.add(text)
            nbest.append((text, start, end))
        if "" not in seen:
            nbest.append(("", float(null[1]), float(null[2])))
        if len(nbest) == 1:
            nbest.insert(0, ("empty", 0.0, 0.0))
        best = next(entry for entry in nbest if entry[0])
        diff = null[0] - best[1] - best[2]
        null_odds[qid] = diff
        predictions[qid] = "" if diff > 0.0 else best[0]
        all_nbest[qid] = nbest
    return predictions, all_nbest, null_odds


def _best_indexes(*logits):
    """run_squad.py's `_get_best_indexes`: positions by decreasing logit."""
    return [
        [i for i, _ in sorted(enumerate(x), key=lambda x: x[1], reverse=True)]
        for x in logits
    ]


def _random_squad_features(rng, num_examples, sequence_length=40):
    """Random contexts cut into overlapping windows, run_squad.py's way."""
    words = ["Zürich", "in", "1999", "naïve", "🚀", "the", "spring", "日本"]
    examples = {"id": [], "context": []}
    rows = {"example_index": [], "offset_start": [], "offset_end": []}
    rows["max_context"] = []
    for index in range(num_examples):
        context = " ".join(rng.choice(words, rng.integers(1, 60)))
        spans = _token_spans(context)
        examples["id"].append(f"q{index}")
        examples["context"].append(context)
        question = int(rng.integers(1, 6))
        length = sequence_length - question - 3
        stride = int(rng.integers(3, length + 1))
        windows, first = [], 0  # (first token, number of tokens)
        while True:
            windows.append((first, min(length, len(spans) - first)))
            if first + length >= len(spans):
                break
            first += stride
        for first, size in windows:
            row = np.full((3, sequence_length), -1)
            row[2] = 0
            for token in range(first, first + size):
                position = question + 2 + token - first
                row[0, position], row[1, position] = spans[token]
                row[2, position] = _is_max_context(windows, first, token)
            rows["example_index"].append(index)
            rows["offset_start"].append(row[0])
            rows["offset_end"].append(row[1])
            rows["max_context"].append(row[2])
    features = {key: np.array(value) for key, value in rows.items()}
    return examples, features  # fmt: skip


def _is_max_context(windows, window, token):
    """run_squad.py's `_check_is_max_context`."""
    best, best_score = None, None
    for start, length in windows:
        end = start + length - 1
        if not start <= token <= end:
            continue
        score = min(token - start, end - token) + 0.01 * length
        if best_score is None or score > best_score:
            best, best_score = start, score
    return int(best == window)


@pytest.mark.parametrize("seed", range(4))
def test_matches_run_squad_loops_on_random_windows(seed):
    rng = np.random.default_rng(seed)
    examples, features = _random_squad_features(rng, num_examples=30)
    shape = features["offset_start"].shape
    # Halves make ties, which both must break in run_squad.py's order.
    start = (np.round(rng.normal(0, 2, shape) * 2) / 2).astype("float32")
    end = (np.round(rng.normal(0, 2, shape) * 2) / 2).astype("float32")
    n_best_size, max_length = int(rng.integers(1, 8)), int(rng.integers(1, 9))
    expected = _reference_predictions(
        examples, features, start, end, n_best_size, max_length
    )
    predictions, nbest, null_odds = compute_predictions(
        examples,
        features,
        start,
        end,
        n_best_size=n_best_size,
        max_answer_length=max_length,
        version_2_with_negative=True,
    )
    assert predictions == expected[0]
    assert null_odds == expected[2]
    for qid, entries in nbest.items():
        assert [
            (e["text"], e["start_logit"], e["end_logit"]) for e in entries
        ] == expected[1][qid]
    # v1.1: the same ranking without the null entry.
    v1_predictions, v1_nbest, _ = compute_predictions(
        examples, features, start, end, n_best_size, max_length
    )
    for qid, entries in v1_nbest.items():
        spans = [e for e in expected[1][qid] if e[0] not in ("", "empty")]
        texts = [e["text"] for e in entries]
        assert texts[: len(spans)] == [e[0] for e in spans][: len(texts)]
        assert v1_predictions[qid] == texts[0]


def test_dev_set_sized_input():
    # About the real dev set: 1,800 windows of 384 tokens.
    rng = np.random.default_rng(0)
    num_windows, length = 1800, 384
    offsets = np.arange(length) * 5
    offsets[:20] = -1  # [CLS], the question, [SEP]
    offsets[-30:] = -1  # padding
    features = {
        "example_index": np.arange(num_windows) // 2,
        "offset_start": np.tile(offsets, (num_windows, 1)),
        "offset_end": np.tile(np.where(offsets < 0, -1, offsets + 4),
                              (num_windows, 1)),
        "max_context": np.tile(offsets >= 0, (num_windows, 1)).astype(int),
    }  # fmt: skip
    examples = {
        "id": [str(i) for i in range(num_windows // 2)],
        "context": ["abcd " * length] * (num_windows // 2),
    }
    start = rng.normal(size=(num_windows, length)).astype("float32")
    end = rng.normal(size=(num_windows, length)).astype("float32")
    predictions, _, null_odds = compute_predictions(
        examples, features, start, end, version_2_with_negative=True
    )
    assert len(predictions) == len(null_odds) == num_windows // 2
    for question_id, answer in predictions.items():
        assert answer in examples["context"][int(question_id)], question_id
