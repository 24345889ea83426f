"""Masked-LM masking of one token sequence, as BERT's data pipeline does it.

Of the maskable tokens (every token but `[CLS]`, `[SEP]` and `[PAD]`), a
fraction `masked_lm_prob` is chosen, at most `max_predictions_per_seq`;
each chosen token becomes `[MASK]` with probability 0.8, a random token
with probability 0.1, and stays unchanged with probability 0.1. With
whole-word masking the choice is made over words: a word (a first piece
and its `##` continuations) is masked completely or not at all.

Two deliberate departures from Google's `create_pretraining_data.py`,
both to make the statistics exact rather than approximate:

- The number of predictions is `masked_lm_prob * maskable_tokens` rounded
  *stochastically* (up with probability equal to the fraction), not
  `round(masked_lm_prob * all_tokens)` with at least one, so the expected
  masked fraction is exactly `masked_lm_prob` of the maskable tokens.
- Random replacements are drawn from the non-special vocabulary (never a
  bracketed token such as `[CLS]` or `[unused3]`).
"""

import numpy as np

_NEVER_MASKED = ("[CLS]", "[SEP]", "[PAD]", "[MASK]")


def _is_special(token):
    return token.startswith("[") and token.endswith("]")


def never_masked_ids(vocabulary):
    """Ids of the tokens that are never chosen for masking.

    Args:
        vocabulary: list of str, the WordPiece vocabulary in id order.

    Returns:
        A sorted list of the ids of `[CLS]`, `[SEP]`, `[PAD]` and `[MASK]`
        (those present in the vocabulary).
    """
    return sorted(i for i, t in enumerate(vocabulary) if t in _NEVER_MASKED)


def replacement_ids(vocabulary):
    """Ids that a "random token" replacement may draw: all non-special.

    Args:
        vocabulary: list of str.

    Returns:
        An int32 numpy array of the ids of every token that is not written
        in brackets (`[PAD]`, `[unused0]`, ... are left out).
    """
    ids = [i for i, t in enumerate(vocabulary) if not _is_special(t)]
    if not ids:
        raise ValueError(
            "The vocabulary has no ordinary token to use as a random "
            "replacement: every entry is a bracketed special token. Pass a "
            "WordPiece vocabulary with real word pieces."
        )
    return np.asarray(ids, dtype="int32")


def continuation_flags(vocabulary):
    """Marks the word pieces that continue a word (`##` prefix).

    Args:
        vocabulary: list of str.

    Returns:
        A bool numpy array, `True` at the ids of `##` pieces.
    """
    return np.asarray([t.startswith("##") for t in vocabulary], dtype=bool)


def stochastic_round(value, rng):
    """Rounds `value` down or up so that the expectation is `value`."""
    low = int(np.floor(value))
    return low + (1 if rng.random() < value - low else 0)


def create_masked_lm_predictions(
    token_ids,
    rng,
    masked_lm_prob,
    max_predictions_per_seq,
    never_masked,
    mask_token_id,
    replacements,
    is_continuation=None,
):
    """Chooses and applies masked-LM predictions for one sequence.

    Args:
        token_ids: list of int. `[CLS] A [SEP] B [SEP]`, unpadded.
        rng: `random.Random`. The only source of randomness.
        masked_lm_prob: float. Fraction of maskable tokens to predict.
        max_predictions_per_seq: int. Cap on the number of predictions.
        never_masked: set of int. Ids never chosen (see `never_masked_ids`).
        mask_token_id: int. Id of `[MASK]`.
        replacements: sequence of int. Ids a random replacement draws from.
        is_continuation: `None` for token-level masking, or a bool array
            indexed by id (see `continuation_flags`) for whole-word masking.

    Returns:
        A tuple `(masked_token_ids, positions, labels)`: the sequence with
        the replacements applied, the sorted masked positions and the
        original ids at those positions.

    Example:
    ```python
    import random
    masked, positions, labels = create_masked_lm_predictions(
        [2, 10, 11, 12, 3], random.Random(0), 0.5, 20, {0, 2, 3, 4}, 4,
        [10, 11, 12],
    )
    ```
    """
    candidates = []  # lists of positions masked together
    for position, token_id in enumerate(token_ids):
        if token_id in never_masked:
            continue
        if (
            is_continuation is not None
            and candidates
            and candidates[-1][-1] == position - 1
            and is_continuation[token_id]
        ):
            candidates[-1].append(position)
        else:
            candidates.append([position])
    num_maskable = sum(len(c) for c in candidates)
    num_to_predict = min(
        max_predictions_per_seq,
        stochastic_round(num_maskable * masked_lm_prob, rng),
    )
    rng.shuffle(candidates)

    masked_token_ids = list(token_ids)
    positions = []
    for group in candidates:
        if len(positions) >= num_to_predict:
            break
        if len(positions) + len(group) > num_to_predict:
            continue  # a whole word would overshoot: try a shorter one
        for position in group:
            draw = rng.random()
            if draw < 0.8:
                masked_token_ids[position] = mask_token_id
            elif draw < 0.9:
                masked_token_ids[position] = int(
                    replacements[rng.randrange(len(replacements))]
                )
            positions.append(position)
    positions.sort()
    labels = [token_ids[p] for p in positions]
    return masked_token_ids, positions, labels
