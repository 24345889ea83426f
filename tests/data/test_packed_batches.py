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


def _width_and_sum_model():
    """A model whose outputs per row are (its batch's width, its ids' sum)."""
    import keras

    inputs = {
        name: keras.Input((None,), dtype="int32", name=name)
        for name in ("token_ids", "segment_ids", "padding_mask")
    }

    def width_and_sum(ids):
        ids = keras.ops.cast(ids, "float32")
        width = keras.ops.ones_like(ids[:, :1]) * keras.ops.cast(
            keras.ops.shape(ids)[1], "float32"
        )
        return keras.ops.concatenate(
            [width, keras.ops.sum(ids, axis=1, keepdims=True)], axis=1
        )

    outputs = keras.layers.Lambda(width_and_sum, output_shape=(2,))(
        inputs["token_ids"]
    )
    return keras.Model(inputs, outputs)


def test_predict_packed_runs_rows_longest_first_and_returns_them_in_order():
    from keras_bert.data import predict_packed

    lengths = np.array([1, 5, 2, 5, 1, 4])
    mask = (np.arange(6)[None, :] < lengths[:, None]).astype("int32")
    features = {
        "token_ids": mask * (np.arange(6)[:, None] + 1),  # row i: ids i + 1
        "segment_ids": np.zeros_like(mask),
        "padding_mask": mask,
    }
    outputs = predict_packed(_width_and_sum_model(), features, batch_size=2)
    # In the rows' order: row i sums (i + 1) * its length.
    np.testing.assert_array_equal(outputs[:, 1], (np.arange(6) + 1) * lengths)
    # Longest first, batches of 2: (5, 5), (4, 2), (1, 1). In file order
    # they would be 5, 5 and 4 wide.
    np.testing.assert_array_equal(outputs[:, 0], [1, 5, 4, 5, 1, 4])
