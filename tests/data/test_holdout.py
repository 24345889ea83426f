"""The held-out split: disjoint, seeded, of the asked size."""

import numpy as np
import pytest

from keras_bert.data.holdout import holdout_split


def test_a_split_is_disjoint_seeded_and_sized():
    train, held_out = holdout_split(270, 0.1, seed=0)
    assert (len(train), len(held_out)) == (243, 27)
    assert not set(train) & set(held_out)
    assert sorted([*train, *held_out]) == list(range(270))
    again, held_again = holdout_split(270, 0.1, seed=0)
    np.testing.assert_array_equal(held_out, held_again)
    _, other = holdout_split(270, 0.1, seed=1)
    assert set(other) != set(held_out)


@pytest.mark.parametrize("total, expected", [(2, 1), (3, 1), (10, 1), (40, 4)])
def test_at_least_one_row_each_side(total, expected):
    train, held_out = holdout_split(total, 0.1, seed=0)
    assert len(held_out) == expected and len(train) == total - expected


@pytest.mark.parametrize(
    "total, fraction, message",
    [(10, 0.0, "holdout_fraction=0.0"), (10, 1.0, "in \\(0, 1\\)"),
     (1, 0.5, "from 1 example")],
)  # fmt: skip
def test_bad_splits_are_refused(total, fraction, message):
    with pytest.raises(ValueError, match=message):
        holdout_split(total, fraction, seed=0)
