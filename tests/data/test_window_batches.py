"""window_batches: documents batched whole, with their labels."""

import numpy as np

from keras_bert.data.window_batches import window_batches


def _windows():
    # Documents 0 (2 windows), 1 (1 window of 2 tokens), 2 (3 windows).
    document = np.array([0, 0, 1, 2, 2, 2])
    mask = np.ones((6, 4), "int32")
    mask[2, 2:] = 0
    return {
        "token_ids": (np.arange(6)[:, None] + 10) * mask,
        "segment_ids": np.zeros((6, 4), "int32"),
        "padding_mask": mask,
        "document": document,
    }


def test_in_order_each_document_with_its_label():
    batches = list(window_batches(_windows(), np.array([7, 8, 9]), 2))
    (first, labels), (second, last_labels) = batches
    assert first["token_ids"].shape == (2, 2, 4)
    np.testing.assert_array_equal(first["token_ids"][1, 1], 0)  # padding
    np.testing.assert_array_equal(first["token_ids"][0, :, 0], [10, 11])
    np.testing.assert_array_equal(labels, [7, 8])
    assert second["token_ids"].shape == (1, 3, 4)
    np.testing.assert_array_equal(last_labels, [9])


def test_a_batch_is_cut_to_its_longest_window():
    batches = list(window_batches(_windows(), batch_size=1))
    assert batches[1]["token_ids"].shape == (1, 1, 2)


def test_training_epochs_replay_from_their_seed():
    def epochs(first_epoch):
        dataset = window_batches(
            _windows(), np.array([7, 8, 9]), 2, shuffle=True, seed=3,
            first_epoch=first_epoch, num_epochs=3, group_by_length=True,
        )  # fmt: skip
        return [labels.numpy().tolist() for _, labels in dataset]

    whole, resumed = epochs(0), epochs(1)
    assert whole[2:] == resumed
    assert sorted(sum(whole[:2], [])) == [7, 8, 9]
