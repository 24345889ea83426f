"""Reading a user's own classification data: JSONL, TSV or CSV.

The file is read by `keras_bert.data.text_tables.read_text_table` (the
format from the extension `.jsonl`/`.json`, `.tsv`, `.csv`, else sniffed;
UTF-8 with or without a byte-order mark). Its columns (JSONL: fields):

- the text: `text`, or `text_a` and `text_b` for sentence pairs; any
  other names with `text_column` (and `text_b_column`), e.g. GLUE's
  `SST-2` files' `sentence` (`--text_column=sentence`).
- the label: `label`, one name per text; with `multi_label`, `labels` (or
  `label`): a JSON list (`[]` for none), or in a TSV/CSV cell several
  names comma-separated (`sports,politics`; empty for none). Any other
  name with `label_column`.

Labels are names (strings); numbers are read as their text (`1` → `"1"`).
A single-label file gives one name per text, a multi-label file a list.
"""

import dataclasses

import numpy as np

from keras_bert.data.text_tables import header_hint
from keras_bert.data.text_tables import read_text_table

_TEXT_COLUMNS = (("text",), ("text_a", "text_b"))


@dataclasses.dataclass
class ClassificationExamples:
    """Texts and their labels, as read from one file.

    Attributes:
        texts: tuple of one str array `(n,)` (texts) or two (pairs).
        labels: list of `n` labels: a name each (single-label), or a list
            of names each (multi-label).
        path: str. Where they came from, for messages.
        one_plain_label_each: bool. Read as multi-label, yet every row
            gives exactly one name as a plain string in a column not named
            `labels`: a single-label file.
    """

    texts: tuple
    labels: list
    path: str
    one_plain_label_each: bool = False

    def __len__(self):
        return len(self.labels)

    @property
    def label_set(self):
        """The distinct label names, sorted."""
        names = set()
        for label in self.labels:
            names.update(label if isinstance(label, list) else [label])
        return sorted(names)

    def take(self, indices, path):
        """The examples at `indices` (int array), named `path`."""
        return ClassificationExamples(
            tuple(side[indices] for side in self.texts),
            [self.labels[index] for index in indices],
            path,
            self.one_plain_label_each,
        )


def read_classification_examples(
    path,
    multi_label=False,
    text_column=None,
    text_b_column=None,
    label_column=None,
    labels=True,
):
    """Reads a JSONL, TSV or CSV file of texts and labels (module docstring).

    Args:
        path: str. Any path `tf.io.gfile` reads.
        multi_label: bool. Read a list of labels per text (`labels`, or
            a comma-separated `label`/`labels` cell); else one name each
            (`label`).
        text_column: str or `None`. The column of the texts (of the first
            texts of pairs). `None`: `text`, or `text_a` with `text_b`.
        text_b_column: str or `None`. The column of the pairs' second
            texts. `None`: `text_b` where the texts are `text_a`.
        label_column: str or `None`. The column of the labels. `None`:
            `label` (multi-label: `labels`, else `label`).
        labels: bool. `False` reads the texts only (a file to predict):
            its labels, if any, are ignored and `labels` holds `None`s.

    Returns:
        `ClassificationExamples`.

    Raises:
        ValueError: naming the file, the line and the fix: no examples, a
            missing text or label column (listing the columns found and
            the flag to set), several labels in a single-label read,
            bytes that are not UTF-8, a line that is not JSON.

    Example:
    ```python
    examples = read_classification_examples("train.jsonl", multi_label=True)
    examples.texts[0][:2], examples.labels[:2]
    # (array(['Rome beat Milan', 'Talks in Geneva']), [['ORG', 'LOC'], []])
    sst2 = read_classification_examples(
        "glue/SST-2/dev.tsv", text_column="sentence"
    )
    ```
    """
    table = read_text_table(path)
    if not table.rows:
        raise ValueError(
            f"{path} has no examples. Pass a file with one example per "
            "line (JSONL) or per row after the header (TSV, CSV)."
        )
    columns = _text_columns(table, text_column, text_b_column)
    label_key = (
        _label_column(table, multi_label, label_column) if labels else None
    )
    texts = tuple([] for _ in columns)
    names = []
    plain = multi_label and label_key != "labels"
    for line, row in table.rows:
        for side, column in zip(texts, columns):
            value = row.get(column)
            if not isinstance(value, str):
                raise ValueError(
                    f"{path}, line {line}: no text in `{column}` (received "
                    f"{value!r}). Every example needs a string `{column}`."
                )
            side.append(value)
        if not labels:
            names.append(None)
            continue
        key = label_key or _row_label_key(row, multi_label)
        value = row.get(key)
        plain = plain and key != "labels" and _is_one_plain_name(value)
        names.append(
            _label(row, key, multi_label, table.format == "jsonl", path, line)
        )
    return ClassificationExamples(
        tuple(np.array(side, dtype=object).astype(str) for side in texts),
        names,
        path,
        one_plain_label_each=bool(plain),
    )


