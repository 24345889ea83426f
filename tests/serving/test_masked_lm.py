"""Fill-mask: `BertMaskedLM.fill_mask` and its SavedModel endpoint.

A tiny random masked LM (large token embeddings, so that its guesses are
far from uniform) on raw text with `[MASK]`: the answers are the softmax
over the vocabulary at each mask and its `top_k`, worked out here from the
model's own logits; the export answers as `fill_mask`; texts without a
mask and bad `top_k` behave as documented.
"""

import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.decoding.fill_mask import FILL_MASK_PADDING
from keras_bert.serving import export_saved_model
from keras_bert.serving import serving_endpoints
from tests.checkpoints.test_docstring_examples import (
    test_example_runs as run_docstring_example,
)
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox", "dog",
    "jumped", "over", "lazy", "quick", "brown", "##s", ".",
]  # fmt: skip
TEXTS = [
    "the quick brown [MASK] jumped.",
    "[MASK] fox [MASK] over the [MASK] dog.",
    "no mask here",
    "",
    "[MASK]",
]


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY), num_layers=1)
    )
    backbone.token_embedding.embeddings.assign(
        np.random.default_rng(0).normal(0, 1, (len(VOCABULARY), 8))
    )
    return keras_bert.BertMaskedLM(
        backbone,
        preprocessor=keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
        ),
    )


def _expected(model, texts, top_k):
    """Top-k of the softmax of the model's logits at each mask, in numpy."""
    inputs = {k: np.asarray(v) for k, v in model.preprocessor(texts).items()}
    masks = [np.flatnonzero(row == 4) for row in inputs["token_ids"]]
    width = max(len(m) for m in masks)
    positions = np.array([list(m) + [0] * (width - len(m)) for m in masks])
    inputs["masked_positions"] = positions.astype("int32")
    logits = model(inputs)["mlm_logits"]
    logits = keras.ops.convert_to_numpy(logits).astype("float64")
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    ids = np.argsort(-probs, axis=-1, kind="stable")[..., :top_k]
    return masks, ids, np.take_along_axis(probs, ids, axis=-1)


def test_fill_mask_is_the_top_k_of_the_softmax_at_each_mask(model):
    outputs = model.fill_mask(TEXTS, top_k=3, batch_size=2, verbose=0)
    masks, ids, scores = _expected(model, TEXTS, 3)
    assert outputs["num_masks"].tolist() == [1, 3, 0, 0, 1]
    assert outputs["token"].shape == (5, 3, 3)
    for row, positions in enumerate(masks):
        count = len(positions)
        np.testing.assert_array_equal(
            outputs["token_id"][row, :count], ids[row, :count]
        )
        np.testing.assert_allclose(
            outputs["score"][row, :count], scores[row, :count], atol=1e-6
        )
        assert outputs["token"][row, :count].tolist() == [
            [VOCABULARY[i] for i in mask] for mask in ids[row, :count]
        ]
        # Past a text's last mask (and for a text without one): padding.
        assert (outputs["token_id"][row, count:] == -1).all()
        assert (outputs["score"][row, count:] == 0).all()
        assert (outputs["token"][row, count:] == "").all()
    # Best first.
    assert (np.diff(outputs["score"][1], axis=-1) <= 0).all()


def test_top_k_up_to_the_whole_vocabulary(model):
    outputs = model.fill_mask("[MASK]", top_k=len(VOCABULARY), verbose=0)
    assert outputs["token_id"].shape == (1, 1, len(VOCABULARY))  # one str
    assert sorted(outputs["token_id"][0, 0]) == list(range(len(VOCABULARY)))
    np.testing.assert_allclose(outputs["score"][0, 0].sum(), 1.0, atol=1e-6)


@pytest.mark.slow  # an export: seconds
def test_the_export_answers_as_fill_mask(model, tmp_path):
    outputs = model.fill_mask(TEXTS, top_k=3, verbose=0)  # traced before
    path = export_saved_model(model, export_dir=str(tmp_path), top_k=3)
    served = tf.saved_model.load(path).signatures["serving_default"](
        text=tf.constant(TEXTS)
    )
    assert sorted(served) == ["num_masks", "score", "token", "token_id"]
    np.testing.assert_array_equal(
        served["token"].numpy().astype(str), outputs["token"].astype(str)
    )
    for name in ("token_id", "num_masks"):
        np.testing.assert_array_equal(served[name].numpy(), outputs[name])
    np.testing.assert_allclose(
        served["score"].numpy(), outputs["score"], atol=1e-6
    )


def test_the_ids_endpoint_answers_as_the_text_one(model):
    endpoints = serving_endpoints(model, model.preprocessor, top_k=2)
    assert sorted(endpoints) == ["fill_mask_ids", "serving_default"]
    serve_text, _ = endpoints["serving_default"]
    serve_ids, signature = endpoints["fill_mask_ids"]
    assert [spec.name for spec in signature] == [
        "token_ids",
        "segment_ids",
        "padding_mask",
    ]
    from_text = serve_text(tf.constant(TEXTS))
    from_ids = serve_ids(**model.preprocessor(TEXTS))
    for name, value in from_text.items():
        np.testing.assert_array_equal(value.numpy(), from_ids[name].numpy())


def test_texts_without_a_mask_get_none_and_a_warning(model, caplog):
    with caplog.at_level(logging.WARNING):
        outputs = model.fill_mask(["no mask", ""], verbose=0)
    assert outputs["num_masks"].tolist() == [0, 0]
    assert outputs["token_id"].shape == (2, 0, 5)  # no mask in the batch
    assert "2 of 2 texts have no [MASK] (indices [0, 1])" in caplog.text
    # Batches without masks beside batches with some: padded alike.
    mixed = model.fill_mask(["no mask", "[MASK] fox"], batch_size=1, verbose=0)
    assert mixed["token_id"].shape == (2, 1, 5)
    assert mixed["token_id"][0].tolist() == [[-1] * 5]
    assert mixed["token"][0].tolist() == [[FILL_MASK_PADDING["token"]] * 5]


@pytest.mark.parametrize("top_k", [0, -1, len(VOCABULARY) + 1, 2.0, True])
def test_a_bad_top_k_is_named_with_the_range(model, top_k):
    message = f"from 1 to the vocabulary size \\({len(VOCABULARY)}\\)"
    with pytest.raises(ValueError, match=message):
        model.fill_mask(["[MASK]"], top_k=top_k)
    with pytest.raises(ValueError, match=f"top_k={top_k!r}"):
        serving_endpoints(model, model.preprocessor, top_k=top_k)


def test_fill_mask_needs_a_preprocessor(model):
    bare = keras_bert.BertMaskedLM(model.backbone)
    with pytest.raises(ValueError, match="no preprocessor"):
        bare.fill_mask(["[MASK]"])


@pytest.mark.slow  # a model of its own, traced
def test_docstring_example_runs(tmp_path, monkeypatch):
    run_docstring_example(
        keras_bert.BertMaskedLM.fill_mask, tmp_path, monkeypatch
    )
