"""Hugging Face Hub ids as checkpoint paths, resolved by `huggingface_hub`.

Wherever keras_bert takes a checkpoint directory it also takes a model on
the Hugging Face Hub:

- an `org/name` id: `google-bert/bert-base-uncased`;
- the same with the `hf://` scheme: `hf://google-bert/bert-base-uncased`
  (which also takes a one-part legacy id, `hf://bert-base-uncased`);
- either with `@revision`, a branch, tag or commit hash:
  `google-bert/bert-base-uncased@main`;
- a trained preset name, `bert_base_en_uncased` (its Hub id; see
  `keras_bert.models.presets`).

A repo may hold a `transformers` model (`config.json` with
`model.safetensors`, `vocab.txt` or `tokenizer.json`) or a keras-hub
preset, as keras-hub's own `from_preset("hf://keras/bert_base_en_uncased")`
reads them (`config.json` that is a Keras config, `model.weights.h5`,
`tokenizer.json`, `assets/tokenizer/vocabulary.txt`; see
`keras_bert.checkpoints.keras_hub_files`): `config.json` tells which.

`resolve_checkpoint` turns such a name into the snapshot directory of the
model in `huggingface_hub`'s cache, downloading only the files keras_bert
reads (`keras_bert.checkpoints.hub_download` fetches them). The rest is
`huggingface_hub`'s: the cache's location (`HF_HOME`, `HF_HUB_CACHE`),
offline mode (`HF_HUB_OFFLINE=1`), the token (`hf auth login` or
`HF_TOKEN`) and the endpoint. It reads these variables when it is first
imported (Keras imports it), so set them before Python starts. Online, the
Hub is asked once, without retries, whether it answers: when it does not
(no network), the files come from the cache only, and a model that is not
there fails at once, instead of after huggingface_hub's retries of every
file, seconds apart.

A path that exists, or that has another URL scheme (`gs://`, `ram://`,
`kaggle://`, ...), is never taken for a Hub id.
"""

import os
import re

from absl import logging

from keras_bert import files
from keras_bert.checkpoints.hub_download import CASING_FILES
from keras_bert.checkpoints.hub_download import CONFIG_FILE
from keras_bert.checkpoints.hub_download import KERAS_HUB_TOKENIZER_FILES
from keras_bert.checkpoints.hub_download import KERAS_HUB_WEIGHT_FILES
from keras_bert.checkpoints.hub_download import VOCABULARY_FILE
from keras_bert.checkpoints.hub_download import HubDownload
from keras_bert.checkpoints.keras_hub_files import is_keras_hub_preset
from keras_bert.models.presets import BACKBONE_PRESETS
from keras_bert.models.presets import PRESETS
from keras_bert.models.presets import preset_hub_id
from keras_bert.models.presets import suggest_preset

HUB_SCHEME = "hf://"
# An `org/name` id without a scheme; `hf://` also takes a one-part name.
# huggingface_hub validates ids fully; these only tell ids from paths.
_PART = r"[A-Za-z0-9][\w.-]*"
_ORG_NAME = re.compile(rf"{_PART}/{_PART}")
_EXPLICIT_NAME = re.compile(rf"({_PART}/)?{_PART}")
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def parse_hub_id(path):
    """The `(repo_id, revision)` that `path` names on the Hub, or `None`.

    `None` for a path that exists (a directory, a file or a Google
    checkpoint prefix), has a URL scheme other than `hf://`, or does not
    look like an `org/name` id. `revision` is `None` unless `@revision`
    was given.

    Args:
        path: str or `os.PathLike`.

    Raises:
        ValueError: for an `hf://` path that is no Hub id.

    Example:
    ```python
    parse_hub_id("hf://google-bert/bert-base-uncased@main")
    # ("google-bert/bert-base-uncased", "main")
    parse_hub_id("bert_tiny_en_uncased")
    # ("google/bert_uncased_L-2_H-128_A-2", None)
    parse_hub_id("gs://bucket/bert")  # None
    ```
    """
    text = os.fspath(path)
    if not isinstance(text, str):
        return None
    explicit = text.startswith(HUB_SCHEME)
    if explicit:
        body = text[len(HUB_SCHEME) :]
    elif _URL_SCHEME.match(text) or _is_local(text):
        return None
    elif preset_hub_id(text):
        return preset_hub_id(text), None
    else:
        body = text
    repo_id, at, revision = body.partition("@")
    pattern = _EXPLICIT_NAME if explicit else _ORG_NAME
    if pattern.fullmatch(repo_id) and (revision or not at):
        return repo_id, revision or None
    if explicit:
        raise ValueError(
            f"{text!r} is not a Hugging Face Hub model: write "
            "hf://ORG/NAME, optionally with @REVISION (a branch, tag or "
            "commit), e.g. hf://google-bert/bert-base-uncased@main."
        )
    return None


