"""Task models with a preprocessor read raw text in fit/evaluate/predict."""

import inspect

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.data import packed_batches
from keras_bert.models.raw_text import RawTextMethods
from keras_bert.models.task import Task

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "a", "good", "bad", "film", "book", "the", "was", "very", "long", ".",
]  # fmt: skip
TEXTS = [
    "a good film .",
    "the book was very very long and bad .",
    "good",
    "a bad film",
    "the film was good .",
    "very bad",
]
SECOND_TEXTS = ["good", "a film", "bad book", "long", "the book", "a"]
LABELS = np.array([1, 0, 1, 0, 1, 0])


def preprocessor(sequence_length=16):
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=sequence_length
    )


def classifier(num_classes=2, with_preprocessor=True, seed=0):
    keras.utils.set_random_seed(seed)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=32,
        dropout=0.0,
    )
    return keras_bert.BertClassifier(
        backbone,
        num_classes=num_classes,
        dropout=0.0,
        preprocessor=preprocessor() if with_preprocessor else None,
    )


def ids(texts):
    return {
        name: value.numpy() for name, value in preprocessor()(texts).items()
    }


def assert_weights_close(model, other, atol=1e-6):
    for mine, theirs in zip(model.weights, other.weights):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(mine),
            keras.ops.convert_to_numpy(theirs),
            atol=atol,
        )


@pytest.fixture(scope="module")
def model():
    return classifier()


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "x",
    [TEXTS, pytest.param((TEXTS, SECOND_TEXTS), marks=SLOW)],
    ids=["single", "pair"],
)
def test_predict_and_evaluate_on_text_equal_them_on_its_ids(model, x):
    expected = model.predict(ids(x), verbose=0)
    np.testing.assert_allclose(
        model.predict(x, batch_size=4, verbose=0), expected, atol=1e-6
    )
    # The same as a numpy array, and in a tf.data pipeline.
    arrays = tuple(np.array(t) for t in x) if isinstance(x, tuple) else x
    np.testing.assert_allclose(
        model.predict(arrays, verbose=0), expected, atol=1e-6
    )
    dataset = tf.data.Dataset.from_tensor_slices(x).batch(4)
    np.testing.assert_allclose(
        model.predict(dataset, verbose=0), expected, atol=1e-6
    )
    np.testing.assert_allclose(
        model.evaluate(x, LABELS, batch_size=4, verbose=0),
        model.evaluate(ids(x), LABELS, verbose=0),
        atol=1e-6,
    )


def test_predict_over_batches_of_other_shapes_traces_once(model):
    # Rows cut to their longest in batches of 3, a last batch of 2: Keras
    # alone would trace the model three times (a second width, then a
    # smaller batch).
    texts = TEXTS + ["good ."] * 2
    rows = ids(texts)
    dataset = packed_batches(rows, batch_size=3)
    shapes = [tuple(batch["token_ids"].shape) for batch in dataset]
    assert len({width for _, width in shapes}) == 3, shapes
    assert [size for size, _ in shapes] == [3, 3, 2]
    model.predict_function = None
    outputs = model.predict(dataset, verbose=0)
    assert model.predict_function.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(outputs, model.predict(rows), atol=1e-6)
    # Raw text batched by the model, and text in a dataset, likewise.
    text_dataset = tf.data.Dataset.from_tensor_slices(texts).batch(3)
    for x, batch_size in ((texts, 3), (text_dataset, None)):
        model.predict_function = None
        np.testing.assert_allclose(
            model.predict(x, batch_size=batch_size, verbose=0),
            outputs,
            atol=1e-6,
        )
        assert model.predict_function.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("metrics", [None, ["accuracy"]])
def test_fit_and_evaluate_trace_their_step_once(metrics):
    # Without a strategy Keras builds the optimizer's slots and the
    # metrics inside the first trace, and tf.function then traces again.
    model = classifier()
    model.compile(metrics=metrics)
    calls = {"train_step": 0, "test_step": 0}

    def counted(name):
        step = getattr(model, name)

        def call(data):
            calls[name] += 1
            return step(data)

        return call

    model.train_step = counted("train_step")
    model.test_step = counted("test_step")
    model.fit(ids(TEXTS), LABELS, batch_size=4, verbose=0)
    model.evaluate(ids(TEXTS), LABELS, batch_size=4, verbose=0)
    assert calls == {"train_step": 1, "test_step": 1}


