"""Masking in tf.data: the same statistics as the TFRecord pipeline, new
masks every epoch."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import DynamicMasker
from tests.data import pretraining_helpers as helpers


def unmasked_batch(count=10_240, length=128):
    """Real, unmasked `[CLS] A [SEP] B [SEP]` sequences, padded."""
    instances, creator = helpers.real_instances()
    token_ids = np.zeros((count, length), "int32")
    segment_ids = np.zeros((count, length), "int32")
    padding_mask = np.zeros((count, length), "int32")
    for row, instance in enumerate(instances[:count]):
        tokens = list(instance.token_ids)
        for position, label in zip(
            instance.masked_lm_positions, instance.masked_lm_ids
        ):
            tokens[position] = label
        token_ids[row, : len(tokens)] = tokens
        segment_ids[row, : len(tokens)] = instance.segment_ids
        padding_mask[row, : len(tokens)] = 1
    features = {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }
    return features, creator.tokenizer


def masked(whole_word=False, seed=(1, 2)):
    features, tokenizer = unmasked_batch()
    masker = DynamicMasker(
        tokenizer.vocabulary,
        tokenizer.mask_token_id,
        max_predictions_per_seq=20,
        do_whole_word_mask=whole_word,
    )
    labels_nsp = np.zeros(len(features["token_ids"]), "int32")
    outputs, labels = masker.mask(features, labels_nsp, tf.constant(seed))
    outputs = {k: v.numpy() for k, v in outputs.items()}
    return features, outputs, labels["mlm_logits"].numpy(), tokenizer


@pytest.fixture(scope="module")
def token_level():
    return masked()


def test_fraction_and_eighty_ten_ten(token_level):
    features, outputs, labels, tokenizer = token_level
    used = labels != 0
    maskable = features["padding_mask"].sum() - 3 * len(labels)
    assert abs(used.sum() / maskable - 0.15) < 0.005
    rows = np.nonzero(used)[0]
    positions = outputs["masked_positions"][used]
    original = features["token_ids"][rows, positions]
    now = outputs["token_ids"][rows, positions]
    assert np.array_equal(labels[used], original)
    as_mask = np.mean(now == tokenizer.mask_token_id)
    unchanged = np.mean(now == original)
    assert abs(as_mask - 0.8) < 0.015
    assert abs(unchanged - 0.1) < 0.015
    assert abs(1 - as_mask - unchanged - 0.1) < 0.015


def test_only_real_non_special_tokens_change(token_level):
    features, outputs, labels, tokenizer = token_level
    changed = outputs["token_ids"] != features["token_ids"]
    special = np.isin(
        features["token_ids"],
        [
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.pad_token_id,
        ],
    )
    assert not np.any(changed & special)
    assert not np.any(changed & (features["padding_mask"] == 0))
    # Every changed token is a prediction slot; unused slots are 0, 0.
    used = labels != 0
    rows, columns = np.nonzero(changed)
    for row, column in zip(rows[:2000], columns[:2000]):
        assert column in outputs["masked_positions"][row][used[row]]
    assert np.all(outputs["masked_positions"][~used] == 0)
    assert np.all(used.sum(1) <= 20)
    for name in ("segment_ids", "padding_mask"):
        assert np.array_equal(outputs[name], features[name])


def test_whole_word_masking_never_splits_a_word():
    features, outputs, labels, tokenizer = masked(whole_word=True)
    continuation = np.array([t.startswith("##") for t in tokenizer.vocabulary])[
        features["token_ids"]
    ]
    selected = np.zeros_like(features["token_ids"], dtype=bool)
    rows = np.nonzero(labels != 0)[0]
    selected[rows, outputs["masked_positions"][labels != 0]] = True
    joined = continuation.copy()
    joined[:, 0] = False
    previous_special = np.isin(
        np.roll(features["token_ids"], 1, axis=1),
        [tokenizer.cls_token_id, tokenizer.sep_token_id],
    )
    joined &= ~previous_special
    previous_selected = np.roll(selected, 1, axis=1)
    assert np.array_equal(selected[joined], previous_selected[joined])
    assert selected[joined].sum() > 1000
    maskable = features["padding_mask"].sum() - 3 * len(labels)
    fraction = selected.sum() / maskable
    assert 0.13 < fraction <= 0.155


def small_dataset(seed):
    features, tokenizer = unmasked_batch(count=64)
    dataset = tf.data.Dataset.from_tensor_slices(
        (features, np.zeros(64, "int32"))
    ).batch(16)
    masker = DynamicMasker(tokenizer.vocabulary, tokenizer.mask_token_id)
    return masker.apply(dataset, seed=seed)


def epoch_positions(dataset):
    return np.concatenate(
        [f["masked_positions"].numpy() for f, _ in dataset], axis=0
    )


def test_new_masks_every_epoch_and_reproducible_under_seed():
    dataset = small_dataset(seed=5)
    first, second = epoch_positions(dataset), epoch_positions(dataset)
    assert not np.array_equal(first, second)
    assert np.array_equal(first, epoch_positions(small_dataset(seed=5)))
    assert not np.array_equal(first, epoch_positions(small_dataset(seed=6)))


def test_invalid_arguments_name_the_value():
    with pytest.raises(ValueError, match="max_predictions_per_seq=0"):
        DynamicMasker(
            helpers.SYNTHETIC_VOCABULARY, 4, max_predictions_per_seq=0
        )
    with pytest.raises(ValueError, match="masked_lm_prob=2"):
        DynamicMasker(helpers.SYNTHETIC_VOCABULARY, 4, masked_lm_prob=2)