def _text_columns(table, text_column, text_b_column):
    if text_column or text_b_column:
        first = text_column or "text_a"
        columns = (first, text_b_column) if text_b_column else (first,)
        flags = ("--text_column", "--text_b_column")
        table.require(dict(zip(columns, flags)))
        return columns
    found = table.columns
    for columns in reversed(_TEXT_COLUMNS):
        if all(column in found for column in columns):
            return columns
    raise ValueError(
        f"{table.path}: no text column; columns found: {found}. Set "
        "--text_column (`text_column=`) to the column of the texts (e.g. "
        "--text_column=sentence for GLUE's SST-2), or name it `text` "
        "(`text_a` and `text_b` for sentence pairs; --text_b_column)."
        + header_hint(found)
    )


def _label_column(table, multi_label, label_column):
    """The label column every row must have; `None`: decided per row."""
    if label_column:
        table.require({label_column: "--label_column"})
        return label_column
    if table.format != "jsonl":
        names = ("labels", "label") if multi_label else ("label",)
        for name in names:
            if name in table.columns:
                return name
        hint = (
            " This file has `labels` (several per text): pass --multi_label "
            "(`multi_label=True`)."
            if "labels" in table.columns
            else ""
        )
        raise ValueError(
            f"{table.path}: no `{names[0]}` column; columns found: "
            f"{table.columns}. Set --label_column (`label_column=`) to the "
            f"column of the labels, or name it `{names[0]}`.{hint}"
            + header_hint(table.columns)
        )
    return None


def _row_label_key(row, multi_label):
    if multi_label:
        return "labels" if "labels" in row else "label"
    return "label"


def _is_one_plain_name(value):
    if isinstance(value, (list, dict)) or value is None:
        return False
    return bool(str(value).strip()) and "," not in str(value)


def _label(row, key, multi_label, is_jsonl, path, line):
    where = f"{path}, line {line}"
    if not multi_label:
        if key not in row:
            hint = (
                " This file has `labels` (several per text): pass "
                "--multi_label (`multi_label=True`)."
                if "labels" in row
                else ""
            )
            raise ValueError(
                f"{where}: no `{key}` field (found {sorted(row)}). Every "
                f"example needs one; set --label_column to the field that "
                f"holds it.{hint}"
            )
        label = row[key]
        if isinstance(label, list):
            raise ValueError(
                f"{where}: `{key}` is a list ({label!r}). For several "
                "labels per text pass --multi_label (`multi_label=True`) "
                "and write them as `labels`."
            )
        if label is None or (isinstance(label, str) and not label.strip()):
            raise ValueError(
                f"{where}: an empty `{key}`. Every example of a "
                "single-label file has one; for texts with no label use "
                "--multi_label."
            )
        return str(label)
    if key not in row:
        raise ValueError(
            f"{where}: no `labels` field (found {sorted(row)}). Write a "
            "list of names per text (`[]` for none), or set --label_column."
        )
    value = row[key]
    if value is None:
        return []
    if isinstance(value, list):
        names = [str(name).strip() for name in value]
    elif is_jsonl and key == "labels":
        raise ValueError(
            f"{where}: `labels` is {value!r}, not a list. Write a list of "
            'names, e.g. "labels": ["PER", "LOC"] (or [] for none).'
        )
    else:
        names = [name.strip() for name in str(value).split(",")]
    names = [name for name in names if name]
    # Order kept, duplicates dropped.
    return list(dict.fromkeys(names))