@pytest.mark.parametrize(
    "num_classes, x",
    [
        (2, TEXTS),
        pytest.param(2, (TEXTS, SECOND_TEXTS), marks=SLOW),
        pytest.param(1, TEXTS, marks=SLOW),
    ],
    ids=["single", "pair", "regression"],
)
def test_fit_on_text_equals_fit_on_its_ids(num_classes, x):
    """One batch of every example: the same steps, the same weights."""
    labels = LABELS if num_classes > 1 else LABELS * 0.5 + 0.1
    on_text = classifier(num_classes)
    on_text.fit(x, labels, batch_size=6, epochs=2, shuffle=False, verbose=0)
    on_ids = classifier(num_classes, with_preprocessor=False)
    on_ids.fit(ids(x), labels, batch_size=6, epochs=2, shuffle=False, verbose=0)
    assert_weights_close(on_text, on_ids)


@SLOW
def test_fit_batches_like_the_recipes_seeded_by_seed():
    """Shuffled, like-length batches cut to their longest row
    (`packed_batches`, as recipes/glue.py), ordered by `seed`."""
    on_text = classifier()
    on_text.fit(TEXTS, LABELS, batch_size=2, epochs=2, seed=7, verbose=0)
    by_hand = classifier(with_preprocessor=False)
    batches = packed_batches(
        ids(TEXTS), LABELS, 2, shuffle=True, seed=7, first_epoch=0,
        num_epochs=2, group_by_length=True,
    )  # fmt: skip
    by_hand.fit(batches, steps_per_epoch=3, epochs=2, verbose=0)
    assert_weights_close(on_text, by_hand)


@pytest.mark.slow
def test_fit_on_a_dataset_and_validation_data_of_text():
    model = classifier()
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)).batch(3)
    history = model.fit(
        dataset, validation_data=(TEXTS, LABELS), epochs=1, verbose=0
    )
    assert set(history.history) == {
        "loss", "accuracy", "val_loss", "val_accuracy",
    }  # fmt: skip
    history = model.fit(
        TEXTS, LABELS, validation_split=0.5, batch_size=3, verbose=0
    )
    assert "val_accuracy" in history.history


@SLOW
def test_ids_work_as_without_a_preprocessor():
    """`preprocessor=None` and ids with a preprocessor: plain Keras."""
    with_preprocessor = classifier()
    without = classifier(with_preprocessor=False)
    for model in (with_preprocessor, without):
        model.fit(ids(TEXTS), LABELS, batch_size=2, epochs=1, verbose=0)
    assert_weights_close(with_preprocessor, without, atol=0)


