"""Reads and writes CoNLL column files; converts IOB1, IOB2 and IOBES tags.

A CoNLL file holds one token per line, its columns separated by whitespace
(the token first, the tag last in CoNLL-2003 and WNUT-17), and a blank line
after each sentence. `-DOCSTART-` lines start documents. Tags mark entities
in one of three schemes:

- IOB1 (CoNLL-2003): an entity starts with `I-`; `B-` only starts one that
  directly follows another of the same type.
- IOB2 (WNUT-17, most models): every entity starts with `B-`.
- IOBES: `S-` marks a one-token entity, `E-` the last token of a longer one.

Every path goes through `tf.io.gfile`, so `gs://...` paths work.
"""

import re

import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.text.tag_schemes import SCHEMES  # noqa: F401 (its name here)
from keras_bert.text.tag_schemes import bad_tag_message
from keras_bert.text.tag_schemes import check_scheme
from keras_bert.text.tag_schemes import entity_types  # noqa: F401
from keras_bert.text.tag_schemes import is_valid_tag
from keras_bert.text.tag_schemes import label_list  # noqa: F401
from keras_bert.training.ner_metrics import get_entities

_DOCSTART = "-DOCSTART-"
# ASCII whitespace only: a no-break space inside a token stays in the token.
_ASCII_WHITESPACE = " \t\n\r\f\v"
_COLUMN_SEPARATOR = re.compile(f"[{_ASCII_WHITESPACE}]+")


def convert_tags(tags, source, target="iob2"):
    """Converts one sentence's tags from one scheme to another.

    Entities are read with `conlleval`'s rules (see
    `keras_bert.training.ner_metrics.get_entities`) and written out in
    `target`. Reading is lenient: an `I-X` after `O` or after another type
    starts an entity, so IOB1 -> IOB2 is the identity on valid IOB2 and
    repairs an IOB2 sequence that starts an entity with `I-`. Converting a
    scheme to itself normalises it in the same way.

    Args:
        tags: list of str. One tag per token: `"O"` or `<prefix>-<type>`.
        source: str. The scheme of `tags`: `"iob1"`, `"iob2"` or `"iobes"`.
            IOB1 and IOB2 tags have prefix `B` or `I`; IOBES ones also `E`
            or `S`.
        target: str. The scheme to return, one of the same three. Defaults
            to `"iob2"`.

    Returns:
        A new list of str, one tag per token.

    Example:
    >>> convert_tags(["I-PER", "I-PER", "B-PER", "O"], "iob1")
    ['B-PER', 'I-PER', 'B-PER', 'O']
    >>> convert_tags(["B-PER", "I-PER", "B-PER", "O"], "iob2", "iobes")
    ['B-PER', 'E-PER', 'S-PER', 'O']
    """
    check_scheme(source, "source")
    check_scheme(target, "target")
    tags = list(tags)
    for tag in tags:
        if not is_valid_tag(tag, source):
            raise ValueError(bad_tag_message(tag, source))
    converted = ["O"] * len(tags)
    previous_end, previous_type = -2, None
    for entity_type, start, end in get_entities(tags):
        if target == "iobes" and start == end:
            converted[start] = f"S-{entity_type}"
        else:
            # IOB1 starts with B- only right after an entity of its type.
            touches = previous_end == start - 1 and previous_type == entity_type
            first = "I" if target == "iob1" and not touches else "B"
            converted[start] = f"{first}-{entity_type}"
            for index in range(start + 1, end + 1):
                converted[index] = f"I-{entity_type}"
            if target == "iobes":
                converted[end] = f"E-{entity_type}"
        previous_end, previous_type = end, entity_type
    return converted


