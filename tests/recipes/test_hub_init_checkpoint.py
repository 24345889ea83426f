"""Every recipe's `--init_checkpoint` takes a Hugging Face Hub id.

The recipes load through `load_task_model` / `from_checkpoint` and
`BertTokenizer.from_checkpoint`, which resolve ids; this runs the GLUE
recipe on a Hub id in an offline cache, and checks what the shared flags
say about trained preset names.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from absl import app

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning.starting_model import load_task_model
from tests.hub_cache import add_to_hub_cache
from tests.hub_cache import hub_environment
from tests.hub_cache import use_hub_cache
from tests.recipes.test_glue_recipe import FIXTURES
from tests.recipes.test_glue_recipe import checkpoint  # noqa: F401 (fixture)
from tests.recipes.test_glue_recipe import run_recipe
from tests.recipes.test_glue_recipe import tiny_flags

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
HUB_ID = "keras-bert-tests/tiny-glue"
COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


@pytest.fixture
def offline_hub(monkeypatch, tmp_path, checkpoint):  # noqa: F811
    cache = tmp_path / "hub_cache"
    add_to_hub_cache(
        cache,
        HUB_ID,
        {
            name: os.path.join(checkpoint, name)
            for name in os.listdir(checkpoint)
        },
        COMMIT,
    )
    use_hub_cache(monkeypatch, cache)
    return checkpoint, cache


def test_load_task_model_by_id_equals_the_local_directory(offline_hub):
    local_dir, _ = offline_hub
    by_id, tokenizer = load_task_model(
        keras_bert.BertClassifier, init_checkpoint=HUB_ID, num_classes=2
    )
    local, local_tokenizer = load_task_model(
        keras_bert.BertClassifier, init_checkpoint=local_dir, num_classes=2
    )
    assert tokenizer.get_vocabulary() == local_tokenizer.get_vocabulary()
    for got, expected in zip(by_id.backbone.weights, local.backbone.weights):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_glue_recipe_fine_tunes_from_a_hub_id(offline_hub, tmp_path):
    flag_values = tiny_flags(HUB_ID, tmp_path / "run", epochs=1)
    results = run_recipe(task="sst2", data_dir=FIXTURES, **flag_values)
    assert results["config"]["init_checkpoint"] == HUB_ID
    assert "accuracy" in results["metrics"]["validation"]


def test_a_trained_preset_is_no_random_preset():
    values = {
        "init_checkpoint": None,
        "preset": "bert_base_en_uncased",
        "vocabulary": "vocab.txt",
    }
    with pytest.raises(
        app.UsageError,
        match="--preset=bert_base_en_uncased names trained weights; "
        "--preset builds random ones. Pass "
        "--init_checkpoint=bert_base_en_uncased",
    ):
        recipe_flags.check_flags(values, positive=())
    with pytest.raises(
        ValueError, match="init_checkpoint='bert_base_en_uncased'"
    ):
        load_task_model(
            keras_bert.BertClassifier,
            preset="bert_base_en_uncased",
            vocabulary="vocab.txt",
            num_classes=2,
        )


@pytest.mark.slow
def test_convert_checkpoint_reads_a_hub_id(offline_hub, tmp_path):
    _, cache = offline_hub
    output = tmp_path / "converted"
    subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "recipes", "convert_checkpoint.py"),
            f"--input={HUB_ID}@main",
            f"--output={output}",
            "--to=huggingface",
        ],
        check=True,
        capture_output=True,
        timeout=300,
        env=hub_environment(cache),
    )
    conversion = json.loads((output / "conversion.json").read_text())
    assert conversion["input_format"] == "huggingface"
    assert "vocab.txt" in conversion["files"]
