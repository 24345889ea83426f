"""packed_batches: packed ids (and labels) in batches cut to their longest
row; pack_texts is tested through the GLUE code's preprocess_glue
(tests/fine_tuning/glue/test_dataset.py)."""

import numpy as np
import pytest

from keras_bert.data import packed_batches

FEATURES = {
    "token_ids": np.array([[2, 7, 3, 0], [2, 7, 8, 3], [2, 3, 0, 0]]),
    "segment_ids": np.zeros((3, 4), "int32"),
    "padding_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]]),
}


def test_docstring_example():
    shapes = [
        batch["token_ids"].shape
        for batch, _ in packed_batches(FEATURES, np.array([0, 1, 0]), 1)
    ]
    assert shapes == [(1, 3), (1, 4), (1, 2)]


def test_without_labels_batches_features_alone_in_order():
    batches = list(packed_batches(FEATURES, batch_size=2).as_numpy_iterator())
    assert [b["token_ids"].tolist() for b in batches] == [
        [[2, 7, 3, 0], [2, 7, 8, 3]],
        [[2, 3]],
    ]


def test_sample_weight_comes_third():
    batches = list(
        packed_batches(
            FEATURES, np.arange(3), 3, sample_weight=np.array([1.0, 0.5, 2.0])
        ).as_numpy_iterator()
    )
    ((features, labels, weights),) = batches
    assert labels.tolist() == [0, 1, 2]
    assert weights.tolist() == [1.0, 0.5, 2.0]
    with pytest.raises(ValueError, match="needs `labels`"):
        packed_batches(FEATURES, sample_weight=np.ones(3))
