"""length_grouped_epochs: like-length batches, replayable from any epoch."""

import math

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.length_grouped_epochs import GROUP_BATCHES
from keras_bert.data.length_grouped_epochs import length_grouped_epochs
from keras_bert.data.length_grouped_epochs import length_grouped_order

NUM_ROWS = 1234
BATCH_SIZE = 4  # groups of 200 rows: 6 full groups and one of 34


def random_lengths(num_rows=NUM_ROWS, seed=0):
    return np.random.default_rng(seed).integers(1, 129, num_rows)


def group_sorted(order, lengths, batch_size=BATCH_SIZE):
    """`order` cut into groups, each sorted longest first (stable)."""
    group = GROUP_BATCHES * batch_size
    parts = np.split(order, range(group, len(order), group))
    return np.concatenate(
        [part[np.argsort(-lengths[part], kind="stable")] for part in parts]
    )


def full_batches(order, batch_size=BATCH_SIZE):
    full = len(order) // batch_size * batch_size
    return order[:full].reshape(-1, batch_size)


def test_order_is_like_length_batches_in_a_shuffled_order():
    lengths = random_lengths()
    order = length_grouped_order(lengths, BATCH_SIZE, seed=5, epoch=2)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.sort(order), np.arange(NUM_ROWS))
    assert GROUP_BATCHES * BATCH_SIZE == 200

    # Batches of like length: far less padding than a plain shuffle.
    def padding(rows):
        batches = lengths[full_batches(rows)]
        return (batches.max(axis=1)[:, None] - batches).sum()

    shuffled = np.random.default_rng(0).permutation(NUM_ROWS)
    assert padding(order) * 10 < padding(shuffled)
    # Rows within a batch longest first; the batch holding the longest
    # row comes first.
    batches = full_batches(order)
    assert (np.diff(lengths[batches], axis=1) <= 0).all()
    assert lengths[batches[0]].max() == lengths.max()
    # No sweep from long to short over the epoch (Hugging Face's sampler
    # runs each group's batches longest first): the batches' lengths are
    # uncorrelated with their place.
    longest = lengths[batches].max(axis=1)
    place = np.arange(len(longest))
    assert abs(np.corrcoef(place, longest)[0, 1]) < 0.2
    for start in range(0, len(longest), GROUP_BATCHES):
        run = longest[start : start + GROUP_BATCHES]
        assert (np.diff(run) > 0).any() and (np.diff(run) < 0).any()
    # The partial batch (1234 = 308 * 4 + 2) stays last.
    assert len(order) - batches.size == 2


def test_batches_are_those_of_a_seeded_shuffle_sorted_within_groups():
    lengths = random_lengths()
    # Equal lengths and a stable sort: the shuffle's own batches.
    shuffle = length_grouped_order(np.zeros(NUM_ROWS, int), BATCH_SIZE, 5, 2)
    rng = np.random.default_rng([5, 2])
    expected_shuffle = rng.permutation(NUM_ROWS)
    assert sorted(map(tuple, full_batches(shuffle))) == sorted(
        map(tuple, full_batches(expected_shuffle))
    )
    # With lengths: the batches of that shuffle sorted within groups of
    # GROUP_BATCHES batches, in another order; the last partial batch
    # (the last group's shortest rows) last.
    order = length_grouped_order(lengths, BATCH_SIZE, 5, 2)
    expected = group_sorted(expected_shuffle, lengths)
    assert sorted(map(tuple, full_batches(order))) == sorted(
        map(tuple, full_batches(expected))
    )
    np.testing.assert_array_equal(order[-2:], expected[-2:])
    assert (full_batches(order) != full_batches(expected)).any()


def test_order_depends_only_on_seed_and_epoch():
    lengths = random_lengths()
    first = length_grouped_order(lengths, BATCH_SIZE, seed=5, epoch=2)
    # Not on numpy's global state, nor on earlier calls.
    np.random.seed(123)
    np.random.rand(10)
    length_grouped_order(lengths, BATCH_SIZE, seed=5, epoch=1)
    again = length_grouped_order(lengths.tolist(), BATCH_SIZE, 5, 2)
    np.testing.assert_array_equal(again, first)
    others = [
        length_grouped_order(lengths, BATCH_SIZE, seed=5, epoch=3),
        length_grouped_order(lengths, BATCH_SIZE, seed=6, epoch=2),
    ]
    for other in others:
        assert (other != first).mean() > 0.9
    epochs = [length_grouped_order(lengths, BATCH_SIZE, 5, e) for e in range(5)]
    assert len({tuple(epoch) for epoch in epochs}) == 5


