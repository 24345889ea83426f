"""Files written by earlier keras-bert versions still load and answer the same.

`previous_version/<commit>/` holds a generation of files written by the
code at that commit (`previous_version/common.py` says what a generation
holds and how to add one): tiny models' `.keras` and `.weights.h5` files,
raw-text SavedModel exports, and `expected.npz`, what each gave when
written. A redesign that changes no behaviour keeps every file loading
to the same outputs, every kept SavedModel answering as it did, and the
exports of the loaded models answering as the earlier exports did.

- a68cf67: every model class's `.keras` and `.weights.h5`, a
  classifier's export, from model classes that held their checkpoint and
  serving code (CHANGELOG.md, "Models that are only models");
- 2e700df: `BertTextEmbedder`, a LoRA classifier, `FrozenFeaturesTagger`,
  a backbone with `optimizations=()`, a classifier's int8 and `streams=2`
  exports;
- be12d5f: `BertClassifier`s saved with the keyword arguments that later
  became a label mode and document windows (multi-label with thresholds,
  windows with `"max"` and `max_windows`, a regressor, pairs), and what
  the loaded models say of themselves (`ATTRIBUTES`).
"""

import importlib
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests.helpers import served_or_refused
from tests.helpers import serves
from tests.models.previous_version import common

HERE = os.path.join(os.path.dirname(__file__), "previous_version")
GENERATIONS = sorted(
    name
    for name in os.listdir(HERE)
    if os.path.isfile(os.path.join(HERE, name, "make_files.py"))
)
# Same weights, same inputs, same kernels: only float rounding may differ.
ATOL = 1e-6


def _generation(commit):
    return importlib.import_module(
        f"tests.models.previous_version.{commit}.make_files"
    )


def _cases(table):
    """`(commit, key)` of each entry of each generation's `table`, those
    in its `SLOW_EXPORTS` marked slow."""
    cases = []
    for commit in GENERATIONS:
        generation = _generation(commit)
        for key in getattr(generation, table, ()):
            slow = table == "EXPORTS" and key in generation.SLOW_EXPORTS
            marks = [pytest.mark.slow] if slow else []
            cases.append(
                pytest.param(commit, key, id=f"{commit}-{key}", marks=marks)
            )
    return cases


_expected = {}


def _check(commit, name, outputs):
    """`outputs` of `name` equal what generation `commit` recorded."""
    if commit not in _expected:
        path = os.path.join(HERE, commit, "expected.npz")
        _expected[commit] = dict(np.load(path))
    expected = _expected[commit]
    flat = common.flatten(name, outputs)
    assert sorted(flat) == sorted(
        k for k in expected if k == name or k.startswith(f"{name}/")
    )
    for key, value in flat.items():
        if value.dtype.kind in "US":
            np.testing.assert_array_equal(value, expected[key], err_msg=key)
        else:
            np.testing.assert_allclose(
                value, expected[key], rtol=0, atol=ATOL, err_msg=key
            )


def _load(commit, stem):
    return keras.saving.load_model(os.path.join(HERE, commit, f"{stem}.keras"))


def test_every_generation_is_found():
    assert {"a68cf67", "2e700df", "be12d5f"} <= set(GENERATIONS)


@pytest.mark.parametrize("commit, stem", _cases("CLASSES"))
def test_keras_file_loads_and_gives_the_same_outputs(commit, stem):
    generation = _generation(commit)
    model = _load(commit, stem)
    assert type(model).__name__ == generation.CLASSES[stem]
    _check(commit, stem, model(generation.model_inputs(stem)))


@pytest.mark.parametrize("commit, stem", _cases("ATTRIBUTES"))
def test_keras_file_keeps_what_the_model_says_of_itself(commit, stem):
    model = _load(commit, stem)
    for name, value in _generation(commit).ATTRIBUTES[stem].items():
        assert getattr(model, name) == value, name


@pytest.mark.parametrize("commit, stem", _cases("WEIGHTS"))
def test_weights_file_loads_and_gives_the_same_outputs(commit, stem):
    generation = _generation(commit)
    model = generation.build(stem)
    model.load_weights(os.path.join(HERE, commit, f"{stem}.weights.h5"))
    _check(commit, stem, model(generation.model_inputs(stem)))


@pytest.mark.parametrize("commit, name", _cases("KEPT_EXPORTS"))
def test_earlier_savedmodel_loads_and_gives_the_same_outputs(
    commit, name, tmp_path
):
    path = common.unpack_export(os.path.join(HERE, commit), name, tmp_path)
    options = getattr(_generation(commit), "EXPORTS", {}).get(name, (0, {}))[1]
    if options.get("quantize") and not serves("int8"):
        # An int8 export answers only where oneDNN's int8 kernels run (the
        # plan now refuses to write one elsewhere): an error, not answers.
        with pytest.raises(tf.errors.OpError):
            common.serve(path)
        return
    _check(commit, name, common.serve(path))


@pytest.mark.parametrize("commit, name", _cases("EXPORTS"))
def test_export_of_a_loaded_model_answers_as_the_earlier_export(
    commit, name, tmp_path
):
    stem, options = _generation(commit).EXPORTS[name]
    path = served_or_refused(
        "int8" if options.get("quantize") else None,
        lambda: keras_bert.serving.export_saved_model(
            _load(commit, stem), common.preprocessor(), str(tmp_path), **options
        ),
    )
    if path is not None:  # else refused on this CPU, as asserted
        _check(commit, name, common.serve(path))
