"""A classifier's label mode and document windows: the objects
`BertClassifier` is given, their keyword spellings, their configs."""

import re
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert.models import DocumentWindowing
from keras_bert.models import MultiLabel
from keras_bert.models import Regression
from keras_bert.models import SingleLabel
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config
from tests.models.test_raw_text import VOCABULARY
from tests.models.test_raw_text import preprocessor

OBJECTS = [
    SingleLabel(),
    Regression(),
    MultiLabel(),
    MultiLabel([0.25, 0.5, 0.75]),
    DocumentWindowing(7),
    DocumentWindowing(5, aggregation="max", max_windows=3),
]


@pytest.fixture(scope="module")
def backbone():
    return BertBackbone(**tiny_backbone_config(vocabulary_size=len(VOCABULARY)))


@pytest.mark.parametrize("value", OBJECTS, ids=repr)
def test_each_object_serializes_and_comes_back_equal(value):
    config = keras.saving.serialize_keras_object(value)
    restored = keras.saving.deserialize_keras_object(config)
    assert type(restored) is type(value) and restored == value
    assert restored.get_config() == value.get_config()
    assert repr(restored) == repr(value)


@pytest.mark.parametrize(
    "keywords, objects",
    [
        (dict(num_classes=3), dict(label_mode=SingleLabel())),
        (dict(num_classes=1), dict(label_mode=Regression())),
        (
            dict(num_classes=3, multi_label=True),
            dict(label_mode=MultiLabel([0.5, 0.5, 0.5])),
        ),
        (
            dict(num_classes=3, multi_label=True, thresholds=[0.2, 0.5, 0.9]),
            dict(label_mode=MultiLabel([0.2, 0.5, 0.9])),
        ),
        (
            dict(num_classes=3, doc_stride=7, aggregation="max"),
            dict(windows=DocumentWindowing(7, "max")),
        ),
        (
            dict(num_classes=2, doc_stride=4, max_windows=2),
            dict(windows=DocumentWindowing(4, max_windows=2)),
        ),
    ],
)
def test_keywords_and_objects_build_the_same_model(backbone, keywords, objects):
    num_classes = keywords["num_classes"]
    spelled = BertClassifier(backbone, **keywords, name="same")
    given = BertClassifier(backbone, num_classes, **objects, name="same")
    assert spelled.get_config() == given.get_config()
    for name in ("multi_label", "thresholds", "doc_stride", "aggregation"):
        assert getattr(spelled, name) == getattr(given, name)
    assert_config_complete(given)


def test_a_config_of_keyword_arguments_loads_as_the_objects(backbone):
    """What earlier versions saved: the keywords, no label mode."""
    model = BertClassifier(
        backbone, 3, label_mode=MultiLabel([0.3, 0.5, 0.7]),
        windows=DocumentWindowing(6, "max", 2),
    )  # fmt: skip
    config = {
        **{k: v for k, v in model.get_config().items()
           if k not in ("label_mode", "windows")},
        "multi_label": True, "thresholds": [0.3, 0.5, 0.7],
        "doc_stride": 6, "aggregation": "max", "max_windows": 2,
    }  # fmt: skip
    loaded = BertClassifier.from_config(config)
    assert loaded.label_mode == MultiLabel([0.3, 0.5, 0.7])
    assert loaded.windows == DocumentWindowing(6, "max", 2)
    assert loaded.get_config() == model.get_config()


