"""From start/end logits over SQuAD windows to answer texts.

The rules are those of BERT's `run_squad.py` (`write_predictions`), with
one difference: the answer text is cut from the original context by the
tokens' character offsets, `context[offset_start[start]:offset_end[end]]`,
instead of being detokenised and re-aligned, so it is exactly a substring
of the context (Unicode code points, Python `str` indexing).

For each example, over all of its windows:

1. In each window take the `n_best_size` highest start logits and end
   logits (over every position), and pair them.
2. Drop pairs that cannot be an answer: an end outside the context (offset
   `-1`: `[CLS]`, the question, `[SEP]`, padding), a start that is not a
   context token or not in the window where it has the most context, an
   end before the start, or more than `max_answer_length` tokens.
3. Rank by `start_logit + end_logit`, keep the first span of each distinct
   text, up to `n_best_size`, and give each a probability: the softmax of
   the scores over the kept entries.
4. SQuAD v2.0: the null ("no answer") score is the lowest
   `start_logits[0] + end_logits[0]` (`[CLS]`) over the windows, ranked
   among the spans as a `""` entry (always in the n-best). The prediction
   is `""` when `null_score - best_span_score > null_score_diff_threshold`,
   and that difference is the question's `null_odds`.

If no span is valid, the n-best holds a placeholder `"empty"` entry with
logits 0, as `run_squad.py` does (for v2.0, beside the null entry).

The graph twin, inside the SavedModel that answers raw text, is
`keras_bert.decoding.answers.best_answers`: the same top answer.
"""

import numpy as np
import tensorflow as tf

from keras_bert import files

# run_squad.py's placeholder when no span is valid.
_NO_VALID_SPAN_TEXT = "empty"
_FEATURE_FIELDS = ("example_index", "offset_start", "offset_end", "max_context")
PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"


def compute_predictions(
    examples,
    features,
    start_logits,
    end_logits,
    n_best_size=20,
    max_answer_length=30,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
):
    """Answer texts, n-best lists and (v2.0) null odds for every example.

    In numpy; the graph twin of the top answer is
    `keras_bert.decoding.answers.best_answers`.

    Args:
        examples: dict with `id` and `context` lists, as
            `read_squad_examples` returns.
        features: dict of numpy arrays, one row per window, as the SQuAD
            feature builder makes them: `example_index` `(num_features,)`,
            and `offset_start`, `offset_end` (code-point offsets into the
            example's context, `-1` outside it) and `max_context` (`1` where
            the window is the token's max-context one), each
            `(num_features, max_seq_length)`.
        start_logits: float array `(num_features, max_seq_length)`.
        end_logits: float array `(num_features, max_seq_length)`.
        n_best_size: int. Candidates per window and per end, and length of
            the n-best list. Defaults to `20`.
        max_answer_length: int. Longest answer, in tokens. Defaults to `30`.
        version_2_with_negative: bool. Allow "no answer" (SQuAD v2.0).
            Defaults to `False`.
        null_score_diff_threshold: float. Predict `""` when the null score
            beats the best span's by more than this. Defaults to `0.0`.

    Returns:
        A tuple `(predictions, nbest, null_odds)`: `predictions` maps each
        example id to its answer text; `nbest` maps it to a list of dicts
        `{"text", "probability", "start_logit", "end_logit", "start",
        "end"}`, best first, where `start`/`end` are the answer's code-point
        offsets in the context (`context[start:end] == text`; `-1` for the
        null and placeholder entries); `null_odds` maps each id to
        `null_score - best_span_score` (v2.0), or is `None` (v1.1). All
        plain Python types, ready for `json`. An id that occurs more than
        once keeps its last occurrence's entries, as in `run_squad.py`.

    Example:

    ```python
    examples = {"id": ["q1"], "context": ["Paris is nice."]}
    features = {
        "example_index": np.array([0]),
        # [CLS] where [SEP] paris is nice . [SEP]
        "offset_start": np.array([[-1, -1, -1, 0, 6, 9, 13, -1]]),
        "offset_end": np.array([[-1, -1, -1, 5, 8, 13, 14, -1]]),
        "max_context": np.array([[0, 0, 0, 1, 1, 1, 1, 0]]),
    }
    start_logits = np.array([[0, 0, 0, 5, 1, 0, 0, 0]], "float32")
    end_logits = np.array([[0, 0, 0, 4, 1, 2, 0, 0]], "float32")
    predictions, nbest, _ = compute_predictions(
        examples, features, start_logits, end_logits
    )
    predictions["q1"]  # "Paris"
    ```
    """
    _check_positive("n_best_size", n_best_size)
    _check_positive("max_answer_length", max_answer_length)
    ids = [_as_str(question_id) for question_id in examples["id"]]
    contexts = [_as_str(context) for context in examples["context"]]
    (example_index, offset_start, offset_end, max_context) = _check_features(
        features, start_logits, end_logits, len(ids)
    )
    # Sums in float64, as run_squad.py adds Python floats.
    start_logits = np.asarray(start_logits, np.float64)
    end_logits = np.asarray(end_logits, np.float64)

    spans = _valid_spans(
        start_logits,
        end_logits,
        offset_start,
        offset_end,
        max_context,
        n_best_size,
        max_answer_length,
    )
    # Every example's spans in window order, then in run_squad.py's loop
    # order: a stable sort keeps that order between equal scores.
    span_order = np.argsort(example_index[spans["feature"]], kind="stable")
    spans = {key: value[span_order] for key, value in spans.items()}
    span_bounds = np.searchsorted(
        example_index[spans["feature"]], np.arange(len(ids) + 1)
    )
    features_of = _features_by_example(example_index, len(ids))

    predictions, nbest, null_odds = {}, {}, {}
    for index, (question_id, context) in enumerate(zip(ids, contexts)):
        window = slice(span_bounds[index], span_bounds[index + 1])
        candidates = {key: value[window] for key, value in spans.items()}
        null = None
        if version_2_with_negative:
            windows = features_of[index]
            null_scores = start_logits[windows, 0] + end_logits[windows, 0]
            # The first window with the lowest score, as run_squad.py.
            lowest = windows[np.argmin(null_scores)]
            null = (start_logits[lowest, 0], end_logits[lowest, 0])
        entries = _nbest_entries(
            candidates, null, context, offset_start, offset_end, n_best_size
        )
        nbest[question_id] = entries
        if not version_2_with_negative:
            predictions[question_id] = entries[0]["text"]
            continue
        best_span = next(entry for entry in entries if entry["text"])
        # run_squad.py's order of operations, for identical floats.
        null_score = null[0] + null[1]
        score_diff = null_score - best_span["start_logit"]
        score_diff -= best_span["end_logit"]
        null_odds[question_id] = float(score_diff)
        predictions[question_id] = (
            "" if score_diff > null_score_diff_threshold else best_span["text"]
        )
    return predictions, nbest, (null_odds if version_2_with_negative else None)


