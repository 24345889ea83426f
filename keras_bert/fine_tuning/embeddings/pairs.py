"""Reading the files of embedding training: text pairs and STS scores."""

from keras_bert.data.text_tables import read_text_table

# The columns of a pairs file, as sentence-transformers names them.
PAIR_COLUMNS = ("anchor", "positive")


def read_pairs(path, columns=PAIR_COLUMNS, flags=("--text_column",
               "--text_b_column")):  # fmt: skip
    """`(anchor, positive)` text pairs from a JSONL, TSV or CSV file.

    Read by `keras_bert.data.text_tables.read_text_table`: a `.jsonl` /
    `.json` file holds one JSON object a line with (at least) the
    `columns` as string fields; a `.tsv` or `.csv` file has a header row
    naming the columns (others are ignored); other names are sniffed.
    UTF-8, with or without a byte-order mark. Empty lines are skipped.

    Args:
        path: str. The file (any path `tf.io.gfile` accepts).
        columns: tuple of str. The fields to read, in order. Defaults to
            `("anchor", "positive")`.
        flags: tuple of str. The flag that names each column, for the
            message when one is missing. Defaults to `("--text_column",
            "--text_b_column")`.

    Returns:
        A list of tuples of str, one per example.

    Example:
    ```python
    with open("pairs.jsonl", "w") as f:
        f.write('{"anchor": "a question", "positive": "its answer"}\\n')
    read_pairs("pairs.jsonl")  # [("a question", "its answer")]
    ```
    """
    table = read_text_table(path)
    table.require(dict(zip(columns, flags)))
    pairs = [tuple(row[c] for c in columns) for _, row in table.rows]
    for (line, _), pair in zip(table.rows, pairs):
        if not all(isinstance(t, str) and t.strip() for t in pair):
            raise ValueError(
                f"{path}, line {line}: an empty or non-string text: "
                f"{pair!r}. Every {' and '.join(columns)} must be a "
                "non-empty string; drop or fix that row."
            )
    if not pairs:
        raise ValueError(f"{path} holds no pairs. Expected rows of {columns}.")
    return pairs


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
    rows = read_pairs(
        path,
        columns=("sentence1", "sentence2", "score"),
        flags=(None, None, None),
    )
    try:
        scores = [float(score) for _, _, score in rows]
    except ValueError as error:
        raise ValueError(
            f"{path}: a `score` is not a number ({error}). An STS file's "
            "score column holds floats (STS-B: 0 to 5)."
        ) from None
    return [a for a, _, _ in rows], [b for _, b, _ in rows], scores
