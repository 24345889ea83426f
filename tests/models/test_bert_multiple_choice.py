"""BertMultipleChoice: one score per choice, softmax over the choices."""

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.models.choice_inputs import check_choice_labels
from keras_bert.models.choice_inputs import check_choices
from keras_bert.models.choice_inputs import choice_dataset
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from tests.helpers import assert_config_complete
from tests.helpers import run_model_saving_test
from tests.helpers import run_serialization_test
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",
    "flew", "on", "mat", "moon", "to", "a", "dog", "ran", "home",
]  # fmt: skip
CONTEXTS = ["the cat sat", "the dog ran", "a cat flew"]
CHOICES = [
    ["on the mat", "to the moon", "home"],
    ["home", "on the moon", "to a cat"],
    ["to the moon", "on a mat", "the dog"],
]
LABELS = [0, 0, 0]


def model(preprocessor=True, dropout=0.1, seed=0):
    keras.utils.set_random_seed(seed)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
    )
    return keras_bert.BertMultipleChoice(
        backbone,
        dropout=dropout,
        preprocessor=keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY), sequence_length=12
        )
        if preprocessor
        else None,
    )


def ids(batch=2, choices=3, length=5, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, len(VOCABULARY), (batch, choices, length))
    token_ids[..., 0] = 2
    padding_mask = np.ones((batch, choices, length), "int32")
    padding_mask[0, 1, 3:] = 0  # one padded choice
    return {
        "token_ids": (token_ids * padding_mask).astype("int32"),
        "segment_ids": (np.arange(length) >= 2).astype("int32")
        * np.ones((batch, choices, 1), "int32")
        * padding_mask,
        "padding_mask": padding_mask,
    }


def test_logits_are_the_head_on_each_choices_pooled_output():
    classifier = model(preprocessor=False)
    inputs = ids()
    classifier.output_dense.bias.assign([0.25])
    logits = classifier(inputs, training=False).numpy()
    assert logits.shape == (2, 3) and logits.dtype == np.float32
    rows = {name: value.reshape(6, 5) for name, value in inputs.items()}
    pooled = classifier.backbone(rows, training=False)["pooled_output"]
    kernel, bias = classifier.output_dense.get_weights()
    expected = (pooled.numpy() @ kernel + bias).reshape(2, 3)
    np.testing.assert_allclose(logits, expected, atol=1e-6)


@pytest.fixture(scope="module")
def fitted():
    """A model fit on raw text (its learning curve is checked below)."""
    classifier = model(dropout=0.0)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = classifier.fit(
        (CONTEXTS * 4, CHOICES * 4),
        LABELS * 4,
        batch_size=3,
        epochs=10,
        seed=0,
        verbose=0,
        validation_data=((CONTEXTS, CHOICES), LABELS),
    )
    return classifier, history.history


def test_fit_on_text_trains_and_validates(fitted):
    classifier, history = fitted
    assert len(history["loss"]) == len(history["val_accuracy"]) == 10
    # A tiny random model leaves ln(3) slowly; it does leave it.
    assert history["loss"][-1] < history["loss"][0] - 0.01
    results = classifier.evaluate(
        (CONTEXTS, CHOICES), LABELS, verbose=0, return_dict=True
    )
    np.testing.assert_allclose(
        results["accuracy"], history["val_accuracy"][-1], atol=1e-6
    )


def test_config_is_complete_and_round_trips():
    classifier = model(dropout=0.2)
    assert_config_complete(classifier)
    assert classifier.get_config()["dropout"] == 0.2
    rebuilt = run_serialization_test(classifier)
    assert rebuilt.preprocessor.sequence_length == 12


def test_a_keras_file_round_trip_keeps_outputs_and_preprocessor(fitted):
    classifier, _ = fitted
    restored = run_model_saving_test(classifier, ids())
    np.testing.assert_array_equal(
        restored.predict((CONTEXTS, CHOICES), verbose=0),
        classifier.predict((CONTEXTS, CHOICES), verbose=0),
    )


def test_predict_on_text_equals_predict_on_the_packed_ids(fitted):
    classifier, _ = fitted
    logits = classifier.predict((CONTEXTS, CHOICES), verbose=0)
    assert logits.shape == (3, 3)
    contexts = np.repeat(CONTEXTS, 3)
    packed = classifier.preprocessor((contexts, np.array(CHOICES).ravel()))
    inputs = {
        name: value.numpy().reshape(3, 3, -1) for name, value in packed.items()
    }
    np.testing.assert_allclose(
        logits, classifier.predict(inputs, verbose=0), atol=1e-6
    )


