"""Reading the files of embedding training: text pairs and STS scores."""

import csv
import json

import tensorflow as tf

# The columns of a pairs file, as sentence-transformers names them.
PAIR_COLUMNS = ("anchor", "positive")


def read_pairs(path, columns=PAIR_COLUMNS):
    """`(anchor, positive)` text pairs from a JSONL or TSV file.

    A `.jsonl` / `.json` file holds one JSON object a line with (at least)
    the `columns` as string fields; any other file is a TSV whose header
    row names the columns (others are ignored). Empty lines are skipped.

    Args:
        path: str. The file (any path `tf.io.gfile` accepts).
        columns: tuple of str. The fields to read, in order. Defaults to
            `("anchor", "positive")`.

    Returns:
        A list of tuples of str, one per example.

    Example:
    ```python
    with open("pairs.jsonl", "w") as f:
        f.write('{"anchor": "a question", "positive": "its answer"}\\n')
    read_pairs("pairs.jsonl")  # [("a question", "its answer")]
    ```
    """
    with tf.io.gfile.GFile(path) as f:
        text = f.read()
    if path.endswith((".jsonl", ".json")):
        rows = [
            (number, json.loads(line))
            for number, line in enumerate(text.splitlines(), 1)
            if line.strip()
        ]
        for number, row in rows:
            missing = [c for c in columns if c not in row]
            if missing:
                _raise_missing(path, missing, list(row), columns, number)
        pairs = [tuple(row[c] for c in columns) for _, row in rows]
    else:
        reader = csv.reader(
            text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE
        )
        header = next(reader, [])
        missing = [c for c in columns if c not in header]
        if missing:
            _raise_missing(path, missing, header, columns, 1)
        positions = [header.index(c) for c in columns]
        pairs = [
            tuple(row[p] for p in positions)
            for row in reader
            if any(cell.strip() for cell in row)
        ]
    for index, pair in enumerate(pairs):
        if not all(isinstance(t, str) and t.strip() for t in pair):
            raise ValueError(
                f"{path}: example {index} has an empty or non-string text: "
                f"{pair!r}. Every {' and '.join(columns)} must be a "
                "non-empty string; drop or fix that row."
            )
    if not pairs:
        raise ValueError(f"{path} holds no pairs. Expected rows of {columns}.")
    return pairs


def _raise_missing(path, missing, found, columns, line):
    raise ValueError(
        f"{path} (line {line}) has no column {missing}; columns found: "
        f"{found}. A pairs file needs the columns {list(columns)}: a JSONL "
        f"file with those fields on every line, or a TSV whose header row "
        f"names them. Rename the columns (e.g. query -> anchor, passage -> "
        "positive)."
    )


def read_sts(path):
    """Sentence pairs and their similarity scores from an STS-B style TSV.

    GLUE's `STS-B/dev.tsv` layout: a header row with `sentence1`,
    `sentence2` and `score` columns (others ignored).

    Args:
        path: str. The TSV (any path `tf.io.gfile` accepts).

    Returns:
        `(sentences1, sentences2, scores)`: two lists of str and a list
        of float.

    Example:
    ```python
    a, b, scores = read_sts("glue/STS-B/dev.tsv")
    ```
    """
    rows = read_pairs(path, columns=("sentence1", "sentence2", "score"))
    try:
        scores = [float(score) for _, _, score in rows]
    except ValueError as error:
        raise ValueError(
            f"{path}: a `score` is not a number ({error}). An STS file's "
            "score column holds floats (STS-B: 0 to 5)."
        ) from None
    return [a for a, _, _ in rows], [b for _, b, _ in rows], scores
