"""The examples in the sentence-embedding docstrings run as written."""

import inspect
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.checkpoints import sentence_transformers_files
from keras_bert.layers import embedding_similarity
from keras_bert.serving import text_embedder

DOCUMENTED = [
    keras_bert.layers.SentencePooling,
    embedding_similarity.similarity,
    embedding_similarity.top_k_search,
    sentence_transformers_files.sentence_transformers_files,
    keras_bert.BertTextEmbedder.encode,
    pytest.param(
        sentence_transformers_files.read_sentence_transformers_config,
        marks=pytest.mark.slow,  # needs the real MiniLM package
    ),
    pytest.param(keras_bert.BertTextEmbedder, marks=pytest.mark.slow),
    pytest.param(text_embedder.text_embedder_endpoints, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("obj", DOCUMENTED, ids=lambda o: o.__qualname__)
def test_example_runs(obj, tmp_path, monkeypatch):
    match = re.search(r"```python\n(.*?)```", inspect.getdoc(obj), re.S)
    assert match, f"{obj.__qualname__} has no example"
    monkeypatch.chdir(tmp_path)
    namespace = {"keras_bert": keras_bert, "np": np, "tf": tf, "keras": keras}
    namespace.update(vars(inspect.getmodule(obj)))
    exec(match.group(1), namespace)
