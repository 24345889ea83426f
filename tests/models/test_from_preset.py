"""`from_preset` on every model class, and the preprocessor loading attaches.

Offline throughout: trained preset names and `hf://` ids resolve in a
Hugging Face Hub cache written in huggingface_hub's own layout
(`tests/hub_cache.py`) with `HF_HUB_OFFLINE=1`. The cached models are tiny
stand-ins (hidden 8) under the real ids: what is tested is how names
resolve and what gets attached; the architecture comes from the cached
`config.json`, as it would from the real one.
"""

import hashlib
import logging
import os
import subprocess
import sys

import huggingface_hub
import keras
import numpy as np
import pytest
from absl import app

import keras_bert
from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert import BertMaskedLM
from keras_bert import BertQuestionAnswerer
from keras_bert import BertTokenClassifier
from keras_bert.checkpoints import save_huggingface
from keras_bert.cli.recipe_flags import check_architecture_preset
from keras_bert.models.presets import preset_hub_id
from tests.helpers import tiny_backbone_config
from tests.hub_cache import add_to_hub_cache
from tests.hub_cache import use_hub_cache

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCABULARY += ["a", "great", "movie", "dull", "what", "film", "##s"]
CONFIG = tiny_backbone_config(vocabulary_size=len(VOCABULARY))
PRESET = "bert_tiny_en_uncased"
KERAS_HUB_ID = "keras/bert_tiny_en_uncased"  # keras-hub's preset on the Hub
COMMIT = hashlib.sha1(b"keras-bert from_preset test").hexdigest()
TASKS = [
    BertClassifier,
    BertMaskedLM,
    BertQuestionAnswerer,
    BertTokenClassifier,
]
# What each task's attached preprocessor reads: the documented defaults,
# capped by the tiny model's 16 positions.
DEFAULT_LENGTHS = {
    BertClassifier: 128,
    BertMaskedLM: 128,
    BertQuestionAnswerer: 384,
    BertTokenClassifier: 128,
}
HEAD_ARGUMENTS = {BertClassifier: {"num_classes": 2}}
HEAD_ARGUMENTS[BertTokenClassifier] = {"num_classes": 3}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _snapshot_files(directory):
    return {
        os.path.relpath(os.path.join(root, name), directory): os.path.join(
            root, name
        )
        for root, _, names in os.walk(directory)
        for name in names
    }


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny backbone saved as a Hugging Face directory and as a keras-hub
    preset, both in a Hub cache, under the preset's id and keras/."""
    root = tmp_path_factory.mktemp("presets")
    backbone = BertBackbone(**CONFIG, activation="gelu_approximate")
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    huggingface = str(root / "huggingface")
    save_huggingface(backbone, tokenizer, huggingface)
    keras_hub_preset = str(root / "keras_hub")
    pytest.importorskip("keras_hub")
    keras_bert.checkpoints.save_keras_hub_preset(
        backbone, tokenizer, keras_hub_preset
    )
    cache = str(root / "hub_cache")
    for repo_id, directory in (
        (preset_hub_id(PRESET), huggingface),
        (KERAS_HUB_ID, keras_hub_preset),
    ):
        add_to_hub_cache(cache, repo_id, _snapshot_files(directory), COMMIT)
    return {
        "backbone": backbone,
        "huggingface": huggingface,
        "keras_hub": keras_hub_preset,
        "cache": cache,
    }


@pytest.fixture
def offline(monkeypatch, saved):
    use_hub_cache(monkeypatch, saved["cache"])
    return saved


