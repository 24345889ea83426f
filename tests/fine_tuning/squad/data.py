"""Locates the real SQuAD files of `shared/squad`, or skips the test.

The files are read in place (never copied into the repository); see
`shared/squad/README.md` for what they hold.
"""

import os

import pytest

SQUAD_DIR = os.path.normpath(
    os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "..", "shared", "squad"
    )
)


def squad_path(name):
    """Path of `shared/squad/<name>` (e.g. `"dev.json"`), or skip."""
    path = os.path.join(SQUAD_DIR, name)
    if not os.path.exists(path):
        pytest.skip(
            f"needs the real SQuAD file {path}: the shared data directory "
            "beside the repository (shared/squad) is missing"
        )
    return path