def read_conll(
    path, tag_column=-1, scheme="auto", target_scheme="iob2", delimiter=None
):
    """Reads a CoNLL column file into sentences of words and tags.

    A line that is empty or holds only whitespace (a lone tab, as in the
    WNUT-17 train file) ends a sentence; runs of such lines make no empty
    sentences. A `-DOCSTART-` line ends any open sentence and starts a new
    document. Every token line must have as many columns as the first one.

    Args:
        path: str. The file; anything `tf.io.gfile` opens (`gs://...`
            included). UTF-8; invalid bytes become U+FFFD, with a warning.
        tag_column: int or None. The column of the tags, counted as Python
            indexes (negative from the end); never column 0, the token.
            `None` reads an unlabelled file: the tokens only. Defaults to
            `-1`, the last column.
        scheme: str. The tag scheme of the file: `"iob1"`, `"iob2"`,
            `"iobes"`, or `"auto"`: IOBES if some tag has prefix `E-` or
            `S-`, else IOB1 (whose conversion also reads valid IOB2).
            Defaults to `"auto"`.
        target_scheme: str. The scheme of the returned tags: `"iob1"`,
            `"iob2"` or `"iobes"`. Defaults to `"iob2"`.
        delimiter: str or None. The column separator; `None` splits on any
            run of ASCII whitespace (spaces and tabs). Defaults to `None`.

    Returns:
        A dict of equal-length lists, one entry per sentence: `words` (list
        of str), `tags` (list of str in `target_scheme`; the whole entry is
        `None` when `tag_column` is `None`), `document` (int: the document
        index, starting at 0; a `-DOCSTART-` line starts a new document
        once the current one has a sentence) and `line` (int: the 1-based
        line number of the sentence's first token).

    Example:

    ```python
    data = read_conll("conll2003/valid.txt")  # IOB1 on disk
    data["words"][0]  # ["CRICKET", "-", "LEICESTERSHIRE", "TAKE", ...]
    data["tags"][0]   # ["O", "O", "B-ORG", "O", ...]  (IOB2)
    ```
    """
    if scheme != "auto":
        check_scheme(scheme, "scheme", extra=' or "auto"')
    check_scheme(target_scheme, "target_scheme")
    if tag_column is not None and (
        isinstance(tag_column, bool) or not isinstance(tag_column, int)
    ):
        raise ValueError(
            "`tag_column` must be an int (a column index, e.g. -1 for the "
            f"last column) or None for an unlabelled file. Received: "
            f"tag_column={tag_column!r}"
        )
    if delimiter == "":
        raise ValueError(
            "`delimiter` must be a non-empty string, or None to split on "
            "whitespace. Received: delimiter=''"
        )
    lines = _read_lines(path)

    words, tags, documents, line_numbers = [], [], [], []
    sentence_words, sentence_tags = [], []
    document = 0
    num_columns = None
    # A separator line, a -DOCSTART- line and the end of the file each
    # close the open sentence (index len(lines) stands for the end).
    for index in range(len(lines) + 1):
        line = lines[index] if index < len(lines) else ""
        columns = _split_columns(line, delimiter)
        if not columns or columns[0] == _DOCSTART:
            if sentence_words:
                words.append(sentence_words)
                tags.append(sentence_tags)
                documents.append(document)
                line_numbers.append(index + 1 - len(sentence_words))
                sentence_words, sentence_tags = [], []
            # A new document, unless the current one is still empty.
            if columns and documents and documents[-1] == document:
                document += 1
            continue
        if num_columns is None:
            num_columns = len(columns)
            _check_tag_column(tag_column, path, index + 1, line, columns)
        elif len(columns) != num_columns:
            raise ValueError(
                f"{path}, line {index + 1}: {line!r} has {len(columns)} "
                f"columns, but the file's first token line has "
                f"{num_columns}. Every token line needs the same columns "
                "(tokens with spaces need another `delimiter`, e.g. "
                'delimiter="\\t"); fix or remove the line.'
            )
        sentence_words.append(columns[0])
        if tag_column is not None:
            sentence_tags.append(columns[tag_column])

    if tag_column is None:
        logging.info(
            "Read %d sentences (%d tokens, no tags) from %s.",
            len(words),
            sum(map(len, words)),
            path,
        )
        return {
            "words": words,
            "tags": None,
            "document": documents,
            "line": line_numbers,
        }

    source = scheme
    if scheme == "auto":
        source = "iob1"
        if any(t[:2] in ("E-", "S-") for sentence in tags for t in sentence):
            source = "iobes"
    for sentence, first_line in zip(tags, line_numbers):
        for offset, tag in enumerate(sentence):
            if not is_valid_tag(tag, source):
                line_number = first_line + offset
                how = ", detected by scheme='auto'" if scheme == "auto" else ""
                raise ValueError(
                    f"{path}, line {line_number}: "
                    f"{lines[line_number - 1]!r}: "
                    f"{bad_tag_message(tag, source, how)} Check that "
                    f"tag_column={tag_column} is the tag column and that "
                    "`scheme` is the file's, or fix the tag."
                )
    converted = [convert_tags(t, source, target_scheme) for t in tags]
    logging.info(
        "Read %d sentences (%d tokens, %d documents) from %s; tags %s -> %s.",
        len(words),
        sum(map(len, words)),
        documents[-1] + 1 if documents else 0,
        path,
        source,
        target_scheme,
    )
    return {
        "words": words,
        "tags": converted,
        "document": documents,
        "line": line_numbers,
    }