def write_predictions(output_dir, predictions, nbest, null_odds=None):
    """Writes `predictions.json`, `nbest_predictions.json`, `null_odds.json`.

    The formats of `run_squad.py`: `predictions.json` (id -> answer) is
    what the official evaluation scripts read, with `null_odds.json` as
    their `--na-prob-file`.

    Args:
        output_dir: str. A directory `tf.io.gfile` can write (`gs://...`
            included); created if missing.
        predictions: dict, id -> answer text.
        nbest: dict, id -> list of n-best dicts.
        null_odds: optional dict, id -> float (SQuAD v2.0). Not written
            when `None`.

    Returns:
        A dict, file name -> the path written.

    Example:

    ```python
    predictions, nbest, null_odds = compute_predictions(...)
    write_predictions("/tmp/squad_output", predictions, nbest, null_odds)
    ```
    """
    tf.io.gfile.makedirs(output_dir)
    outputs = {PREDICTIONS_FILE: predictions, NBEST_FILE: nbest}
    if null_odds is not None:
        outputs[NULL_ODDS_FILE] = null_odds
    paths = {}
    for name, content in outputs.items():
        path = tf.io.gfile.join(output_dir, name)
        files.write_json(path, content, indent=4)
        paths[name] = path
    return paths


def _valid_spans(
    start_logits,
    end_logits,
    offset_start,
    offset_end,
    max_context,
    n_best_size,
    max_answer_length,
):
    """Every window's top start x top end pairs that can be an answer.

    Returns flat arrays `feature`, `start`, `end` (token indices) and
    `score`, window by window, each window's pairs start-major in
    decreasing start logit then decreasing end logit.
    """
    num_features, sequence_length = start_logits.shape
    top = min(n_best_size, sequence_length)
    # Stable: equal logits keep position order, as Python's sorted does.
    starts = np.argsort(-start_logits, axis=1, kind="stable")[:, :top]
    ends = np.argsort(-end_logits, axis=1, kind="stable")[:, :top]
    rows = np.arange(num_features)[:, None]
    start_ok = (offset_start[rows, starts] >= 0) & (
        max_context[rows, starts] == 1
    )
    end_ok = offset_end[rows, ends] >= 0
    starts = starts[:, :, None]  # (features, top, 1)
    ends = ends[:, None, :]  # (features, 1, top)
    length = ends - starts + 1  # (features, top, top)
    valid = (
        start_ok[:, :, None]
        & end_ok[:, None, :]
        & (length >= 1)
        & (length <= max_answer_length)
    )
    feature, start_rank, end_rank = np.nonzero(valid)
    start = starts[feature, start_rank, 0]
    end = ends[feature, 0, end_rank]
    return {
        "feature": feature,
        "start": start,
        "end": end,
        "start_logit": start_logits[feature, start],
        "end_logit": end_logits[feature, end],
    }


