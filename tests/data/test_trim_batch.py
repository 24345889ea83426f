import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import trim_batch

IGNORED_LABEL = -100


def padded_batch(lengths, width):
    mask = (np.arange(width)[None, :] < np.array(lengths)[:, None]).astype(
        np.int32
    )
    rng = np.random.default_rng(len(lengths) * width)
    return {
        "token_ids": rng.integers(5, 100, mask.shape).astype(np.int32) * mask,
        "padding_mask": mask,
        "labels": np.where(mask > 0, 1, IGNORED_LABEL).astype(np.int32),
        "example_index": np.arange(len(lengths), dtype=np.int32),
    }


@pytest.mark.parametrize(
    "lengths, width, multiple, expected",
    [
        ([3, 5, 2], 16, 8, 8),
        ([3, 9, 2], 16, 8, 16),
        ([8, 8], 16, 8, 8),
        ([10, 2], 12, 8, 12),  # rounded up to 16, never wider than 12
        ([12], 12, 8, 12),
        ([2, 3], 12, 1, 3),
        ([5], 64, 4, 8),
    ],
)
def test_trim_batch_on_numpy(lengths, width, multiple, expected):
    batch = padded_batch(lengths, width)
    trimmed = trim_batch(batch, multiple=multiple)
    assert sorted(trimmed) == sorted(batch)
    for name in ("token_ids", "padding_mask", "labels"):
        assert trimmed[name].shape == (len(lengths), expected), name
        np.testing.assert_array_equal(
            trimmed[name], batch[name][:, :expected], err_msg=name
        )
    np.testing.assert_array_equal(
        trimmed["example_index"], batch["example_index"]
    )
    # Only padding was dropped.
    assert trimmed["padding_mask"].sum() == sum(lengths)


def test_trim_batch_in_a_dataset():
    batch = padded_batch([3, 5, 2, 11], 16)
    dataset = (
        tf.data.Dataset.from_tensor_slices(batch)
        .batch(2)
        .map(lambda b: trim_batch(b, multiple=8))
    )
    widths = [b["token_ids"].shape[1] for b in dataset]
    assert widths == [8, 16]


def test_trim_batch_default_multiple_is_8():
    batch = padded_batch([3, 40], 128)
    assert trim_batch(batch)["token_ids"].shape == (2, 40)
    assert trim_batch(padded_batch([3], 128))["token_ids"].shape == (1, 8)
    assert trim_batch(batch, 32)["token_ids"].shape == (2, 64)
    assert trim_batch(padded_batch([127], 128))["token_ids"].shape == (1, 128)