@pytest.fixture
def fetched(monkeypatch):
    """The file names huggingface_hub is asked for."""
    names = []
    download = huggingface_hub.hf_hub_download

    def recording(repo_id, filename, **kwargs):
        names.append(filename)
        return download(repo_id, filename, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", recording)
    return names


def _architecture(backbone):
    return {k: v for k, v in backbone.get_config().items() if k != "name"}


def _same_weights(model, backbone):
    return all(
        np.array_equal(got.numpy(), expected.numpy())
        for got, expected in zip(model.backbone.weights, backbone.weights)
    )


def test_every_task_model_from_a_trained_preset_name(offline):
    for task in TASKS:
        model = task.from_preset(PRESET, **HEAD_ARGUMENTS.get(task, {}))
        assert type(model) is task
        assert _same_weights(model, offline["backbone"])
        preprocessor = model.preprocessor
        assert preprocessor.sequence_length == min(DEFAULT_LENGTHS[task], 16)
        assert preprocessor.tokenizer.lowercase  # the checkpoint's casing
        assert preprocessor.tokenizer.get_vocabulary() == VOCABULARY
    backbone = BertBackbone.from_preset(PRESET)
    by_id = BertBackbone.from_preset(f"hf://{preset_hub_id(PRESET)}")
    assert _architecture(backbone) == _architecture(by_id)
    assert not hasattr(backbone, "preprocessor")  # ids in, as keras-hub's


def test_load_weights_false_fetches_config_and_vocabulary_only(
    offline, fetched
):
    model = BertClassifier.from_preset(
        PRESET, load_weights=False, num_classes=2, sequence_length=12
    )
    assert "model.safetensors" not in fetched
    assert fetched[0] == "config.json" and "vocab.txt" in fetched
    trained = BertClassifier.from_preset(PRESET, num_classes=2)
    assert _architecture(model.backbone) == _architecture(trained.backbone)
    assert not _same_weights(model, offline["backbone"])  # random
    assert model.preprocessor.sequence_length == 12


def test_a_keras_hub_preset_on_the_hugging_face_hub(offline, fetched):
    name = f"hf://{KERAS_HUB_ID}"
    model = BertClassifier.from_preset(name, num_classes=2)
    assert _same_weights(model, offline["backbone"])
    assert model.backbone.activation == "gelu_approximate"  # keras-hub's
    assert model.preprocessor.tokenizer.get_vocabulary() == VOCABULARY
    assert "model.weights.h5" in fetched
    assert "assets/tokenizer/vocabulary.txt" in fetched
    fetched.clear()
    random_weights = BertTokenClassifier.from_preset(
        name, load_weights=False, num_classes=3
    )
    assert "model.weights.h5" not in fetched
    assert not _same_weights(random_weights, offline["backbone"])
    assert random_weights.preprocessor.sequence_length == 16
    assert BertBackbone.from_checkpoint(name).count_params() == (
        offline["backbone"].count_params()
    )


def test_directories_load_as_from_checkpoint_does(offline):
    for source in ("huggingface", "keras_hub"):
        model = BertMaskedLM.from_preset(offline[source])
        assert _same_weights(model, offline["backbone"])
        assert model.preprocessor is not None


def test_architecture_names_keep_building_random_weights(tmp_path):
    small = dict(num_layers=1, hidden_dim=8, intermediate_dim=16, num_heads=2)
    for task in TASKS:
        model = task.from_preset(
            "bert_tiny", **small, **HEAD_ARGUMENTS.get(task, {})
        )
        assert model.preprocessor is None  # an architecture: no vocabulary
        assert model.backbone.vocabulary_size == 30522
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(VOCABULARY) + "\n")
    model = BertQuestionAnswerer.from_preset(
        "bert_tiny", vocabulary=str(vocab_file), **small
    )
    assert model.backbone.vocabulary_size == len(VOCABULARY)  # fits it
    assert model.preprocessor.sequence_length == 384
    assert model.preprocessor.tokenizer.lowercase
    cased = BertClassifier.from_preset(
        "bert_tiny",
        vocabulary=VOCABULARY,
        lowercase=False,
        sequence_length=32,
        num_classes=2,
        **small,
    )
    assert not cased.preprocessor.tokenizer.lowercase
    assert cased.preprocessor.sequence_length == 32
    with pytest.raises(ValueError, match="`sequence_length` has nothing"):
        BertClassifier.from_preset(
            "bert_tiny", num_classes=2, sequence_length=8
        )
    with pytest.raises(ValueError, match="no preprocessor"):
        BertBackbone.from_preset("bert_tiny", vocabulary=VOCABULARY)


