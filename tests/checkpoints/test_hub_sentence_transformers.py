"""The Hub resolver fetches a sentence-transformers repo's embedding files.

`modules.json`, `sentence_bert_config.json` and the Pooling module's
`config.json` come with the config (offline, from a cache laid out as
huggingface_hub lays it out: `tests/hub_cache.py`), so
`BertTextEmbedder.from_checkpoint("org/name")` pools as the repo says; a
repo without them (the Hub said 404) loads with the stated defaults.
"""

import hashlib
import logging
import os

import numpy as np
import pytest

from keras_bert import BertTextEmbedder
from keras_bert.checkpoints.hub import resolve_checkpoint
from tests.hub_cache import add_to_hub_cache
from tests.hub_cache import use_hub_cache
from tests.models.test_bert_text_embedder import pooling_config
from tests.models.test_bert_text_embedder import save_checkpoint
from tests.models.test_bert_text_embedder import st_modules

COMMIT = hashlib.sha1(b"keras-bert sentence-transformers").hexdigest()
ST_FILES = (
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
)
MODEL_FILES = ("config.json", "model.safetensors", "vocab.txt")


@pytest.fixture
def tiny_repos(tmp_path, monkeypatch):
    """`org/tiny-st` (cls pooling, normalised, 12 tokens) and
    `org/tiny-plain` (no sentence-transformers files), offline."""
    cache = tmp_path / "cache"
    source = tmp_path / "source"
    save_checkpoint(source, st_modules(True), pooling_config("cls"), 12)
    add_to_hub_cache(
        cache,
        "org/tiny-st",
        {n: os.path.join(source, n) for n in MODEL_FILES + ST_FILES},
        COMMIT,
    )
    add_to_hub_cache(
        cache,
        "org/tiny-plain",
        {n: os.path.join(source, n) for n in MODEL_FILES},
        COMMIT,
        absent=ST_FILES[:2] + ("tokenizer_config.json", "tokenizer.json"),
    )
    use_hub_cache(monkeypatch, cache)
    return cache


def test_resolver_fetches_the_sentence_transformers_files(tiny_repos):
    directory = resolve_checkpoint("org/tiny-st", tokenizer=False)
    for name in ST_FILES:
        assert os.path.exists(os.path.join(directory, name)), name


def test_embedder_by_hub_id_pools_as_the_repo_says(tiny_repos):
    model = BertTextEmbedder.from_checkpoint("org/tiny-st")
    assert (model.pooling, model.normalize) == ("cls", True)
    assert model.preprocessor.sequence_length == 12
    architecture_only = BertTextEmbedder.from_preset(
        "hf://org/tiny-st", load_weights=False
    )
    assert architecture_only.pooling == "cls"


def test_repo_without_the_files_gets_the_defaults_and_a_warning(
    tiny_repos, caplog
):
    with caplog.at_level(logging.WARNING):
        model = BertTextEmbedder.from_checkpoint("org/tiny-plain")
    assert (model.pooling, model.normalize) == ("mean", False)
    assert "no sentence-transformers modules.json" in caplog.text


@pytest.mark.slow
def test_all_minilm_preset_by_name_is_mean_normalised_256(
    tmp_path, monkeypatch, minilm_dir
):
    names = MODEL_FILES + ("tokenizer_config.json", "tokenizer.json")
    add_to_hub_cache(
        tmp_path,
        "sentence-transformers/all-MiniLM-L6-v2",
        {n: os.path.join(minilm_dir, n) for n in names + ST_FILES},
        COMMIT,
    )
    use_hub_cache(monkeypatch, tmp_path)
    by_name = BertTextEmbedder.from_preset("all_minilm_l6_v2_en")
    assert (by_name.pooling, by_name.normalize) == ("mean", True)
    assert by_name.preprocessor.sequence_length == 256
    local = BertTextEmbedder.from_checkpoint(minilm_dir)
    texts = ["A man plays a guitar.", "", "Deux chats dorment."]
    np.testing.assert_array_equal(
        by_name.predict(texts, verbose=0), local.predict(texts, verbose=0)
    )
