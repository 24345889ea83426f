"""A Hugging Face Hub cache, laid out as `huggingface_hub` lays it out.

`huggingface_hub` has no public call that puts local files into its cache
(`hf_hub_download` is the only writer, and it needs the network), so
`add_to_hub_cache` writes what `hf_hub_download` leaves behind, in the
layout its docstring and the cache guide describe:

    models--ORG--NAME/
        blobs/<etag>                      the file's bytes; the etag is the
                                          git blob sha1, or the sha256 for
                                          LFS files (weights)
        snapshots/<commit>/<filename>     a relative symlink to the blob
        refs/<branch or tag>              the commit hash, no newline
        .no_exist/<commit>/<filename>     an empty file: "the Hub said
                                          404 for this file at this commit"

Tests check with `huggingface_hub.scan_cache_dir` and
`try_to_load_from_cache` that huggingface_hub reads it as its own.

`use_hub_cache` points huggingface_hub at such a cache, offline.
"""

import hashlib
import os

# Files Git LFS stores on the Hub (their etag is the sha256).
_LFS_SUFFIXES = (".safetensors", ".bin", ".h5", ".msgpack")


def repo_folder(cache_dir, repo_id):
    """`cache_dir/models--ORG--NAME`, huggingface_hub's folder name."""
    return os.path.join(cache_dir, "models--" + repo_id.replace("/", "--"))


def add_to_hub_cache(
    cache_dir, repo_id, sources, commit, refs=("main",), absent=()
):
    """Adds one commit of a model repo to a Hub cache directory.

    Args:
        cache_dir: str. The cache (what `HF_HUB_CACHE` names).
        repo_id: str. `org/name`.
        sources: dict. File name in the repo -> local file to copy.
        commit: str. 40 hex digits.
        refs: branch or tag names that point at `commit`.
        absent: file names the Hub answered 404 for at `commit`.

    Returns the snapshot directory.
    """
    repo = repo_folder(cache_dir, repo_id)
    snapshot = os.path.join(repo, "snapshots", commit)
    os.makedirs(os.path.join(repo, "blobs"), exist_ok=True)
    os.makedirs(snapshot, exist_ok=True)
    for name, source in sources.items():
        with open(source, "rb") as file:
            data = file.read()
        blob = os.path.join(repo, "blobs", _etag(name, data))
        if not os.path.exists(blob):
            with open(blob, "wb") as file:
                file.write(data)
        link = os.path.join(snapshot, name)  # may be in a folder
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.relpath(blob, os.path.dirname(link)), link)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    for ref in refs:
        with open(os.path.join(repo, "refs", ref), "w") as file:
            file.write(commit)
    for name in absent:
        marker = os.path.join(repo, ".no_exist", commit, name)
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        open(marker, "w").close()
    return snapshot


def use_hub_cache(monkeypatch, cache_dir, offline=True):
    """Points huggingface_hub at `cache_dir`, offline, for one test.

    Sets `HF_HUB_CACHE` and `HF_HUB_OFFLINE` as a user would, and the
    `huggingface_hub.constants` that those variables set: huggingface_hub
    reads the variables once, when it is imported (Keras imports it before
    any test runs), so in this process the constants are what it uses. A
    subprocess started with the variables needs nothing else (see the
    export recipe's test).
    """
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_CACHE", str(cache_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1" if offline else "0")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache_dir))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)


def hub_environment(cache_dir):
    """`os.environ` for a subprocess that uses `cache_dir`, offline."""
    return {**os.environ, "HF_HUB_CACHE": str(cache_dir), "HF_HUB_OFFLINE": "1"}


def _etag(name, data):
    if name.endswith(_LFS_SUFFIXES):
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
