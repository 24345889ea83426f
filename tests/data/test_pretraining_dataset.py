"""Pre-training straight from text: pairs and masks made in tf.data."""

import numpy as np

import keras_bert
from keras_bert.data import PretrainingInstanceCreator
from keras_bert.data import pretraining_dataset_from_text
from tests.data import pretraining_helpers as helpers
from tests.helpers import tiny_backbone_config


def text_dataset(tmp_path, seed=3, repeat=True):
    corpus = helpers.write_synthetic_corpus(tmp_path)
    creator = PretrainingInstanceCreator(
        helpers.synthetic_tokenizer(),
        max_seq_length=16,
        max_predictions_per_seq=4,
        dupe_factor=1,
    )
    return pretraining_dataset_from_text(
        corpus, creator, 8, seed=seed, repeat=repeat
    )


def test_batches_fit_the_masked_lm_model(tmp_path):
    dataset = text_dataset(tmp_path)
    features, labels = next(iter(dataset))
    assert {k: tuple(v.shape) for k, v in features.items()} == {
        "token_ids": (8, 16),
        "segment_ids": (8, 16),
        "padding_mask": (8, 16),
        "masked_positions": (8, 4),
    }
    assert labels["mlm_logits"].shape == (8, 4)
    assert set(labels["nsp_logits"].numpy()) <= {0, 1}
    # Padding carries [PAD] and segment 0.
    padding = features["padding_mask"].numpy() == 0
    assert np.all(features["token_ids"].numpy()[padding] == 0)
    assert np.all(features["segment_ids"].numpy()[padding] == 0)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=len(helpers.SYNTHETIC_VOCABULARY),
            num_layers=1,
        )
    )
    model = keras_bert.BertMaskedLM(backbone)
    history = model.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def first_batches(dataset):
    return np.concatenate(
        [f["token_ids"].numpy() for f, _ in dataset.take(6)], axis=0
    )


def test_every_pass_makes_new_pairs_and_masks(tmp_path):
    dataset = text_dataset(tmp_path, repeat=False)
    first = first_batches(dataset)
    assert not np.array_equal(first, first_batches(dataset))
    # A new pipeline with the same seed repeats the first pass.
    assert np.array_equal(
        first, first_batches(text_dataset(tmp_path, repeat=False))
    )