def test_the_order_of_each_epoch_follows_the_seed():
    features = {
        name: np.arange(40).reshape(10, 2, 2) for name in BACKBONE_INPUTS
    }

    def epochs(seed):
        dataset = choice_dataset(
            features, np.arange(10), batch_size=4, shuffle=True, seed=seed
        )
        return [
            np.concatenate([labels for _, labels in dataset]).tolist()
            for _ in range(2)
        ]

    first, second = epochs(1)
    assert first != second  # reshuffled every epoch
    assert sorted(first) == list(range(10))
    assert epochs(1) == [first, second]  # from the seed alone
    assert epochs(2) != [first, second]


@pytest.mark.parametrize(
    "x, message",
    [
        ((CONTEXTS, [["a", "b"], ["a"], ["a", "b"]]), r"ragged choices"),
        ((CONTEXTS, [["a"], [], ["b"]]), r"choices\[1\] is an empty list"),
        ((CONTEXTS[:2], CHOICES), r"2 contexts and 3 choice lists"),
        ((CONTEXTS, ["a", "b", "c"]), r"choices\[0\] is a str"),
        (CONTEXTS, r"\(contexts, choices\)"),
        (([1, 2, 3], CHOICES), r"contexts\[0\] is a int"),
        ((CONTEXTS, [["a", 2, "c"]] * 3), r"choices\[0\]\[1\] is a int"),
    ],
)
def test_bad_text_is_refused_before_anything_runs(fitted, x, message):
    with pytest.raises(ValueError, match=message):
        fitted[0].predict(x, verbose=0)


@pytest.mark.parametrize(
    "labels, message",
    [
        ([0, 3, 1], r"y\[1\]=3 out of range for 3 choices"),
        ([0, -1, 1], r"y\[1\]=-1 out of range"),
        ([0, 1], r"2 labels for 3 examples"),
        ([0.5, 1, 1], r"expected choice indices"),
        (["a", "b", "c"], r"expected choice indices"),
    ],
)
def test_bad_labels_are_refused_by_fit_and_evaluate(fitted, labels, message):
    classifier = fitted[0]
    with pytest.raises(ValueError, match=message):
        classifier.fit((CONTEXTS, CHOICES), labels, verbose=0)
    with pytest.raises(ValueError, match=message):
        classifier.evaluate((CONTEXTS, CHOICES), labels, verbose=0)


def test_text_without_a_preprocessor_says_how_to_attach_one():
    with pytest.raises(ValueError, match="no preprocessor"):
        model(preprocessor=False).predict((CONTEXTS, CHOICES))


def test_validation_labels_are_checked_too(fitted):
    with pytest.raises(ValueError, match="validation_data"):
        fitted[0].fit(
            (CONTEXTS, CHOICES),
            LABELS,
            validation_data=((CONTEXTS, CHOICES), [0, 5, 0]),
            verbose=0,
        )


def test_checks_accept_arrays_and_tensors():
    import tensorflow as tf

    contexts, choices = check_choices(
        (tf.constant(CONTEXTS), np.array(CHOICES))
    )
    assert choices.shape == (3, 3) and contexts[0] == "the cat sat"
    labels = check_choice_labels(np.array([[0], [2], [1]]), 3, 3)
    np.testing.assert_array_equal(labels, [0, 2, 1])


def test_huggingface_layout_round_trip(fitted, tmp_path):
    import json

    classifier = fitted[0]
    keras_bert.checkpoints.save_huggingface(
        classifier, classifier.preprocessor.tokenizer, tmp_path
    )
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["BertForMultipleChoice"]
    from safetensors.numpy import load_file

    tensors = load_file(tmp_path / "model.safetensors")
    assert tensors["classifier.weight"].shape == (1, 8)
    assert "bert.pooler.dense.weight" in tensors
    # "auto": the class comes from `architectures`.
    loaded = keras_bert.checkpoints.load_checkpoint(str(tmp_path), "auto")
    assert isinstance(loaded, keras_bert.BertMultipleChoice)
    assert loaded.preprocessor.sequence_length == 16  # the positions
    np.testing.assert_allclose(
        loaded.predict((CONTEXTS, CHOICES), verbose=0),
        classifier.predict((CONTEXTS, CHOICES), verbose=0),
        atol=1e-6,
    )
