"""`BertClassifier(multi_label=True)`: names in, probabilities and names
out, thresholds tuned and saved, bad labels refused early, Hugging Face's
`problem_type` and `id2label` read and written."""

import json
import os

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import save_huggingface
from tests.helpers import assert_config_complete
from tests.helpers import run_serialization_test
from tests.models.test_raw_text import TEXTS
from tests.models.test_raw_text import VOCABULARY
from tests.models.test_raw_text import ids
from tests.models.test_raw_text import preprocessor

NAMES = ["film", "book", "opinion"]
LABELS = [
    ["film"], ["book", "opinion"], ["opinion"], ["film", "opinion"],
    ["film"], [],
]  # fmt: skip
MULTI_HOT = np.array(
    [[1, 0, 0], [0, 1, 1], [0, 0, 1], [1, 0, 1], [1, 0, 0], [0, 0, 0]],
    "float32",
)


def tagger(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
        hidden_dim=8, intermediate_dim=16, max_sequence_length=32,
        dropout=0.0,
    )  # fmt: skip
    return keras_bert.BertClassifier(
        backbone, 3, dropout=0.0, multi_label=True, label_names=NAMES,
        preprocessor=preprocessor(), **kwargs,
    )  # fmt: skip


@pytest.fixture(scope="module")
def trained():
    model = tagger()
    model.fit(TEXTS, LABELS, batch_size=3, seed=0, verbose=0)
    return model


def test_names_read_as_multi_hot_rows(trained):
    np.testing.assert_array_equal(trained._head_labels(LABELS, "y"), MULTI_HOT)
    by_names = trained.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    by_rows = trained.evaluate(TEXTS, MULTI_HOT, verbose=0, return_dict=True)
    assert by_names == by_rows
    assert set(by_names) == {"loss", "micro_f1", "macro_f1", "subset_accuracy"}


def test_predict_gives_the_sigmoid_of_the_logits(trained):
    probabilities = trained.predict(TEXTS, verbose=0)
    logits = keras.ops.convert_to_numpy(trained(ids(TEXTS), training=False))
    np.testing.assert_allclose(
        probabilities, 1 / (1 + np.exp(-logits)), rtol=0, atol=1e-6
    )
    assert probabilities.shape == (len(TEXTS), 3)


def test_predicted_labels_follow_the_thresholds(trained):
    probabilities = np.array([[0.9, 0.2, 0.55], [0.1, 0.4, 0.3]])
    assert trained.predicted_labels(probabilities) == [["film", "opinion"], []]
    model = keras_bert.BertClassifier(
        trained.backbone, 3, multi_label=True, label_names=NAMES,
        thresholds=[0.5, 0.35, 0.6],
    )  # fmt: skip
    assert model.predicted_labels(probabilities) == [["film"], ["book"]]
    with pytest.raises(ValueError, match=r"shape \(2, 2\).*\(batch, 3\)"):
        model.predicted_labels(probabilities[:, :2])


def test_tuned_thresholds_are_saved_with_the_model(trained, tmp_path):
    thresholds = trained.tune_thresholds(TEXTS, LABELS)
    assert len(thresholds) == 3 and trained.thresholds == thresholds
    assert_config_complete(trained)
    rebuilt = run_serialization_test(trained)
    assert rebuilt.thresholds == thresholds and rebuilt.multi_label
    path = str(tmp_path / "tagger.keras")
    trained.save(path)
    restored = keras.models.load_model(path)
    assert restored.thresholds == thresholds
    assert restored.label_names == NAMES
    np.testing.assert_array_equal(
        restored.predict(TEXTS, verbose=0), trained.predict(TEXTS, verbose=0)
    )
    restored.evaluate(TEXTS, LABELS, verbose=0)  # its compile came back


@pytest.mark.parametrize(
    "labels, message",
    [
        ([["film"], ["poem"], [], [], [], []],
         r"\['poem'\] at index 1.*'poem'.*not among.*label_names"),
        (["film"] * 6, "one name per example.*a list of names"),
        (MULTI_HOT[:, :2], r"shape \(6, 2\).*\(6, 3\)"),
        (MULTI_HOT * 2, "at index 1.*0 or 1"),
        (LABELS[:5], "5 for 6 texts"),
        ([["film"], "book", [], [], [], []], "'book' at index 1.*a list"),
    ],
)  # fmt: skip
def test_bad_labels_are_refused_before_training(trained, labels, message):
    with pytest.raises(ValueError, match=message):
        trained.fit(TEXTS, labels, verbose=0)


def test_names_need_label_names_and_a_multi_label_model(trained):
    backbone = trained.backbone
    unnamed = keras_bert.BertClassifier(
        backbone, 3, multi_label=True, preprocessor=preprocessor()
    )
    with pytest.raises(ValueError, match="no `label_names`.*label_names=\\["):
        unnamed.fit(TEXTS, LABELS, verbose=0)
    single = keras_bert.BertClassifier(
        backbone, 3, label_names=NAMES, preprocessor=preprocessor()
    )
    with pytest.raises(ValueError, match="list of labels per example.*multi"):
        single.fit(TEXTS, LABELS, verbose=0)
    with pytest.raises(ValueError, match="`tune_thresholds` is for a multi"):
        single.tune_thresholds(TEXTS, [0, 1, 2, 0, 1, 2])
    with pytest.raises(ValueError, match="received no examples"):
        trained.fit([], [], verbose=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(multi_label=True, thresholds=[0.5, 1.0, 0.5]), "in \\(0, 1\\)"),
        (dict(multi_label=True, thresholds=[0.5]), "3 numbers"),
        (dict(thresholds=[0.5, 0.5, 0.5]), "not multi-label"),
        (dict(multi_label="yes"), "True or False"),
    ],
)
def test_bad_arguments_name_the_fix(trained, kwargs, message):
    with pytest.raises(ValueError, match=message):
        keras_bert.BertClassifier(trained.backbone, 3, **kwargs)


def test_hugging_face_problem_type_and_names_both_ways(trained, tmp_path):
    directory = str(tmp_path / "hf")
    save_huggingface(trained, trained.preprocessor.tokenizer, directory)
    with open(os.path.join(directory, "config.json")) as file:
        config = json.load(file)
    assert config["problem_type"] == "multi_label_classification"
    assert config["id2label"] == {"0": "film", "1": "book", "2": "opinion"}
    loaded = keras_bert.BertClassifier.from_checkpoint(directory)
    assert loaded.multi_label and loaded.label_names == NAMES
    np.testing.assert_allclose(
        loaded.predict(TEXTS, verbose=0),
        trained.predict(TEXTS, verbose=0),
        rtol=0,
        atol=1e-6,
    )
    # Asked for, a single-label head on the same weights.
    assert not keras_bert.BertClassifier.from_checkpoint(
        directory, multi_label=False
    ).multi_label
    # A single-label checkpoint's id2label names its classes too.
    config.pop("problem_type")
    with open(os.path.join(directory, "config.json"), "w") as file:
        json.dump(config, file)
    single = keras_bert.BertClassifier.from_checkpoint(directory)
    assert not single.multi_label and single.label_names == NAMES