def test_a_saved_model_reads_text_after_loading(model, tmp_path):
    path = str(tmp_path / "classifier.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored.preprocessor, keras_bert.BertPreprocessor)
    np.testing.assert_allclose(
        restored.predict(TEXTS, verbose=0),
        model.predict(TEXTS, verbose=0),
        atol=1e-6,
    )


@pytest.mark.parametrize(
    "num_classes, pair",
    [
        pytest.param(2, True, marks=SLOW),
        pytest.param(2, False, marks=SLOW),
        (1, False),
    ],
    ids=["pair", "single", "regression"],
)
def test_predict_on_text_equals_the_export_without_a_preprocessor_argument(
    num_classes, pair, tmp_path
):
    model = classifier(num_classes)
    if pair:  # The directory second: the model's preprocessor.
        path = keras_bert.serving.export_saved_model(
            model, str(tmp_path), pair=True
        )
    else:
        path = keras_bert.serving.export_saved_model(
            model, export_dir=str(tmp_path)
        )
    serve = tf.saved_model.load(path).signatures["serving_default"]
    x = (TEXTS, SECOND_TEXTS) if pair else TEXTS
    logits = model.predict(x, verbose=0)
    if pair:
        served = serve(text_a=tf.constant(x[0]), text_b=tf.constant(x[1]))
    else:
        served = serve(text=tf.constant(x))
    if num_classes == 1:
        np.testing.assert_allclose(served["score"], logits[:, 0], atol=1e-6)
    else:
        np.testing.assert_allclose(
            served["probabilities"],
            keras.ops.convert_to_numpy(keras.ops.softmax(logits)),
            atol=1e-6,
        )


def test_masked_lm_predicts_where_the_texts_write_mask():
    keras.utils.set_random_seed(0)
    backbone = classifier(with_preprocessor=False).backbone
    model = keras_bert.BertMaskedLM(backbone, preprocessor=preprocessor())
    texts = ["a [MASK] film", "the [MASK] was [MASK] .", "good"]
    outputs = model.predict(texts, batch_size=2, verbose=0)
    features = ids(texts)
    # Two slots for every text (the most masks); position 0 pads.
    features["masked_positions"] = np.array([[2, 0], [2, 4], [0, 0]])
    expected = model.predict(features, verbose=0)
    for name in ("mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(outputs[name], expected[name], atol=1e-6)


# === Bad input: errors naming the argument and the fix ===


def test_text_without_a_preprocessor_says_how_to_attach_one():
    model = classifier(with_preprocessor=False)
    for call in (
        lambda: model.fit(TEXTS, LABELS, verbose=0),
        lambda: model.evaluate(TEXTS, LABELS, verbose=0),
        lambda: model.predict(TEXTS, verbose=0),
    ):
        with pytest.raises(ValueError, match="no preprocessor.*preprocessor="):
            call()


@pytest.mark.parametrize(
    "x, message",
    [
        ([["a good film"], "bad"], "nested list"),
        (["good", 3], "a int at index 1"),
        ((TEXTS, SECOND_TEXTS[:4]), "6 first texts and 4 second texts"),
        ((TEXTS, TEXTS, TEXTS), "a tuple of 3"),
        (
            np.array([TEXTS, SECOND_TEXTS]).T,
            r"\(array\[:, 0\], array\[:, 1\]\)",
        ),
    ],
    ids=["ragged", "not_text", "pair_lengths", "triple", "2d_array"],
)
def test_malformed_texts_name_x_and_the_fix(model, x, message):
    with pytest.raises(ValueError, match=message) as error:
        model.fit(x, LABELS, verbose=0)
    assert "`x`" in str(error.value)
    assert "(texts_a, texts_b)" in str(error.value)


def test_labels_of_another_length_name_y(model):
    with pytest.raises(ValueError, match="`y`: 5 for 6 texts"):
        model.fit(TEXTS, LABELS[:5], verbose=0)
    with pytest.raises(ValueError, match="`y`: 5 for 6 texts"):
        model.evaluate(TEXTS, LABELS[:5], verbose=0)
    with pytest.raises(ValueError, match="needs labels"):
        model.fit(TEXTS, verbose=0)


def test_other_misuse_says_what_to_pass(model):
    with pytest.raises(ValueError, match=r"dataset.batch\(batch_size\)"):
        model.predict(tf.data.Dataset.from_tensor_slices(TEXTS), verbose=0)
    with pytest.raises(ValueError, match="`seed`"):
        model.fit(ids(TEXTS), LABELS, seed=1, verbose=0)
    with pytest.raises(ValueError, match="`steps_per_epoch`"):
        model.fit(TEXTS, LABELS, steps_per_epoch=2, verbose=0)
    masked_lm = keras_bert.BertMaskedLM(
        model.backbone, preprocessor=preprocessor()
    )
    with pytest.raises(ValueError, match="BertMaskedLM.fit` takes the"):
        masked_lm.fit(TEXTS, LABELS, verbose=0)
    with pytest.raises(ValueError, match="`preprocessor`"):
        keras_bert.BertClassifier(
            model.backbone, num_classes=2, preprocessor=lambda x: x
        )


def test_export_without_any_preprocessor_says_what_to_pass(tmp_path):
    model = classifier(with_preprocessor=False)
    with pytest.raises(ValueError, match="no preprocessor.*preprocessor="):
        keras_bert.serving.export_saved_model(model, export_dir=str(tmp_path))
    with pytest.raises(ValueError, match="`export_dir`"):
        keras_bert.serving.export_saved_model(classifier())


def _example(obj):
    """The fenced Python example of `obj`'s docstring."""
    doc = inspect.getdoc(obj)
    return doc.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize(
    "objects",
    [
        [keras_bert.BertClassifier],
        [keras_bert.BertMaskedLM],
        [RawTextMethods.fit, Task.fit, Task.evaluate, Task.predict],
    ],
    ids=["BertClassifier", "BertMaskedLM", "Task"],
)
@SLOW
def test_docstring_examples_run(objects):
    namespace = {"keras_bert": keras_bert, "np": np, "tf": tf}
    for obj in objects:
        exec(_example(obj), namespace)
