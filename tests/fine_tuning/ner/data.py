"""Locates the real CoNLL-2003 and WNUT-17 files of `shared/`, or skips.

The files are read in place (never copied into the repository); see
`shared/conll2003/README.md` and `shared/wnut17/README.md`.
"""

import os

import pytest

SHARED_DIR = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared")
)


def shared_path(*parts):
    """Path of `shared/<parts...>` (`"conll2003", "valid.txt"`), or skip."""
    path = os.path.join(SHARED_DIR, *parts)
    if not os.path.exists(path):
        pytest.skip(
            f"needs the real file {path}: the shared data directory beside "
            "the repository is missing"
        )
    return path