def test_order_of_small_inputs():
    np.testing.assert_array_equal(length_grouped_order([], 4, 0, 0), [])
    assert length_grouped_order([], 4, 0, 0).dtype == np.int64
    np.testing.assert_array_equal(length_grouped_order([7], 4, 0, 0), [0])
    # Fewer rows than a group: one group, sorted longest first.
    lengths = np.array([3, 9, 1, 7])
    order = length_grouped_order(lengths, 2, seed=0, epoch=0)
    np.testing.assert_array_equal(order, [1, 3, 0, 2])


def rows_and_lengths(num_rows=23, seed=1):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 30, num_rows)
    features = {
        "token_ids": rng.integers(0, 100, (num_rows, 30)).astype(np.int32),
        "row": np.arange(num_rows, dtype=np.int64),
    }
    labels = rng.integers(0, 5, (num_rows, 30)).astype(np.int32)
    return (features, labels), lengths


def batches(first_epoch, num_epochs=4, batch_size=5, seed=3):
    rows, lengths = rows_and_lengths()
    dataset = length_grouped_epochs(
        rows, lengths, batch_size, seed, first_epoch, num_epochs
    )
    return [
        tf.nest.map_structure(lambda tensor: tensor.numpy(), batch)
        for batch in dataset
    ]


def assert_same_batches(actual, expected):
    assert len(actual) == len(expected)
    for index, (a, b) in enumerate(zip(actual, expected)):
        tf.nest.assert_same_structure(a, b)
        for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
            np.testing.assert_array_equal(x, y, err_msg=f"batch {index}")


def test_epochs_are_batches_of_the_order():
    (features, labels), lengths = rows_and_lengths()
    result = batches(0)
    per_epoch = math.ceil(23 / 5)
    assert len(result) == 4 * per_epoch
    for epoch in range(4):
        order = length_grouped_order(lengths, 5, 3, epoch)
        epoch_batches = result[epoch * per_epoch : (epoch + 1) * per_epoch]
        assert [len(b[1]) for b in epoch_batches] == [5, 5, 5, 5, 3]
        rows = np.concatenate([b[0]["row"] for b in epoch_batches])
        np.testing.assert_array_equal(rows, order)
        for b in epoch_batches:
            np.testing.assert_array_equal(
                b[0]["token_ids"], features["token_ids"][b[0]["row"]]
            )
            np.testing.assert_array_equal(b[1], labels[b[0]["row"]])
            batch_lengths = lengths[b[0]["row"]]
            assert (np.diff(batch_lengths) <= 0).all()
    assert len({tuple(b[0]["row"]) for b in result[:per_epoch]}) > 1


@pytest.mark.parametrize("first_epoch", [1, 2, 3])
def test_a_resumed_run_replays_the_remaining_batches(first_epoch):
    from_start = batches(0)
    per_epoch = math.ceil(23 / 5)
    assert_same_batches(
        batches(first_epoch), from_start[first_epoch * per_epoch :]
    )


def test_seed_none_is_seed_zero_and_the_seed_matters():
    assert_same_batches(batches(0, seed=None), batches(0, seed=0))
    rows_0 = np.concatenate([b[0]["row"] for b in batches(0, seed=0)])
    rows_3 = np.concatenate([b[0]["row"] for b in batches(0, seed=3)])
    assert (rows_0 != rows_3).any()


def test_a_batch_larger_than_the_data():
    result = batches(0, num_epochs=2, batch_size=100)
    assert [len(b[1]) for b in result] == [23, 23]


@pytest.mark.parametrize(
    "first_epoch, num_epochs",
    [(-1, 4), (4, 4), (5, 4), (0, 0), (0, None), (1, None)],
)
def test_bad_first_epoch_is_refused(first_epoch, num_epochs):
    rows, lengths = rows_and_lengths()
    with pytest.raises(
        ValueError,
        match=f"first_epoch={first_epoch}, num_epochs={num_epochs}",
    ):
        length_grouped_epochs(rows, lengths, 5, 0, first_epoch, num_epochs)
