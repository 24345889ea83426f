"""Deprecated names still work, each warning with its replacement."""

import importlib
import sys
import warnings

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import deprecations


@pytest.fixture(autouse=True)
def fresh_aliases():
    """Each test imports the old modules anew, so that they warn again."""
    yield
    for name in list(sys.modules):
        if (
            name == "keras_bert.tasks"
            or name.startswith("keras_bert.tasks.")
            or name in deprecations.RENAMED_MODULES
        ):
            del sys.modules[name]


@pytest.mark.parametrize(
    "old, new",
    [
        ("keras_bert.tasks", "keras_bert.fine_tuning"),
        ("keras_bert.tasks.glue.tsv", "keras_bert.fine_tuning.glue.tsv"),
        ("keras_bert.tasks.fine_tuning", "keras_bert.fine_tuning.runner"),
        (
            "keras_bert.tasks.squad.fine_tuning",
            "keras_bert.fine_tuning.squad.job",
        ),
        ("keras_bert.tasks.recipe_flags", "keras_bert.cli.recipe_flags"),
        (
            "keras_bert.tasks.ner.frozen_features_tagger",
            "keras_bert.models.frozen_features_tagger",
        ),
        ("keras_bert.models.quantization", "keras_bert.serving.quantization"),
        (
            "keras_bert.layers.remapper_forms",
            "keras_bert.serving.runtime.remapper_forms",
        ),
        (
            "keras_bert.layers.stream_layout",
            "keras_bert.serving.runtime.stream_layout",
        ),
        ("keras_bert.serving.bfloat16_cpu", "keras_bert.serving.cpu"),
    ],
)
def test_an_old_module_warns_and_reads_the_new_one(old, new):
    assert deprecations.new_module_name(old) == new
    with pytest.warns(FutureWarning, match=f"`{old}` is deprecated.*`{new}`"):
        module = importlib.import_module(old)
    replacement = importlib.import_module(new)
    public = [n for n in dir(replacement) if not n.startswith("_")]
    assert public, new
    with pytest.warns(FutureWarning):
        assert getattr(module, public[0]) is getattr(replacement, public[0])


@pytest.mark.parametrize(
    "statement, expected",
    [
        (
            "from keras_bert.tasks import FineTuningTask as value",
            keras_bert.fine_tuning.FineTuningJob,
        ),
        (
            "from keras_bert.tasks import run_fine_tuning as value",
            keras_bert.fine_tuning.run_fine_tuning,
        ),
        (
            "from keras_bert.tasks.ner import FrozenFeaturesTagger as value",
            keras_bert.models.FrozenFeaturesTagger,
        ),
        (
            "from keras_bert.tasks.embeddings import PairEmbeddingModel as "
            "value",
            keras_bert.models.PairEmbeddingModel,
        ),
        (
            "from keras_bert.tasks.glue.fine_tuning import GlueFineTuning as "
            "value",
            keras_bert.fine_tuning.glue.GlueFineTuning,
        ),
    ],
)
def test_an_old_name_warns_and_is_the_new_object(statement, expected):
    scope = {}
    with pytest.warns(FutureWarning, match="deprecated"):
        exec(statement, scope)
    assert scope["value"] is expected


@pytest.mark.parametrize(
    "old_module, name, expected",
    [
        (
            "keras_bert.models.bert_backbone",
            "LORA_TARGET_LAYER_NAMES",
            keras_bert.models.lora.LORA_TARGET_LAYER_NAMES,
        ),
        (
            "keras_bert.models.bert_backbone",
            "DEFAULT_LORA_TARGET_LAYER_NAMES",
            keras_bert.models.lora.DEFAULT_LORA_TARGET_LAYER_NAMES,
        ),
        (
            "keras_bert.serving.signatures",
            "trim_to_longest_row",
            keras_bert.decoding.trim_to_longest_row,
        ),
        (
            "keras_bert.fine_tuning.glue.dataset",
            "preprocess_texts",
            keras_bert.data.pack_texts,
        ),
        ("keras_bert.models", "serving_copy", keras_bert.serving.serving_copy),
        (
            "keras_bert.models",
            "quantized_copy",
            keras_bert.serving.quantized_copy,
        ),
        (
            "keras_bert.models",
            "head_parallel_copy",
            keras_bert.serving.head_parallel_copy,
        ),
        (
            "keras_bert.models.labels",
            "multi_hot_labels",
            keras_bert.models.multi_hot_labels.multi_hot_labels,
        ),
        (
            "keras_bert.models.labels",
            "check_label_names",
            keras_bert.models.label_modes.check_label_names,
        ),
        (
            "keras_bert.models.bert_classifier",
            "check_document_windows",
            keras_bert.models.document_windowing.check_document_windows,
        ),
    ],
)
def test_a_name_that_left_its_module_warns_and_is_the_new_object(
    old_module, name, expected
):
    assert (old_module, name) in deprecations.MOVED_NAMES
    scope = {}
    with pytest.warns(FutureWarning, match=f"`{old_module}.{name}`"):
        exec(f"from {old_module} import {name} as value", scope)
    assert scope["value"] is expected
    module = importlib.import_module(old_module)
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name


def test_an_old_flag_value_warns_and_is_the_new_one():
    with pytest.warns(
        FutureWarning,
        match="`convert_checkpoint.py --model=question_answerer` is "
        "deprecated.*`--model=question_answering`",
    ):
        value = deprecations.flag_value(
            "convert_checkpoint", "model", "question_answerer"
        )
    assert value == "question_answering"
    assert value in keras_bert.models.Task.by_name()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for value in ("auto", "classifier"):
            assert (
                deprecations.flag_value("convert_checkpoint", "model", value)
                == value
            )


def test_the_package_attribute_is_the_alias():
    with pytest.warns(FutureWarning):
        assert keras_bert.tasks.run_fine_tuning is (
            keras_bert.fine_tuning.run_fine_tuning
        )


def test_a_name_that_never_existed_still_fails():
    with pytest.raises(ModuleNotFoundError):
        with pytest.warns(FutureWarning):
            importlib.import_module("keras_bert.tasks.no_such_module")


@pytest.mark.parametrize(
    "old, new",
    [
        ("Dropout", keras_bert.layers.HalfBitsDropout),
        ("LayerNorm", keras_bert.layers.ClosedFormLayerNorm),
    ],
)
def test_old_layer_names_import_and_deserialize(old, new):
    layer_class = getattr(keras_bert.layers, old)
    assert issubclass(layer_class, new)
    layer = layer_class(0.5) if old == "Dropout" else layer_class()
    config = keras.layers.serialize(layer)
    assert config["registered_name"] == f"keras_bert>{old}"
    restored = keras.layers.deserialize(config)
    assert type(restored) is layer_class
    x = np.ones((2, 4), "float32")
    np.testing.assert_allclose(restored(x), layer(x))


def test_head_parallel_block_warns_and_deserializes():
    """`HeadParallelBlock` is the block's `streams` setting; the deprecated
    layer still deserializes and computes the block (a saved file of it:
    tests/layers/test_stream_layout.py)."""
    block = keras_bert.layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8
    )
    x = np.random.default_rng(0).normal(size=(1, 3, 4)).astype("float32")
    block(x)
    with pytest.warns(FutureWarning, match="streams=N"):
        layer = keras_bert.layers.HeadParallelBlock.from_block(block, 2)
    config = keras.layers.serialize(layer)
    assert config["registered_name"] == "keras_bert>HeadParallelBlock"
    restored = keras.layers.deserialize(config)  # built from its config
    restored.set_weights(layer.get_weights())
    np.testing.assert_allclose(restored(x), block(x), atol=2e-6)
