"""Reading pre-training corpora as a stream of documents.

Two layouts are understood:

- `"sentences"`: the original BERT corpus format, one sentence per line and
  a blank line between documents.
- `"text"`: plain text. Each file is one document; lines are joined into
  paragraphs (blank lines separate paragraphs) and paragraphs are split into
  sentences at `.`, `!` or `?` followed by white space and a capital letter,
  digit, quote or bracket.

Files ending in `.gz` are decompressed on the fly. A file is never read
whole: documents are yielded one at a time, so a corpus larger than memory
streams through.
"""

import collections
import gzip
import re

import tensorflow as tf
from absl import logging

INPUT_FORMATS = ("sentences", "text")

_SENTENCE_BOUNDARY = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[A-Z0-9])"
)


def expand_input_files(input_file):
    """Expands a comma-separated list of paths and globs into sorted files.

    Args:
        input_file: str. Comma-separated paths or glob patterns, as in the
            original `--input_file` flag, e.g. `"wiki/*.txt,books.txt.gz"`.

    Returns:
        A list of file paths, sorted within each pattern so that the order
        (and therefore the output under a fixed seed) does not depend on the
        file system.

    Raises:
        FileNotFoundError: if a pattern matches no file.

    Example:
    ```python
    files = expand_input_files("/usr/share/doc/python3.11/html/_sources/*.txt")
    ```
    """
    patterns = [p.strip() for p in str(input_file).split(",") if p.strip()]
    if not patterns:
        raise ValueError(
            "Received an empty `input_file`. Pass one or more comma-separated "
            f"paths or glob patterns. Received: input_file={input_file!r}"
        )
    files = []
    for pattern in patterns:
        matches = sorted(tf.io.gfile.glob(pattern))
        if not matches:
            raise FileNotFoundError(
                f"No file matches the input pattern {pattern!r} (from "
                f"input_file={input_file!r}). Check the path, or quote the "
                "glob so that the shell does not expand it."
            )
        files.extend(matches)
    return files


def split_sentences(paragraph):
    """Splits a paragraph of plain text into sentences.

    A deliberately simple rule: a sentence ends at `.`, `!` or `?` (plus any
    closing quotes or brackets) followed by white space and a capital,
    digit, quote or opening bracket.

    Args:
        paragraph: str.

    Returns:
        A list of non-empty, stripped sentences.

    Example:
    ```python
    split_sentences("It works. Does it? Yes.")
    # ['It works.', 'Does it?', 'Yes.']
    ```
    """
    paragraph = " ".join(paragraph.split())
    return [s for s in _SENTENCE_BOUNDARY.split(paragraph) if s.strip()]


def _open_lines(path):
    """Yields the raw (bytes) lines of a file, gunzipping `.gz` files."""
    with tf.io.gfile.GFile(path, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw
        for line in stream:
            yield line


def text_lines(path, stats=None):
    """Yields the stripped lines of a text file (`.gz` files gunzipped).

    Decoded as UTF-8; an invalid byte sequence becomes U+FFFD, as
    `BertTokenizer` decodes its inputs, so one bad byte never drops a line.
    Such lines are counted in `stats["invalid_utf8_lines"]` and the first
    five of each file logged.

    Args:
        path: str. Any path `tf.io.gfile` opens.
        stats: a `collections.Counter` or `None`.

    Example:
    ```python
    lines = list(text_lines("corpus.txt.gz"))
    ```
    """
    stats = collections.Counter() if stats is None else stats
    bad_lines = 0
    for line_number, raw_line in enumerate(_open_lines(path), start=1):
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError as error:
            stats["invalid_utf8_lines"] += 1
            bad_lines += 1
            if bad_lines <= 5:
                logging.warning(
                    "Line %d of %s is not valid UTF-8 (%s); each invalid "
                    "byte sequence was replaced by U+FFFD.",
                    line_number,
                    path,
                    error,
                )
            line = raw_line.decode("utf-8", errors="replace")
        yield line.strip()


def _sentence_documents(path, stats):
    document = []
    for line in text_lines(path, stats):
        if line:
            document.append(line)
        elif document:
            yield document
            document = []
    if document:
        yield document


def _text_documents(path, stats):
    document = []
    paragraph = []
    for line in text_lines(path, stats):
        if line:
            paragraph.append(line)
        elif paragraph:
            document.extend(split_sentences(" ".join(paragraph)))
            paragraph = []
    if paragraph:
        document.extend(split_sentences(" ".join(paragraph)))
    if document:
        yield document


def read_documents(input_files, input_format="sentences", stats=None):
    """Streams the documents of a corpus, one list of sentences at a time.

    Args:
        input_files: list of str. Files to read, in order (see
            `expand_input_files`).
        input_format: str. `"sentences"` (one sentence per line, blank line
            between documents; the original BERT format) or `"text"` (each
            file one document of plain text, split into sentences).
            Defaults to `"sentences"`.
        stats: a `collections.Counter` or `None`. If given, receives the
            counts `files`, `empty_files`, `documents` and
            `invalid_utf8_lines` (lines that were not valid UTF-8, read
            with U+FFFD for each bad byte sequence; see `text_lines`).

    Yields:
        Lists of sentences (str), one list per document.

    Example:
    ```python
    for document in read_documents(["corpus.txt"]):
        print(len(document), "sentences")
    ```
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(
            "Received an invalid value for argument `input_format`, expected "
            f"one of {INPUT_FORMATS}. Received: input_format={input_format!r}"
        )
    stats = collections.Counter() if stats is None else stats
    read_file = (
        _sentence_documents if input_format == "sentences" else _text_documents
    )
    for path in input_files:
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(
                f"Input file {path!r} does not exist. Check the path given "
                "in `input_file`."
            )
        stats["files"] += 1
        documents_before = stats["documents"]
        for document in read_file(path, stats):
            stats["documents"] += 1
            yield document
        if stats["documents"] == documents_before:
            stats["empty_files"] += 1
            logging.warning("Input file %s holds no text; skipped.", path)
