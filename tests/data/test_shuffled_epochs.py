"""shuffled_epochs: each epoch's order depends on (seed, epoch) alone."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import shuffled_epochs


def epochs(first_epoch, num_epochs=4, seed=3):
    batches = shuffled_epochs(
        tf.data.Dataset.range(7), 3, seed, first_epoch, num_epochs
    )
    flat = np.concatenate([batch.numpy() for batch in batches])
    return flat.reshape(num_epochs - first_epoch, 7)


def test_a_resumed_run_replays_the_remaining_epochs():
    from_start = epochs(0)
    for epoch in from_start:
        np.testing.assert_array_equal(np.sort(epoch), np.arange(7))
    assert len({tuple(epoch) for epoch in from_start}) > 1  # reshuffled
    np.testing.assert_array_equal(epochs(1), from_start[1:])
    np.testing.assert_array_equal(epochs(3), from_start[3:])
    assert (epochs(0, seed=4) != from_start).any()  # the seed matters


def test_bad_epochs_and_unknown_lengths_are_refused():
    with pytest.raises(ValueError, match="first_epoch=2, num_epochs=2"):
        shuffled_epochs(tf.data.Dataset.range(7), 3, 0, 2, 2)
    unknown = tf.data.Dataset.range(7).filter(lambda x: x > 2)
    with pytest.raises(ValueError, match="known length"):
        shuffled_epochs(unknown, 3, 0, 0, 2)
