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
reads. The rest is `huggingface_hub`'s: the cache's location (`HF_HOME`,
`HF_HUB_CACHE`), offline mode (`HF_HUB_OFFLINE=1`), the token (`hf auth
login` or `HF_TOKEN`) and the endpoint. It reads these variables when it is
first imported (Keras imports it), so set them before Python starts.
Online, the Hub is asked once, without retries, whether it answers: when
it does not (no network), the files come from the cache only, and a
model that is not there fails at once, instead of after huggingface_hub's
retries of every file, seconds apart.

A path that exists, or that has another URL scheme (`gs://`, `ram://`,
`kaggle://`, ...), is never taken for a Hub id.
"""

import os
import re

from absl import logging

from keras_bert import files
from keras_bert.checkpoints.keras_hub_files import METADATA_FILE
from keras_bert.checkpoints.keras_hub_files import TASK_FILE
from keras_bert.checkpoints.keras_hub_files import TASK_WEIGHTS_FILE
from keras_bert.checkpoints.keras_hub_files import TOKENIZER_FILE
from keras_bert.checkpoints.keras_hub_files import (
    VOCABULARY_FILE as KERAS_HUB_VOCABULARY_FILE,
)
from keras_bert.checkpoints.keras_hub_files import WEIGHTS_FILE
from keras_bert.checkpoints.keras_hub_files import is_keras_hub_preset
from keras_bert.checkpoints.sentence_transformers_files import MODULES_FILE
from keras_bert.checkpoints.sentence_transformers_files import (
    SENTENCE_BERT_CONFIG_FILE,
)
from keras_bert.checkpoints.sentence_transformers_files import (
    sentence_transformers_files,
)
from keras_bert.models.presets import BACKBONE_PRESETS
from keras_bert.models.presets import PRESETS
from keras_bert.models.presets import preset_hub_id
from keras_bert.models.presets import suggest_preset
from keras_bert.version import __version__

HUB_SCHEME = "hf://"
# Seconds `resolve_checkpoint` waits for the Hub to answer at all before
# reading the cache only (`HF_HUB_ETAG_TIMEOUT`, where set, instead).
REACHABILITY_TIMEOUT_S = 3
CONFIG_FILE = "config.json"
# The weights `read_huggingface_checkpoint` reads, in the order it prefers
# them: safetensors need no PyTorch; an index names the shards.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
VOCABULARY_FILE = "vocab.txt"
# Where `vocabulary.read_casing` finds the casing, in repos that have them;
# the last, tokenizer.json, also holds the vocabulary when vocab.txt is
# missing.
CASING_FILES = ("tokenizer_config.json", "tokenizer.json")
# A keras-hub preset's files (required, optional): its weights, with a
# task's head where it has one, and its tokenizer.
KERAS_HUB_WEIGHT_FILES = (
    (WEIGHTS_FILE,),
    (TASK_FILE, TASK_WEIGHTS_FILE, METADATA_FILE),
)
KERAS_HUB_TOKENIZER_FILES = ((TOKENIZER_FILE,), (KERAS_HUB_VOCABULARY_FILE,))
# A sentence-transformers model's embedding settings (pooling,
# normalisation, max_seq_length), fetched with the config where the repo
# has them; `modules.json` then names each module's own config file.
SENTENCE_TRANSFORMERS_FILES = (MODULES_FILE, SENTENCE_BERT_CONFIG_FILE)

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
    hub = _HubModel(os.fspath(path), *parsed)
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


class _HubModel:
    """Fetches one model's files through `huggingface_hub`, from the
    commit its first file came from, and words its errors."""

    def __init__(self, path, repo_id, revision):
        try:
            import huggingface_hub
            from huggingface_hub import constants
            from huggingface_hub import errors
        except ImportError as error:
            raise ImportError(
                f"{path!r} names a Hugging Face Hub model, which keras_bert "
                "loads with huggingface_hub: `pip install huggingface-hub`."
            ) from error
        self.hf = huggingface_hub
        self.constants = constants
        self.errors = errors
        self.path = path
        self.repo_id = repo_id
        self.revision = revision
        self.commit = None
        # Why the Hub cannot be reached (`None`: it can, or not asked yet).
        self.unreachable = None
        self._asked = False
        # What a model and its tokenizer read: one command fetches both.
        self.needed = [CONFIG_FILE, WEIGHT_FILES[0], VOCABULARY_FILE]
        self.needed += CASING_FILES

    def fetch(self, filename, optional=False):
        """The local path of `filename`; `None` if `optional` and the repo
        has no such file (or, offline, the cache does not hold it)."""
        found, local, error = self._try(filename)
        if found:
            return local
        if optional:
            if error is not None:
                logging.info(
                    "%s is not in the Hub cache and cannot be fetched now "
                    "(%s); going on without it.",
                    self._described(filename),
                    error,
                )
            return None
        if error is not None:
            raise self._not_cached(filename, error)
        raise FileNotFoundError(
            f"The Hugging Face Hub model {self._described()} has no "
            f"{filename}, which keras_bert reads: "
            + {
                CONFIG_FILE: "it is not a transformers (Hugging Face) "
                "checkpoint. keras_bert loads BERT models saved by "
                "transformers (config.json and model.safetensors).",
                VOCABULARY_FILE: "BertTokenizer reads the WordPiece "
                "vocabulary from vocab.txt, or else from tokenizer.json, "
                "and the repo has neither; pass a vocabulary yourself "
                "(`BertTokenizer(vocabulary=...)`).",
            }.get(filename, "the repo is incomplete.")
        )

    def fetch_sentence_transformers_files(self):
        """The local paths of the sentence-transformers files the repo has
        (none for a plain `transformers` repo); those found join the files
        an offline error tells to download."""
        # tokenizer_config.json: where version 6 keeps max_seq_length.
        names = list(SENTENCE_TRANSFORMERS_FILES) + [CASING_FILES[0]]
        modules_path = self.fetch(MODULES_FILE, optional=True)
        if modules_path is None:
            return []
        names += sentence_transformers_files(files.read_json(modules_path))
        found = {MODULES_FILE: modules_path}
        for name in names[1:]:
            found[name] = self.fetch(name, optional=True)
        found = {name: path for name, path in found.items() if path}
        self.needed += list(found)
        return list(found.values())

    def fetch_weights(self):
        """The local paths of the weights (an index and its shards)."""
        not_cached = None
        for filename in WEIGHT_FILES:
            found, local, error = self._try(filename)
            if found and filename.endswith(".index.json"):
                shards = files.read_json(local)["weight_map"].values()
                return [local] + [self.fetch(s) for s in sorted(set(shards))]
            if found:
                return [local]
            if error is not None and not_cached is None:
                not_cached = (filename, error)
        if not_cached is not None:
            raise self._not_cached(*not_cached)
        raise FileNotFoundError(
            f"The Hugging Face Hub model {self._described()} has no weights "
            f"keras_bert reads: none of {', '.join(WEIGHT_FILES)}. "
            "TensorFlow (tf_model.h5) and Flax weights are not read: load "
            "the model in transformers and `save_pretrained` it, which "
            "writes model.safetensors, then pass that directory."
        )

    def _try(self, filename):
        """`(found, local_path, error)`; `error` is set when the file may
        exist but is neither cached nor downloadable now."""
        hf, errors = self.hf, self.errors
        revision = self.commit or self.revision
        if not self._asked:
            self._asked = True
            self.unreachable = self._unreachable(filename)
        try:
            local = hf.hf_hub_download(
                self.repo_id,
                filename,
                revision=revision,
                library_name="keras-bert",
                library_version=__version__,
                # Unreachable: the cache only, at once, instead of
                # huggingface_hub's retries (seconds apart) per file.
                local_files_only=self.unreachable is not None,
            )
        except errors.LocalEntryNotFoundError as error:
            cached = hf.try_to_load_from_cache(
                self.repo_id, filename, revision=revision
            )
            if cached is hf._CACHED_NO_EXIST:  # the Hub said: no such file
                return False, None, None
            return False, None, error
        except errors.EntryNotFoundError:  # online: no such file
            return False, None, None
        except errors.GatedRepoError as error:
            raise PermissionError(
                f"The Hugging Face Hub model {self.repo_id!r} is gated: ask "
                f"for access at https://huggingface.co/{self.repo_id}, then "
                "log in with `hf auth login` (or set HF_TOKEN) so that "
                "huggingface_hub sends your token."
            ) from error
        except errors.RepositoryNotFoundError as error:
            raise FileNotFoundError(
                f"{self.path!r} is no local path, and the Hugging Face Hub "
                f"has no model {self.repo_id!r} you can access. Check the "
                "id (e.g. google-bert/bert-base-uncased) or the path; for a "
                "private model log in with `hf auth login` (or set "
                "HF_TOKEN)."
            ) from error
        except errors.RevisionNotFoundError as error:
            raise FileNotFoundError(
                f"The Hugging Face Hub model {self.repo_id!r} has no "
                f"revision {self.revision or 'main'!r}. Pass an existing "
                "branch, tag or commit hash after '@', or none for 'main'."
            ) from error
        if self.commit is None:
            # snapshots/<commit>/<filename>: later files come from it too.
            self.commit = os.path.basename(os.path.dirname(local))
        return True, local, None

    def _unreachable(self, filename):
        """Why the Hub cannot be reached now (`None` if it answers).

        One HEAD request for `filename`, without retries, waiting at most
        `REACHABILITY_TIMEOUT_S`: any HTTP answer (a file, 404, 401) means
        reachable; no answer (no network, DNS, refused, timeout, proxy)
        means unreachable, and `hf_hub_download` then reads the cache only
        and fails at once where it lacks a file. Offline mode
        (`HF_HUB_OFFLINE=1`) asks nothing: huggingface_hub never retries.
        """
        hf, constants = self.hf, self.constants
        if constants.HF_HUB_OFFLINE:
            return None
        timeout = constants.HF_HUB_ETAG_TIMEOUT
        if timeout == constants.DEFAULT_ETAG_TIMEOUT:
            timeout = REACHABILITY_TIMEOUT_S
        url = hf.hf_hub_url(self.repo_id, filename, revision=self.revision)
        try:
            hf.get_hf_file_metadata(url, timeout=timeout)
        except self.errors.HfHubHTTPError:  # the Hub answered
            return None
        except Exception as error:  # no answer: no network, or blocked
            logging.info(
                "The Hugging Face Hub did not answer (%s): reading %s from "
                "the local cache only.",
                error,
                self.repo_id,
            )
            return error
        return None

    def _described(self, filename=None):
        revision = f" (revision {self.revision!r})" if self.revision else ""
        model = f"{self.repo_id!r}{revision}"
        return f"{filename} of {model}" if filename else model

    def _not_cached(self, filename, error):
        offline = self.hf.constants.HF_HUB_OFFLINE
        reason = (
            "HF_HUB_OFFLINE=1 forbids downloading it"
            if offline
            else f"the Hub could not be reached ({self.unreachable or error})"
        )
        revision = f" --revision {self.revision}" if self.revision else ""
        command = (
            f"hf download {self.repo_id}{revision} {' '.join(self.needed)}"
        )
        hint = ""
        if not self.path.startswith(HUB_SCHEME) and not preset_hub_id(
            self.path
        ):
            hint = (
                f" ({self.path!r} was read as a Hub id because no local "
                "path of that name exists.)"
            )
        return FileNotFoundError(
            f"Cannot load the Hugging Face Hub model {self._described()}: "
            f"{filename} is not in the local Hub cache "
            f"({self.hf.constants.HF_HUB_CACHE}) and {reason}. Fetch the "
            "files keras_bert reads once, with network access, into the "
            f"same cache:\n    {command}\n"
            + "(with pytorch_model.bin for model.safetensors if the repo "
            "has no safetensors), "
            + (
                "or run this once without HF_HUB_OFFLINE=1."
                if offline
                else "or run this again when the Hub is reachable."
            )
            + hint
        )
