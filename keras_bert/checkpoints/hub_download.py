"""One Hub model's files, fetched into `huggingface_hub`'s cache.

`keras_bert.checkpoints.hub.resolve_checkpoint` turns a Hub id into a
local directory; `HubDownload` does the fetching: every file from the
commit the first came from, the cache alone (at once) when the Hub does
not answer, and errors that name the id, the revision, the missing files
and the `hf download` command that fetches them. The names below are the
files keras_bert reads from a Hub repo.
"""

import os

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
from keras_bert.checkpoints.sentence_transformers_files import MODULES_FILE
from keras_bert.checkpoints.sentence_transformers_files import (
    SENTENCE_BERT_CONFIG_FILE,
)
from keras_bert.checkpoints.sentence_transformers_files import (
    sentence_transformers_files,
)
from keras_bert.version import __version__

# Seconds `HubDownload` waits for the Hub to answer at all before
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


class HubDownload:
    """Fetches one model's files through `huggingface_hub`, from the
    commit its first file came from, and words its errors.

    Args:
        path: str. What the user passed (for the errors).
        repo_id: str. The model's Hub id, `org/name`.
        revision: str or None. A branch, tag or commit; `None` for `main`.
        guessed: bool. `path` was read as a Hub id only because no local
            path of that name exists; the errors say so.
    """

    def __init__(self, path, repo_id, revision, guessed=False):
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
        # Whether `path` was read as a Hub id only because no local path
        # of that name exists (no `hf://`, no preset name).
        self.guessed = guessed
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
        if self.guessed:
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