def resolve_checkpoint(path, weights=True, tokenizer=True, config=False):
    """The local checkpoint directory that `path` names.

    A Hub id (see the module docstring) is downloaded into
    `huggingface_hub`'s cache, or found there, and its snapshot directory
    returned; every other path is returned unchanged. Only the files
    keras_bert reads are fetched, all from one commit: `config.json` first
    (it tells a `transformers` repo from a keras-hub preset); with
    `weights`, the first of `model.safetensors`, a sharded safetensors
    index with its shards, `pytorch_model.bin` (or its index) the repo has
    (a keras-hub preset: `model.weights.h5`, and `task.json`,
    `task.weights.h5`, `metadata.json` where it has them); with
    `tokenizer`, `vocab.txt` and, where the repo has them,
    `tokenizer_config.json` and `tokenizer.json` (the casing, and the
    vocabulary of a repo without `vocab.txt`, as `transformers` 5 saves
    it; a keras-hub preset: `tokenizer.json` and
    `assets/tokenizer/vocabulary.txt`); `vocab.txt` is required only of a
    repo without `tokenizer.json`. With
    `weights` or `config`, a sentence-transformers repo's `modules.json`,
    `sentence_bert_config.json` and the modules' own `config.json` files
    (e.g. `1_Pooling/config.json`), where it has them: how
    `BertTextEmbedder` pools (see
    `keras_bert.checkpoints.sentence_transformers_files`).

    Args:
        path: str or `os.PathLike`. A checkpoint directory or Hub id.
        weights: bool. Fetch the config and weights. Defaults to `True`.
        tokenizer: bool. Fetch the tokenizer's files. Defaults to `True`.
        config: bool. Require `config.json` even without `weights` (to
            build the architecture with random weights). Defaults to
            `False`: without `weights` it is fetched only if the repo has
            it.

    Returns:
        str: the snapshot directory for a Hub id, else `path` unchanged.

    Raises:
        FileNotFoundError: the model, revision or a file it needs is not on
            the Hub, or, offline (or unreachable), not in the cache; the
            message names the id, revision and files and how to fetch them.
        PermissionError: the model is gated and the user has no access.

    Example:
    ```python
    directory = resolve_checkpoint("google-bert/bert-base-uncased")
    resolve_checkpoint("gs://bucket/bert")  # "gs://bucket/bert"
    ```
    """
    parsed = parse_hub_id(path)
    if parsed is None:
        return path
    if not (weights or tokenizer or config):
        raise ValueError(
            "resolve_checkpoint needs something to fetch. Received: "
            "weights=False, tokenizer=False, config=False"
        )
    text = os.fspath(path)
    guessed = not text.startswith(HUB_SCHEME) and not preset_hub_id(text)
    hub = HubDownload(text, *parsed, guessed=guessed)
    config_path = hub.fetch(CONFIG_FILE, optional=not (weights or config))
    fetched = [config_path]
    if config_path and is_keras_hub_preset(os.path.dirname(config_path)):
        hub.needed = [CONFIG_FILE] + [
            name
            for required, optional in (
                KERAS_HUB_WEIGHT_FILES,
                KERAS_HUB_TOKENIZER_FILES,
            )
            for name in required + optional
        ]
        groups = [weights and KERAS_HUB_WEIGHT_FILES]
        groups.append(tokenizer and KERAS_HUB_TOKENIZER_FILES)
        for group in groups:
            if group:
                required, optional = group
                fetched += [hub.fetch(name) for name in required]
                fetched += [hub.fetch(n, optional=True) for n in optional]
    else:
        if config_path and (weights or config):  # a model is built
            fetched += hub.fetch_sentence_transformers_files()
        if weights:
            fetched += hub.fetch_weights()
        if tokenizer:
            vocabulary = hub.fetch(VOCABULARY_FILE, optional=True)
            casing = [hub.fetch(n, optional=True) for n in CASING_FILES]
            if vocabulary is None and casing[-1] is None:
                # No tokenizer.json to read the vocabulary from either: the
                # required fetch says why vocab.txt is missing.
                vocabulary = hub.fetch(VOCABULARY_FILE)
            fetched += [vocabulary] + casing
    local = [f for f in fetched if f]
    # The first file is config.json, vocab.txt or tokenizer.json: each at
    # the top of the snapshot.
    directory = os.path.dirname(local[0])
    logging.info(
        "Hugging Face Hub model %s at commit %s: %s (%s)",
        hub.repo_id,
        hub.commit,
        directory,
        ", ".join(os.path.relpath(f, directory) for f in local),
    )
    return directory


def preset_hint(path):
    """A sentence for errors about a missing `path` that is a preset name
    without weights or a one-part Hub name (with the closest preset name,
    if one is close); else `""`.

    Example:
    ```python
    preset_hint("bert_tiny").startswith(" 'bert_tiny' is an architecture")
    # True
    preset_hint("runs/bert")  # ""
    ```
    """
    path = os.fspath(path)
    if path in BACKBONE_PRESETS:
        trained = [
            name
            for name, preset in PRESETS.items()
            if preset["hub_id"] and preset["config"] == PRESETS[path]["config"]
        ]
        return (
            f" {path!r} is an architecture-only preset (random weights: "
            "`BertBackbone.from_preset`); for trained weights pass one of "
            f"{trained or sorted(n for n in PRESETS if PRESETS[n]['hub_id'])}."
        )
    if re.fullmatch(_PART, path):
        return (
            f"{suggest_preset(path)} For a Hub model with a one-part id "
            f"write hf://{path}."
        )
    return ""


def _is_local(path):
    # A Google checkpoint prefix (`dir/bert_model.ckpt`) is no file itself.
    return files.exists(path) or files.exists(path + ".index")