def write_conll_predictions(path, words, gold_tags, predicted_tags):
    """Writes `token gold predicted` lines, the input of `conlleval`.

    One token per line, columns separated by a space, and a blank line
    after each sentence; a sentence without tokens writes nothing. The
    file reads back with `read_conll(path, tag_column=1)` (gold) and
    `read_conll(path, tag_column=2)` (predicted).

    Args:
        path: str. The file to write (replaced if it exists); anything
            `tf.io.gfile` opens. Missing parent directories are created.
        words: list of sentences, each a list of str tokens.
        gold_tags: list of sentences of gold tags, or None to write
            `token predicted` lines only.
        predicted_tags: list of sentences of predicted tags.

    Example:

    ```python
    write_conll_predictions(
        "/tmp/predictions.txt", [["John", "runs"]], [["B-PER", "O"]],
        [["B-PER", "O"]],
    )  # "John B-PER B-PER\\nruns O O\\n\\n"
    ```
    """
    columns = [("words", words), ("predicted_tags", predicted_tags)]
    if gold_tags is not None:
        columns.insert(1, ("gold_tags", gold_tags))
    columns = [(name, list(value)) for name, value in columns]
    num_sentences = len(columns[0][1])
    for name, value in columns[1:]:
        if len(value) != num_sentences:
            raise ValueError(
                f"`{name}` must have one entry per sentence of `words`. "
                f"Received: {len(value)} entries for {num_sentences} "
                "sentences."
            )
    pieces = []
    for index, sentence in enumerate(zip(*(value for _, value in columns))):
        lengths = [len(field) for field in sentence]
        if len(set(lengths)) > 1:
            received = ", ".join(
                f"{length} {name}"
                for (name, _), length in zip(columns, lengths)
            )
            raise ValueError(
                f"Sentence {index} has mismatched lengths: {received}. Give "
                "exactly one tag per word."
            )
        for token in zip(*sentence):
            for item in token:
                if (
                    not isinstance(item, str)
                    or not item
                    or _COLUMN_SEPARATOR.search(item)
                ):
                    raise ValueError(
                        f"Sentence {index} holds {item!r}, which cannot be a "
                        "column of a CoNLL file: tokens and tags must be "
                        "non-empty strings without whitespace. Replace the "
                        "whitespace (e.g. with '_') before writing."
                    )
            pieces.append(" ".join(token) + "\n")
        if lengths[0]:
            pieces.append("\n")
    directory = path.rpartition("/")[0]
    if directory and not tf.io.gfile.exists(directory):
        tf.io.gfile.makedirs(directory)
    files.write_text(path, "".join(pieces))


def _read_lines(path):
    """The lines of `path`, decoded as UTF-8 (invalid bytes -> U+FFFD)."""
    try:
        with tf.io.gfile.GFile(path, "rb") as file:
            raw = file.read()
    except tf.errors.NotFoundError:
        raise FileNotFoundError(
            f"No CoNLL file at {path}. Check the path (and, for a gs:// "
            "path, the bucket and your credentials)."
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        logging.warning(
            "%s: invalid UTF-8 from line %d on (first at byte %d); each "
            "invalid byte sequence was replaced by U+FFFD.",
            path,
            raw.count(b"\n", 0, error.start) + 1,
            error.start,
        )
        text = raw.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline
    # Windows line ends; a "\r" inside a line stays (no column splits it).
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _split_columns(line, delimiter):
    """The columns of `line`; none if it is empty or whitespace only."""
    if not line.strip(_ASCII_WHITESPACE):
        return []
    if delimiter is not None:
        return line.split(delimiter)
    if line.isascii():
        return line.split()
    return _COLUMN_SEPARATOR.split(line.strip(_ASCII_WHITESPACE))


def _check_tag_column(tag_column, path, line_number, line, columns):
    if tag_column is None:
        return
    if not (-len(columns) <= tag_column < len(columns)) or (
        tag_column % len(columns) == 0
    ):
        raise ValueError(
            f"{path}, line {line_number}: {line!r} has {len(columns)} "
            f"columns, too few for tag_column={tag_column}: the tags need a "
            "column of their own after the token (column 0). Pass the index "
            "of the tag column (e.g. -1, the last), or tag_column=None to "
            "read an unlabelled file."
        )
