"""Multiple-choice examples from SWAG's CSV layout or JSONL, and back.

Files are read by `keras_bert.data.text_tables.read_text_table` (format
from the extension `.jsonl`/`.json`, `.csv`, `.tsv`, else sniffed; UTF-8
with or without a byte-order mark; CSV with RFC 4180 quoting).

SWAG's CSV (Zellers et al., 2018; what `transformers`' `run_swag.py`
reads) has a row per example with columns `sent1`, `sent2`, `ending0` …
`endingN` and `label`; the context is `sent1` and choice `i` is `sent2 +
" " + ending_i`, as `run_swag.py` builds the pair. Other columns
(`video-id`, `startphrase`, ...) are ignored. The JSONL equivalent has
one object a line, `{"context": str, "choices": [str, ...], "label":
int}`. Either way every example of a file has the same number of choices,
at least two.
"""

import csv
import io
import json
import re

import numpy as np

from keras_bert import files
from keras_bert.data.text_tables import read_text_table

_ENDING = re.compile(r"^ending(\d+)$")
# What a file must give each example.
_MIN_CHOICES = 2


def read_multiple_choice(path, require_labels=True):
    """Reads a SWAG-layout CSV or a JSONL file of multiple-choice examples.

    The format comes from the file name: `.jsonl` or `.json` is JSONL,
    `.csv` SWAG's CSV (`.tsv`: the same columns tab-separated); any other
    name is sniffed (`keras_bert.data.text_tables`).

    Args:
        path: str. Any path `tf.io.gfile` reads.
        require_labels: bool. Whether every example needs a `label`.

    Returns:
        A dict: `contexts` (str array `(num_examples,)`), `choices` (str
        array `(num_examples, num_choices)`) and `labels` (int32
        `(num_examples,)`; -1 where a file without labels has none).

    Raises:
        ValueError: naming the file, the line and what is wrong: no
            `ending0`/`ending1` columns, a missing column, a number of
            choices that differs from the first example's, fewer than
            two, a label that is not a choice index.

    Example:
    ```python
    examples = read_multiple_choice("swag/val.csv")
    examples["choices"].shape  # (20006, 4)
    ```
    """
    table = read_text_table(path)
    if table.format == "jsonl":
        rows = _jsonl_rows(path, table.rows)
    else:
        rows = _swag_rows(path, table)
    contexts, choices, labels = [], [], []
    for line, (context, row_choices, label) in rows:
        where = f"{path}, line {line}"
        if len(row_choices) < _MIN_CHOICES:
            raise ValueError(
                f"{where}: {len(row_choices)} choice(s); an example needs "
                f"at least {_MIN_CHOICES}."
            )
        if choices and len(row_choices) != len(choices[0]):
            raise ValueError(
                f"{where}: {len(row_choices)} choices, where the file's "
                f"first example has {len(choices[0])}. Every example of a "
                "file has the same number of choices; split the file by "
                "number of choices."
            )
        labels.append(_label(label, len(row_choices), where, require_labels))
        contexts.append(context)
        choices.append(row_choices)
    if not contexts:
        raise ValueError(f"{path} holds no examples.")
    return {
        "contexts": np.array(contexts, dtype=object),
        "choices": np.array(choices, dtype=object),
        "labels": np.array(labels, dtype=np.int32),
    }


def write_swag_csv(path, contexts, choices, labels, headers=None):
    """Writes examples in SWAG's CSV layout (`read_multiple_choice` reads
    them back with the same pairs).

    Args:
        path: str. Any path `tf.io.gfile` writes.
        contexts: list of str: `sent1`.
        choices: list of lists of str, one per example: the endings.
        labels: list of int: the right ending of each example.
        headers: list of str or `None`: `sent2`, the start every ending
            continues (`""`: the ending alone is the choice).
    """
    headers = headers if headers is not None else [""] * len(contexts)
    num_choices = len(choices[0])
    output = io.StringIO()
    writer = csv.writer(output, lineterminator="\n")
    endings = [f"ending{i}" for i in range(num_choices)]
    writer.writerow(["sent1", "sent2", *endings, "label"])
    for context, header, row, label in zip(contexts, headers, choices, labels):
        writer.writerow([context, header, *row, int(label)])
    files.write_text(path, output.getvalue())


def _swag_rows(path, table):
    columns = table.columns
    endings = sorted(
        (int(match.group(1)), name)
        for name in columns
        if (match := _ENDING.match(name))
    )
    if [index for index, _ in endings] != list(range(len(endings))) or len(
        endings
    ) < _MIN_CHOICES:
        raise ValueError(
            f"{path}: columns {columns}; SWAG's layout needs `sent1`, "
            "`sent2` and `ending0`, `ending1`, ... numbered from 0 without "
            "gaps (at least two), and `label`."
        )
    missing = [name for name in ("sent1", "sent2") if name not in columns]
    if missing:
        raise ValueError(
            f"{path}: no column {missing}; SWAG's layout has `sent1` (the "
            "context) and `sent2` (the start each ending continues)."
        )
    for line, row in table.rows:
        header = row["sent2"] or ""
        choices = [
            f"{header} {row[name] or ''}" if header else (row[name] or "")
            for _, name in endings
        ]
        yield line, (row["sent1"] or "", choices, row.get("label"))


def _jsonl_rows(path, rows):
    for line, record in rows:
        raw = json.dumps(record)
        if not isinstance(record, dict) or not isinstance(
            record.get("context"), str
        ):
            raise ValueError(
                f"{path}, line {line}: expected an object with a `context` "
                'string, e.g. {"context": "...", "choices": ["...", "..."], '
                f'"label": 0}}. Received: {raw[:120]}'
            )
        choices = record.get("choices")
        if not isinstance(choices, list) or not all(
            isinstance(choice, str) for choice in choices
        ):
            raise ValueError(
                f"{path}, line {line}: `choices` must be a list of strings. "
                f"Received: {choices!r:.120}"
            )
        yield line, (record["context"], choices, record.get("label"))


def _label(label, num_choices, where, required):
    if label is None or label == "":
        if required:
            raise ValueError(
                f"{where}: no label. Training and evaluation files need the "
                f"index of each example's right choice (0 to "
                f"{num_choices - 1})."
            )
        return -1
    try:
        value = int(label)
        whole = float(label) == value
    except (TypeError, ValueError):
        whole = False
    if not whole or not 0 <= value < num_choices:
        raise ValueError(
            f"{where}: label {label!r}; expected the index of the right "
            f"choice, 0 to {num_choices - 1}."
        )
    return value
