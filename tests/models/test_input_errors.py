"""Wrong inputs to a task model's fit/evaluate/predict: a `ValueError`
that names the fix, before anything is traced; and the inputs that used
to fail and are now read (one-hot labels, Hugging Face-style pairs)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests.models.test_raw_text import LABELS
from tests.models.test_raw_text import SECOND_TEXTS
from tests.models.test_raw_text import TEXTS
from tests.models.test_raw_text import assert_weights_close
from tests.models.test_raw_text import classifier


def assert_nothing_traced(model):
    for name in ("train_function", "test_function", "predict_function"):
        assert getattr(model, name) is None, name
    assert not getattr(model, "_small_calls", None)


@pytest.mark.parametrize(
    "call",
    [
        lambda model: model.fit(None, None),
        lambda model: model.evaluate(None),
        lambda model: model.predict(None),
    ],
    ids=["fit", "evaluate", "predict"],
)
def test_no_x_says_what_x_must_be(call):
    model = classifier()
    with pytest.raises(ValueError, match="received x=None. Pass as `x` raw"):
        call(model)
    assert_nothing_traced(model)


@pytest.mark.parametrize(
    "call, received",
    [
        (lambda m: m.predict([1, 2]), "a list of 2 int"),
        (
            lambda m: m.fit(np.array([[1.0, 2.0]]), [1]),
            r"a NumPy array of dtype float64 and shape \(1, 2\)",
        ),
        (
            lambda m: m.evaluate(tf.constant([[1, 2]]), [1]),
            r"a tf.Tensor of dtype int32 and shape \(1, 2\)",
        ),
        (lambda m: m.predict(3.5), "the float 3.5"),
    ],
    ids=["predict_list", "fit_array", "evaluate_tensor", "predict_scalar"],
)
def test_numbers_for_x_name_what_came_and_what_is_read(call, received):
    model = classifier()
    with pytest.raises(
        ValueError, match=f"cannot read `x`: received {received}"
    ):
        call(model)
    assert_nothing_traced(model)


def test_empty_x_still_predicts_nothing():
    assert classifier().predict([]).shape == (0, 2)


def test_one_hot_labels_train_as_their_class_ids():
    one_hot = keras.utils.to_categorical(LABELS, 2)
    on_rows = classifier()
    on_rows.fit(TEXTS, one_hot, batch_size=6, shuffle=False, verbose=0)
    on_ids = classifier()
    on_ids.fit(TEXTS, LABELS, batch_size=6, shuffle=False, verbose=0)
    assert_weights_close(on_rows, on_ids)


def test_rows_that_are_not_one_hot_suggest_multi_label_or_regression():
    model = classifier()
    rows = np.tile([[0.3, 0.7]], (len(TEXTS), 1))
    with pytest.raises(ValueError, match="not one-hot") as error:
        model.fit(TEXTS, rows, verbose=0)
    assert "multi_label=True" in str(error.value)
    assert "regression" in str(error.value)
    assert_nothing_traced(model)


def test_a_categorical_loss_keeps_its_rows():
    model = classifier()
    model.compile(loss="categorical_crossentropy")
    rows = np.tile([[0.3, 0.7]], (len(TEXTS), 1))
    np.testing.assert_array_equal(model._head_labels(rows, "y"), rows)


def test_pairs_as_rows_read_as_a_pair_of_text_lists():
    rows = [[a, b] for a, b in zip(TEXTS, SECOND_TEXTS)]
    on_rows = classifier()
    on_rows.fit(rows, LABELS, batch_size=6, shuffle=False, verbose=0)
    assert on_rows.pair is True
    on_pair = classifier()
    on_pair.fit((TEXTS, SECOND_TEXTS), LABELS, batch_size=6, verbose=0,
                shuffle=False)  # fmt: skip
    assert_weights_close(on_rows, on_pair)
    np.testing.assert_allclose(
        on_rows.predict(rows, verbose=0),
        on_rows.predict((TEXTS, SECOND_TEXTS), verbose=0),
        atol=1e-6,
    )
    on_rows.evaluate(rows, LABELS, verbose=0)
    on_rows.fit(rows, LABELS, validation_data=(rows, LABELS), verbose=0)


def test_predicted_labels_of_one_class_per_example_are_its_name():
    model = classifier()
    logits = [[0.1, 2.0], [3.0, -1.0]]
    assert model.predicted_labels(logits) == ["1", "0"]
    model.label_names = ["neg", "pos"]
    assert model.predicted_labels(logits) == ["pos", "neg"]
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        model.predicted_labels([[0.0, 1.0, 2.0]] * 2)
    with pytest.raises(ValueError, match="a regressor"):
        classifier(num_classes=1).predicted_labels([[0.5]])


@pytest.mark.parametrize(
    "load",
    [
        keras_bert.BertTokenizer.from_checkpoint,
        keras_bert.checkpoints.load_checkpoint,
    ],
    ids=["tokenizer", "model"],
)
def test_a_missing_checkpoint_is_named_as_given(load):
    with pytest.raises(
        FileNotFoundError, match="'/missing/dir' does not exist"
    ):
        load("/missing/dir")
