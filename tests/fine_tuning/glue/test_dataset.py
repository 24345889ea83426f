"""Packing GLUE texts into model inputs, and batching them."""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.fine_tuning.glue.dataset import glue_dataset
from keras_bert.fine_tuning.glue.dataset import preprocess_glue
from keras_bert.fine_tuning.glue.dataset import preprocess_glue_splits
from keras_bert.fine_tuning.glue.loader import load_glue
from keras_bert.fine_tuning.glue.tasks import get_glue_task
from tests.fine_tuning.glue.fixtures import glue_fixture_dir

# tests/fine_tuning/glue/fixtures.py, written once
FIXTURES = glue_fixture_dir()


@pytest.fixture(scope="module")
def preprocessor():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=8
    )


def test_pairs_are_packed_in_the_task_feature_order(preprocessor):
    examples = {
        "idx": np.array([0]),
        "premise": np.array(["the cat"], dtype=object),
        "hypothesis": np.array(["cat"], dtype=object),
        "label": np.array([1], "int32"),
    }
    features = preprocess_glue("mnli", examples, preprocessor)
    np.testing.assert_array_equal(
        features["token_ids"], [[2, 5, 6, 3, 6, 3, 0, 0]]
    )
    np.testing.assert_array_equal(
        features["segment_ids"], [[0, 0, 0, 0, 1, 1, 0, 0]]
    )


def test_many_splits_in_one_pass_equal_one_by_one(preprocessor):
    splits = [
        ("rte", load_glue("rte", "train", FIXTURES)),
        ("ax", load_glue("ax", "test", FIXTURES)),
    ]
    together = preprocess_glue_splits(splits, preprocessor)
    for (task, examples), features in zip(splits, together):
        first, second = get_glue_task(task).text_features
        alone = preprocessor(
            (
                tf.constant(examples[first].tolist()),
                tf.constant(examples[second].tolist()),
            )
        )
        for name in alone:
            np.testing.assert_array_equal(features[name], alone[name])
    with pytest.raises(ValueError, match="same number of texts"):
        preprocess_glue_splits(
            [splits[0], ("sst2", load_glue("sst2", "test", FIXTURES))],
            preprocessor,
        )


def test_glue_dataset_batches_features_with_labels():
    features = {
        "token_ids": np.arange(10).reshape(5, 2),
        "padding_mask": np.ones((5, 2), "int32"),
    }
    batches = list(
        glue_dataset(features, np.arange(5), 2, shuffle=True, seed=1)
    )
    assert [len(labels) for _, labels in batches] == [2, 2, 1]
    seen = np.concatenate([x["token_ids"][:, 0] // 2 for x, _ in batches])
    labels = np.concatenate([y for _, y in batches])
    np.testing.assert_array_equal(seen, labels)  # rows keep their labels


def test_epoch_seeded_shuffle_replays_from_any_epoch():
    features = {
        "token_ids": np.arange(14).reshape(7, 2),
        "padding_mask": np.ones((7, 2), "int32"),
    }

    def epochs(first_epoch, count):
        dataset = glue_dataset(
            features,
            np.arange(7),
            3,
            shuffle=True,
            seed=5,
            first_epoch=first_epoch,
            num_epochs=4,
        )
        batches = [labels.numpy() for _, labels in dataset]
        assert len(batches) == 3 * count
        return [
            np.concatenate(batches[i : i + 3]) for i in range(0, 3 * count, 3)
        ]

    from_start = epochs(0, 4)
    for epoch in from_start:  # every epoch is a permutation of all rows
        np.testing.assert_array_equal(np.sort(epoch), np.arange(7))
    assert len({tuple(epoch) for epoch in from_start}) > 1  # reshuffled
    resumed = epochs(2, 2)  # a run resumed after 2 finished epochs
    for mine, theirs in zip(resumed, from_start[2:]):
        np.testing.assert_array_equal(mine, theirs)
    with pytest.raises(ValueError, match="first_epoch=4, num_epochs=4"):
        glue_dataset(
            features,
            np.arange(7),
            3,
            shuffle=True,
            first_epoch=4,
            num_epochs=4,
        )


def test_trimming_padding_does_not_change_the_outputs():
    import keras

    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=20,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=12,
    )
    model = keras_bert.BertClassifier(backbone, num_classes=2)
    rng = np.random.default_rng(0)
    lengths = np.array([3, 5, 2, 4])
    positions = np.arange(12)[None, :]
    padding_mask = (positions < lengths[:, None]).astype("int32")
    features = {
        "token_ids": rng.integers(1, 20, (4, 12)) * padding_mask,
        "segment_ids": np.zeros((4, 12), "int32"),
        "padding_mask": padding_mask,
    }
    labels = np.zeros(4)
    full = glue_dataset(features, labels, 2, trim_padding=False)
    # By default the longest row; with an int, rounded up to a multiple.
    for multiple, widths in ((True, [5, 4]), (4, [8, 4]), (8, [8, 8])):
        trimmed = glue_dataset(features, labels, 2, trim_padding=multiple)
        assert [x["token_ids"].shape[1] for x, _ in trimmed] == widths
        np.testing.assert_allclose(
            model.predict(trimmed, verbose=0),
            model.predict(full, verbose=0),
            atol=1e-5,
        )


def test_length_grouped_batches_hold_like_lengths_and_replay():
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 40, 400)
    positions = np.arange(40)[None, :]
    padding_mask = (positions < lengths[:, None]).astype("int32")
    features = {
        "token_ids": (positions + 1) * padding_mask,
        "segment_ids": np.zeros_like(padding_mask),
        "padding_mask": padding_mask,
    }
    labels = np.arange(400)

    def batches(grouped, first_epoch=0):
        dataset = glue_dataset(
            features,
            labels,
            8,
            shuffle=True,
            seed=3,
            first_epoch=first_epoch,
            num_epochs=2,
            group_by_length=grouped,
        )
        return [(x["token_ids"].shape[1], y.numpy()) for x, y in dataset]

    grouped, plain = batches(True), batches(False)
    assert len(grouped) == len(plain) == 100
    for epoch in (grouped[:50], grouped[50:]):  # each epoch has every row
        rows = np.concatenate([y for _, y in epoch])
        np.testing.assert_array_equal(np.sort(rows), labels)
    for width, rows in grouped:  # rows keep their features; cut to longest
        assert width == lengths[rows].max()

    # Like lengths: far fewer padded positions than plain shuffling.
    def padded(run):
        return sum(width * len(r) - lengths[r].sum() for width, r in run)

    assert padded(grouped) < padded(plain) / 5
    # A run resumed at epoch 1 replays the uninterrupted run's batches.
    for (w1, r1), (w2, r2) in zip(batches(True, first_epoch=1), grouped[50:]):
        assert w1 == w2
        np.testing.assert_array_equal(r1, r2)
    with pytest.raises(ValueError, match="group_by_length=True"):
        glue_dataset(features, labels, 8, group_by_length=True)