def test_keras_file_round_trip_keeps_the_objects(backbone):
    model = BertClassifier(
        backbone, 3, label_mode=MultiLabel([0.3, 0.5, 0.7]),
        label_names=["a", "b", "c"],
    )  # fmt: skip
    inputs = backbone_inputs(vocabulary_size=len(VOCABULARY))
    restored = run_model_saving_test(model, inputs)
    assert restored.label_mode == model.label_mode
    assert restored.windows is None
    assert restored.predicted_labels([[0.4, 0.4, 0.8]]) == [["a", "c"]]


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: MultiLabel([0.5, 1.0]), r"\[0.5, 1.0\].*in \(0, 1\)"),
        (lambda: MultiLabel("0.5"), r"'0.5'.*in \(0, 1\)"),
        (lambda: MultiLabel([0.5, np.nan]), r"nan.*in \(0, 1\)"),
        (lambda: DocumentWindowing(0), "doc_stride=0"),
        (lambda: DocumentWindowing(7, "sum"), "aggregation='sum'"),
        (lambda: DocumentWindowing(7, max_windows=0), "max_windows=0"),
    ],
)
def test_a_broken_object_is_refused_naming_the_value(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize(
    "num_classes, kwargs, message",
    [
        (3, dict(label_mode=MultiLabel([0.5, 0.5])),
         r"\[0.5, 0.5\] for num_classes=3.*3 numbers"),
        (3, dict(label_mode=Regression()), "num_classes=3 for Regression"),
        (1, dict(label_mode=SingleLabel()), "num_classes=1 for SingleLabel"),
        (3, dict(label_mode="multi_label"), "label_mode='multi_label'"),
        (3, dict(label_mode=MultiLabel(), multi_label=True), "twice"),
        (3, dict(label_mode=SingleLabel(), thresholds=[0.5] * 3), "twice"),
        (3, dict(windows=7), "windows=7"),
        (3, dict(windows=DocumentWindowing(7), doc_stride=5), "twice"),
        (3, dict(windows=DocumentWindowing(7), pair=True), "sentence pairs"),
        (1, dict(label_mode=Regression(), label_names=["x"]), "regressor"),
    ],
)  # fmt: skip
def test_objects_that_do_not_fit_the_model_are_refused(
    backbone, num_classes, kwargs, message
):
    with pytest.raises(ValueError, match=message):
        BertClassifier(backbone, num_classes, **kwargs)


def test_thresholds_set_on_the_model_are_checked(backbone):
    model = BertClassifier(backbone, 3, label_mode=MultiLabel())
    model.thresholds = [0.1, 0.2, 0.3]
    assert model.label_mode == MultiLabel([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"\[0.1\] for num_classes=3"):
        model.thresholds = [0.1]
    with pytest.raises(ValueError, match="`thresholds` is for a multi"):
        BertClassifier(backbone, 3).thresholds = [0.1, 0.2, 0.3]


def test_windows_without_a_preprocessor_name_the_fix(backbone):
    with pytest.raises(ValueError, match="no preprocessor.*`preprocessor=`"):
        DocumentWindowing(7).cutter(None)
    model = BertClassifier(backbone, 2, windows=DocumentWindowing(7))
    assert model.document_windows(preprocessor()).stride == 7


def _examples(cls):
    return re.findall(r"```python\n(.*?)```", cls.__doc__, re.S)


@pytest.mark.parametrize(
    "cls",
    [
        SingleLabel,
        Regression,
        MultiLabel,
        DocumentWindowing,
        pytest.param(BertClassifier, marks=pytest.mark.slow),  # fits 4 models
    ],
)
def test_docstring_examples_run(cls, backbone):
    (example,) = _examples(cls)
    scope = dict(
        keras_bert=keras_bert, np=np, tf=tf,
        backbone=backbone, preprocessor=preprocessor(),
    )  # fmt: skip
    exec(compile(textwrap.dedent(example), cls.__name__, "exec"), scope)


def test_from_checkpoint_takes_the_objects(backbone, tmp_path):
    """A label mode given overrides the checkpoint's `problem_type`."""
    from keras_bert.checkpoints import save_huggingface

    tagger = BertClassifier(backbone, 3, label_mode=MultiLabel())
    directory = str(tmp_path / "hf")
    save_huggingface(tagger, preprocessor().tokenizer, directory)
    read = BertClassifier.from_checkpoint(
        directory, windows=DocumentWindowing(5)
    )
    assert read.label_mode == MultiLabel([0.5] * 3)
    assert read.windows == DocumentWindowing(5)
    single = BertClassifier.from_checkpoint(directory, label_mode=SingleLabel())
    assert single.label_mode == SingleLabel()