def test_from_checkpoint_attaches_the_checkpoints_tokenizer(saved, caplog):
    directory = saved["huggingface"]
    model = BertQuestionAnswerer.from_checkpoint(directory)
    assert model.preprocessor.sequence_length == 16  # 384, capped
    assert model.preprocessor.tokenizer.get_vocabulary() == VOCABULARY
    model = BertClassifier.from_checkpoint(
        directory, num_classes=2, sequence_length=8
    )
    assert model.preprocessor.sequence_length == 8
    assert (
        BertClassifier.from_checkpoint(
            directory, num_classes=2, preprocessor=None
        ).preprocessor
        is None
    )
    own = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY, lowercase=False), 6
    )
    model = BertMaskedLM.from_checkpoint(directory, preprocessor=own)
    assert model.preprocessor is own
    with pytest.raises(ValueError, match="not both"):
        BertMaskedLM.from_checkpoint(
            directory, preprocessor=own, sequence_length=8
        )
    with pytest.raises(ValueError, match="exceeds the model's 16 positions"):
        BertMaskedLM.from_checkpoint(directory, sequence_length=32)
    with pytest.raises(ValueError, match="BertBackbone has no preprocessor"):
        BertBackbone.from_checkpoint(directory, sequence_length=8)


def test_a_checkpoint_without_a_vocabulary_gets_no_preprocessor(
    saved, tmp_path, caplog
):
    save_huggingface(saved["backbone"], None, str(tmp_path))  # no vocab.txt
    with caplog.at_level(logging.WARNING):
        model = BertClassifier.from_checkpoint(str(tmp_path), num_classes=2)
    assert model.preprocessor is None
    assert "no preprocessor attached" in caplog.text
    assert "vocab.txt" in caplog.text


def test_a_checkpoint_with_a_bpe_tokenizer_json_gets_no_preprocessor(
    saved, tmp_path, caplog
):
    """Its weights still load: only the tokenizer is not BERT's."""
    save_huggingface(saved["backbone"], None, str(tmp_path))  # no vocab.txt
    keras_bert.files.write_json(
        str(tmp_path / "tokenizer.json"),
        {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}},
    )
    with caplog.at_level(logging.WARNING):
        model = BertClassifier.from_checkpoint(str(tmp_path), num_classes=2)
    assert model.preprocessor is None
    assert "no preprocessor attached" in caplog.text
    assert "holds a BPE tokenizer, not a WordPiece one" in caplog.text


def test_the_attached_preprocessor_survives_keras_saving(offline, tmp_path):
    model = BertTokenClassifier.from_preset(
        PRESET, num_classes=3, sequence_length=10
    )
    path = str(tmp_path / "ner.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert restored.preprocessor.sequence_length == 10
    assert restored.preprocessor.tokenizer.lowercase
    # The config holds the vocabulary and every tokenizer setting.
    assert restored.preprocessor.get_config() == model.preprocessor.get_config()


def test_bad_names_say_what_to_pass():
    with pytest.raises(
        ValueError,
        match="Unknown preset 'bert_base_en_uncase'. Did you "
        "mean 'bert_base_en_uncased'?",
    ):
        BertClassifier.from_preset("bert_base_en_uncase", num_classes=2)
    with pytest.raises(FileNotFoundError, match="Did you mean 'bert_tiny'"):
        BertBackbone.from_checkpoint("bert_tine")  # no such directory
    with pytest.raises(ValueError, match=r"keras\.models\.load_model"):
        BertClassifier.from_preset("clf.keras", load_weights=False)
    with pytest.raises(ValueError, match="architecture is fixed"):
        BertBackbone.from_preset(PRESET, num_layers=1)
    with pytest.raises(ValueError, match="BertClassifier.from_preset received"):
        BertClassifier.from_preset(PRESET, num_classes=2, scale=2.0)


def test_pretrain_preset_flag_names_init_checkpoint():
    with pytest.raises(
        app.UsageError,
        match="--init_checkpoint=bert_base_en_uncased to start from its "
        "weights",
    ):
        check_architecture_preset("bert_base_en_uncased")
    with pytest.raises(app.UsageError, match="Did you mean 'bert_tiny'"):
        check_architecture_preset("bert_tine")
    check_architecture_preset("bert_tiny")


@pytest.mark.slow
def test_pretrain_recipe_refuses_a_trained_preset(tmp_path):
    process = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "recipes", "pretrain.py"),
            f"--input_file={tmp_path}/none.tfrecord",
            f"--model_dir={tmp_path}/run",
            f"--vocab_file={tmp_path}/vocab.txt",
            "--preset=bert_base_en_uncased",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    assert process.returncode == 1
    assert "--init_checkpoint=bert_base_en_uncased" in process.stderr
    assert not os.path.exists(tmp_path / "run")
