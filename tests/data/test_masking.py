"""Masking of one sequence: counts, specials, 80/10/10, whole words."""

import random

import numpy as np

from keras_bert.data import masking
from keras_bert.data.masking import create_masked_lm_predictions

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"] + [
    "the", "cat", "sat", "on", "mat", "un", "##aff", "##able", "dog",
]  # fmt: skip
CLS, SEP, MASK = 2, 3, 4
NEVER = set(masking.never_masked_ids(VOCABULARY))


def mask(tokens, seed=0, prob=0.15, max_predictions=20, whole_word=False):
    return create_masked_lm_predictions(
        tokens,
        random.Random(seed),
        masked_lm_prob=prob,
        max_predictions_per_seq=max_predictions,
        never_masked=NEVER,
        mask_token_id=MASK,
        replacements=masking.replacement_ids(VOCABULARY),
        is_continuation=(
            masking.continuation_flags(VOCABULARY) if whole_word else None
        ),
    )


def test_vocabulary_helpers():
    assert masking.never_masked_ids(VOCABULARY) == [0, 2, 3, 4]
    assert masking.replacement_ids(VOCABULARY).tolist() == list(range(6, 15))
    assert masking.continuation_flags(VOCABULARY).nonzero()[0].tolist() == [
        12,
        13,
    ]


def test_everything_maskable_is_masked_at_probability_one():
    tokens = [CLS, 6, 7, 8, SEP, 9, 10, SEP]
    masked, positions, labels = mask(tokens, prob=1.0)
    assert positions == [1, 2, 3, 5, 6]
    assert labels == [6, 7, 8, 9, 10]
    assert [masked[i] for i in (0, 4, 7)] == [CLS, SEP, SEP]


def test_cap_on_predictions():
    tokens = [CLS] + [6] * 50 + [SEP]
    _, positions, _ = mask(tokens, prob=1.0, max_predictions=7)
    assert len(positions) == 7


def test_expected_count_is_exact_with_stochastic_rounding():
    tokens = [CLS] + [7] * 10 + [SEP]  # 1.5 expected predictions
    counts = [len(mask(tokens, seed=s)[1]) for s in range(4000)]
    assert set(counts) == {1, 2}
    assert abs(np.mean(counts) - 1.5) < 0.05


def test_replacements_are_never_special():
    tokens = [CLS] + list(range(6, 15)) * 5 + [SEP]
    for seed in range(200):
        masked, positions, _ = mask(tokens, seed=seed, prob=0.5)
        for position in positions:
            assert masked[position] == MASK or masked[position] >= 6


def test_whole_word_masking_takes_all_pieces():
    tokens = [CLS, 6, 11, 12, 13, 7, SEP]  # the un ##aff ##able cat
    for seed in range(300):
        _, positions, _ = mask(tokens, seed=seed, prob=0.6, whole_word=True)
        chosen = set(positions)
        assert {2, 3, 4} <= chosen or not ({2, 3, 4} & chosen)


def test_orphan_piece_after_separator_is_its_own_word():
    tokens = [CLS, 6, SEP, 12, 13, SEP]  # B starts mid-word
    _, positions, _ = mask(tokens, prob=1.0, whole_word=True)
    assert positions == [1, 3, 4]