def _nbest_entries(
    candidates, null, context, offset_start, offset_end, n_best_size
):
    """The n-best list of one example, as run_squad.py builds it."""
    scores = candidates["start_logit"] + candidates["end_logit"]
    order = list(np.argsort(-scores, kind="stable"))
    if null is not None:
        # run_squad.py appends the null entry last before its stable sort:
        # it goes after every span scoring at least as much.
        order.insert(int(np.sum(scores >= null[0] + null[1])), None)
    entries, seen = [], set()
    for position in order:
        if len(entries) >= n_best_size:
            break
        if position is None:
            entries.append(_entry("", null[0], null[1], -1, -1))
            seen.add("")
            continue
        feature = candidates["feature"][position]
        start = int(offset_start[feature, candidates["start"][position]])
        end = int(offset_end[feature, candidates["end"][position]])
        text = context[start:end]
        if text in seen:
            continue
        seen.add(text)
        entries.append(
            _entry(
                text,
                candidates["start_logit"][position],
                candidates["end_logit"][position],
                start,
                end,
            )
        )
    if null is not None and "" not in seen:
        entries.append(_entry("", null[0], null[1], -1, -1))
    if not any(entry["text"] for entry in entries):
        # No valid span: a placeholder keeps the n-best (and, for v2.0,
        # the best non-null answer) defined, as run_squad.py.
        entries.insert(0, _entry(_NO_VALID_SPAN_TEXT, 0.0, 0.0, -1, -1))
    totals = np.array([e["start_logit"] + e["end_logit"] for e in entries])
    probabilities = np.exp(totals - totals.max())
    probabilities /= probabilities.sum()
    for entry, probability in zip(entries, probabilities):
        entry["probability"] = float(probability)
    return entries


def _entry(text, start_logit, end_logit, start, end):
    return {
        "text": text,
        "probability": None,  # set once the n-best is complete
        "start_logit": float(start_logit),
        "end_logit": float(end_logit),
        "start": start,
        "end": end,
    }


def _features_by_example(example_index, num_examples):
    order = np.argsort(example_index, kind="stable")
    bounds = np.searchsorted(example_index[order], np.arange(num_examples + 1))
    return [
        order[bounds[index] : bounds[index + 1]]
        for index in range(num_examples)
    ]


def _check_features(features, start_logits, end_logits, num_examples):
    missing = [name for name in _FEATURE_FIELDS if name not in features]
    if missing:
        raise ValueError(
            f"`features` lacks {missing}; pass the feature dict of the SQuAD "
            f"feature builder, with {list(_FEATURE_FIELDS)}."
        )
    example_index, offset_start, offset_end, max_context = (
        np.asarray(features[name]) for name in _FEATURE_FIELDS
    )
    example_index = example_index.reshape(-1).astype(np.int64)
    expected = offset_start.shape
    for name, value in (
        ("offset_end", offset_end),
        ("max_context", max_context),
        ("start_logits", np.asarray(start_logits)),
        ("end_logits", np.asarray(end_logits)),
    ):
        if value.shape != expected or len(expected) != 2:
            raise ValueError(
                "`offset_start`, `offset_end`, `max_context`, `start_logits` "
                "and `end_logits` must all be `(num_features, "
                f"max_seq_length)`. Received: offset_start {expected}, "
                f"{name} {value.shape}."
            )
    if len(example_index) != expected[0]:
        raise ValueError(
            "`example_index` needs one entry per feature row. Received: "
            f"{len(example_index)} entries for {expected[0]} rows."
        )
    if len(example_index) and (
        example_index.min() < 0 or example_index.max() >= num_examples
    ):
        raise ValueError(
            f"`example_index` must index the {num_examples} examples. "
            f"Received values from {example_index.min()} to "
            f"{example_index.max()}; were the features built from these "
            "examples?"
        )
    without = np.setdiff1d(np.arange(num_examples), example_index)
    if len(without):
        raise ValueError(
            f"{len(without)} examples have no feature row (e.g. example "
            f"indices {without[:3].tolist()}); every example needs at least "
            "one window. Were the features built from these examples?"
        )
    return example_index, offset_start, offset_end, max_context


def _check_positive(name, value):
    if not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected a "
            f"positive integer. Received: {name}={value!r}"
        )


def _as_str(value):
    # Strings that went through TensorFlow come back as UTF-8 bytes; their
    # offsets count code points, so slice the decoded text.
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
