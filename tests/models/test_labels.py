"""`fit` and `evaluate` check labels before anything is traced."""

import numpy as np
import pytest

import keras_bert
from keras_bert.models import labels as labels_module
from tests.models.test_raw_text import LABELS
from tests.models.test_raw_text import SECOND_TEXTS
from tests.models.test_raw_text import TEXTS
from tests.models.test_raw_text import classifier
from tests.models.test_raw_text import ids
from tests.models.test_raw_text import preprocessor

# (labels, num_classes, what the error says)
BAD_LABELS = {
    "strings": (
        ["pos", "neg"] * 3,
        2,
        r"string labels \(neg, pos\).*label_names=\['neg', 'pos'\]",
    ),
    "out_of_range": (
        [0, 1, 3, 0, 1, 0],
        2,
        "3 at index 2, out of range for num_classes=2.*num_classes=4",
    ),
    "negative": ([0, -1, 1, 0, 1, 0], 2, "-1 at index 1, out of range"),
    "floats": (
        [0.5, 1.0, 0.0, 1.0, 0.0, 1.0],
        2,
        r"0.5 at index 0, where a classifier takes class ids 0 to 1.*"
        "num_classes=1",
    ),
    "wrong_length": ([0, 1, 1], 2, "`y`: 3 for 6"),
    "nan_regression": (
        [0.1, np.nan, 0.3, 0.2, 0.0, 1.0],
        1,
        "nan at index 1. Labels must be finite",
    ),
    "strings_regression": (["0.1"] * 6, 1, "for a regressor"),
    "shape": (np.zeros((6, 3), "int32"), 2, r"shape \(6, 3\)"),
}


@pytest.fixture(scope="module")
def models():
    return {1: classifier(num_classes=1), 2: classifier(num_classes=2)}


@pytest.mark.parametrize("name", sorted(BAD_LABELS))
@pytest.mark.parametrize("method", ["fit", "evaluate"])
@pytest.mark.parametrize("inputs", ["text", "pairs", "ids"])
def test_bad_labels_raise_before_anything_is_traced(
    models, name, method, inputs
):
    labels, num_classes, message = BAD_LABELS[name]
    model = models[num_classes]
    x = {
        "text": TEXTS,
        "pairs": (TEXTS, SECOND_TEXTS),
        "ids": ids(TEXTS),
    }[inputs]
    model.pair = None  # each layout may be fit on
    with pytest.raises(ValueError, match=message) as error:
        getattr(model, method)(x, labels, verbose=0)
    assert "`y`" in str(error.value)
    # Raised before Keras made (traced) a step function.
    assert model.train_function is None
    assert model.test_function is None


def test_bad_validation_labels_raise_before_training(models):
    model = models[2]
    model.pair = None
    for validation_x in (TEXTS, ids(TEXTS)):
        with pytest.raises(ValueError, match="`validation_data`: 3 at"):
            model.fit(
                TEXTS,
                LABELS,
                validation_data=(validation_x, [0, 1, 3, 0, 1, 0]),
                verbose=0,
            )
    assert model.train_function is None


@pytest.mark.parametrize("method", ["fit", "evaluate"])
@pytest.mark.parametrize(
    "x",
    [[], ([], []), np.array([], dtype=str), {"token_ids": np.zeros((0, 4))}],
    ids=["list", "pair", "array", "ids"],
)
def test_no_examples_say_so(models, method, x):
    model = models[2]
    with pytest.raises(ValueError, match=f"`{method}` received no examples"):
        getattr(model, method)(x, [], verbose=0)
    assert model.train_function is None and model.test_function is None


@pytest.mark.slow  # tens of seconds on two cores
def test_label_names_take_strings_and_survive_saving(tmp_path):
    model = classifier()
    named = keras_bert.BertClassifier(
        model.backbone,
        num_classes=2,
        preprocessor=preprocessor(),
        label_names=["neg", "pos"],
    )
    by_name = np.array(["neg", "pos"])[LABELS]
    named.fit(TEXTS, by_name, batch_size=2, epochs=1, shuffle=False)
    scores = named.evaluate(TEXTS, by_name, verbose=0, return_dict=True)
    by_id = named.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    assert scores == by_id
    with pytest.raises(ValueError, match="'ok' at index 1, not among"):
        named.evaluate(TEXTS[:2], ["neg", "ok"], verbose=0)
    path = str(tmp_path / "named.keras")
    named.save(path)
    loaded = keras_bert.models.BertClassifier.from_config(named.get_config())
    assert loaded.label_names == ["neg", "pos"]


@pytest.mark.parametrize(
    "label_names, message",
    [
        (["a"], "2 distinct names"),
        (["a", "a"], "2 distinct names"),
        ("ab", "list of str"),
    ],
)
def test_bad_label_names_are_refused(models, label_names, message):
    with pytest.raises(ValueError, match=message):
        keras_bert.BertClassifier(
            models[2].backbone, num_classes=2, label_names=label_names
        )
    with pytest.raises(ValueError, match="regressor"):
        keras_bert.BertClassifier(
            models[2].backbone, num_classes=1, label_names=["a"]
        )


def test_whole_floats_and_bools_are_class_ids():
    np.testing.assert_array_equal(
        labels_module.class_labels(np.array([1.0, 0.0]), 2), [1, 0]
    )
    np.testing.assert_array_equal(
        labels_module.class_labels(np.array([True, False]), 2), [1, 0]
    )


def test_examples_in_counts_rows_without_reading_datasets():
    import tensorflow as tf

    assert labels_module.examples_in(TEXTS) == 6
    assert labels_module.examples_in((TEXTS, SECOND_TEXTS)) == 6
    assert labels_module.examples_in(ids(TEXTS)) == 6
    assert labels_module.examples_in(tf.data.Dataset.range(3)) is None
    assert labels_module.examples_in(None) is None
