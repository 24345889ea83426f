"""recipes/export.py from a Hugging Face Hub id, in an offline Hub cache.

The recipe runs in a fresh process that only has `HF_HUB_CACHE` and
`HF_HUB_OFFLINE=1` in its environment: huggingface_hub's own variables
are what points it at the cache.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.checkpoints import save_huggingface
from keras_bert.serving import rest_predict
from tests.helpers import run_export_recipe
from tests.hub_cache import add_to_hub_cache
from tests.hub_cache import hub_environment

HUB_ID = "keras-bert-tests/tiny-sentiment"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]
TEXTS = ["a good film", "bad", "good good bad"]


@pytest.fixture(scope="module")
def hub_classifier(tmp_path_factory):
    """A fine-tuned classifier as someone published it on the Hub."""
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    directory = tmp_path_factory.mktemp("published")
    save_huggingface(classifier, tokenizer, str(directory))
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text())
    config["id2label"] = {"0": "negative", "1": "positive"}
    config_path.write_text(json.dumps(config))
    cache = tmp_path_factory.mktemp("hub_cache")
    add_to_hub_cache(
        cache,
        HUB_ID,
        {name: directory / name for name in os.listdir(directory)},
        COMMIT,
    )
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=12)
    logits = classifier.predict(preprocessor(tf.constant(TEXTS)), verbose=0)
    return cache, tf.nn.softmax(logits).numpy()


def run_export(cache, export_dir, *arguments):
    return run_export_recipe(
        f"--export_dir={export_dir}",
        "--sequence_length=12",
        *arguments,
        env=hub_environment(cache),
    )


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classifier", "auto"])
def test_exports_a_hub_classifier_with_its_labels(
    hub_classifier, tmp_path, task
):
    cache, probabilities = hub_classifier
    result = run_export(
        cache,
        tmp_path / "served",
        f"--checkpoint={HUB_ID}@main",
        f"--task={task}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    response = rest_predict(
        tf.saved_model.load(str(tmp_path / "served" / "1")),
        {"instances": TEXTS},
    )
    predictions = response["predictions"]
    # id2label of the checkpoint's config.json names the classes.
    assert [p["label"] for p in predictions] == [
        ["negative", "positive"][int(np.argmax(row))] for row in probabilities
    ]
    got = np.array([p["probabilities"] for p in predictions])
    assert np.abs(got - probabilities).max() <= 1e-5


@pytest.mark.slow
def test_a_cold_cache_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_export(
        tmp_path / "empty", tmp_path / "served", f"--checkpoint={HUB_ID}"
    )
    assert result.returncode != 0
    assert f"Hugging Face Hub model {HUB_ID!r}" in result.stderr
    assert f"hf download {HUB_ID} config.json" in result.stderr


@pytest.mark.slow
def test_a_task_the_keras_file_does_not_hold_is_a_usage_error(
    hub_classifier, tmp_path
):
    cache, _ = hub_classifier
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    backbone.save(tmp_path / "backbone.keras")
    result = run_export(
        cache,
        tmp_path / "served",
        f"--model={tmp_path / 'backbone.keras'}",
        f"--checkpoint={HUB_ID}",
        "--task=classifier",
    )
    assert result.returncode != 0
    assert (
        "--task=classifier expects a BertClassifier, but "
        f"{tmp_path / 'backbone.keras'} holds a BertBackbone"
    ) in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "task, instance, outputs",
    [
        # No --task: the backbone's embeddings, as before --task existed.
        (None, "a good film", {"pooled_output", "mean_pooled_output"}),
        (
            "question_answering",
            {"question": "good?", "context": "a good film"},
            {"answer", "start", "end", "score"},
        ),
    ],
)
def test_task_chooses_the_head_served(
    hub_classifier, tmp_path, task, instance, outputs
):
    cache, _ = hub_classifier
    arguments = [f"--checkpoint={HUB_ID}"]
    if task:
        arguments.append(f"--task={task}")
    if task == "question_answering":  # windows of 12 tokens
        arguments.append(
            '--export_options={"max_query_length": 4, "doc_stride": 2}'
        )
    result = run_export(cache, tmp_path / "served", *arguments)
    assert result.returncode == 0, result.stderr[-3000:]
    response = rest_predict(
        tf.saved_model.load(str(tmp_path / "served" / "1")),
        {"instances": [instance]},
    )
    assert set(response["predictions"][0]) == outputs
