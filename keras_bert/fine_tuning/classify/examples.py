"""Reading a user's own classification data: JSONL or TSV, one or many labels.

Two layouts, told apart by the file's first non-blank character (`{`:
JSONL) or else its name (`.jsonl`, `.json`: JSONL; anything else: TSV):

- JSONL, one object per line: `{"text": ..., "label": "sports"}`, or
  for several labels per text `{"text": ..., "labels": ["sports",
  "politics"]}` (`[]` for none). Sentence pairs: `"text_a"` and
  `"text_b"` instead of `"text"`.
- TSV with a header row: a `text` column (or `text_a` and `text_b`) and
  a `label` or `labels` column; several labels are comma-separated
  (`sports,politics`; an empty cell for none). Cells are read as they
  are (no quoting), as GLUE's TSV files are.

Labels are names (strings); numbers are read as their text (`1` → `"1"`).
A single-label file gives one name per text, a multi-label file a list.
"""

import csv
import dataclasses
import io
import json

import numpy as np

from keras_bert import files

_TEXT_COLUMNS = (("text",), ("text_a", "text_b"))


@dataclasses.dataclass
class ClassificationExamples:
    """Texts and their labels, as read from one file.

    Attributes:
        texts: tuple of one str array `(n,)` (texts) or two (pairs).
        labels: list of `n` labels: a name each (single-label), or a list
            of names each (multi-label).
        path: str. Where they came from, for messages.
    """

    texts: tuple
    labels: list
    path: str

    def __len__(self):
        return len(self.labels)

    @property
    def label_set(self):
        """The distinct label names, sorted."""
        names = set()
        for label in self.labels:
            names.update(label if isinstance(label, list) else [label])
        return sorted(names)


def read_classification_examples(path, multi_label=False, labels=True):
    """Reads a JSONL or TSV file of texts and labels (module docstring).

    Args:
        path: str. Any path `tf.io.gfile` reads.
        multi_label: bool. Read a list of labels per text (`labels`, or
            a comma-separated `label`/`labels` cell); else one name each
            (`label`).
        labels: bool. `False` reads the texts only (a file to predict):
            its labels, if any, are ignored and `labels` holds `None`s.

    Returns:
        `ClassificationExamples`.

    Raises:
        ValueError: naming the file, the line and the fix: no examples, a
            missing text or label field, several labels in a single-label
            read, a line that is not JSON.

    Example:
    ```python
    examples = read_classification_examples("train.jsonl", multi_label=True)
    examples.texts[0][:2], examples.labels[:2]
    # (array(['Rome beat Milan', 'Talks in Geneva']), [['ORG', 'LOC'], []])
    ```
    """
    if not files.exists(path):
        raise ValueError(f"No such file: {path}. Pass an existing file.")
    content = files.read_text(path)
    stripped = content.lstrip()
    is_jsonl = stripped.startswith("{") or (
        not stripped and path.endswith((".jsonl", ".json"))
    )
    rows = _jsonl_rows(content, path) if is_jsonl else _tsv_rows(content, path)
    if not rows:
        raise ValueError(
            f"{path} has no examples. Pass a file with one example per "
            "line (JSONL) or per row after the header (TSV)."
        )
    columns = _text_columns(rows[0][1], path)
    texts = tuple([] for _ in columns)
    names = []
    for line, row in rows:
        for side, column in zip(texts, columns):
            value = row.get(column)
            if not isinstance(value, str):
                raise ValueError(
                    f"{path}, line {line}: no text in `{column}` (received "
                    f"{value!r}). Every example needs a string `{column}`."
                )
            side.append(value)
        names.append(
            _label(row, multi_label, is_jsonl, path, line) if labels else None
        )
    return ClassificationExamples(
        tuple(np.array(side, dtype=object).astype(str) for side in texts),
        names,
        path,
    )


def _jsonl_rows(content, path):
    rows = []
    for line, text in enumerate(content.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{path}, line {line}: not JSON ({error}). A JSONL file "
                'holds one object per line, e.g. {"text": "...", "label": '
                '"..."}.'
            ) from None
        if not isinstance(row, dict):
            raise ValueError(
                f"{path}, line {line}: {text.strip()[:60]!r} is not an "
                'object. Write one {"text": ..., "label": ...} per line.'
            )
        rows.append((line, row))
    return rows


def _tsv_rows(content, path):
    reader = csv.DictReader(
        io.StringIO(content), delimiter="\t", quoting=csv.QUOTE_NONE
    )
    if not reader.fieldnames:
        return []
    # Line numbers count the header as line 1.
    return [(line, row) for line, row in enumerate(reader, start=2)]


def _text_columns(row, path):
    for columns in reversed(_TEXT_COLUMNS):
        if all(column in row for column in columns):
            return columns
    raise ValueError(
        f"{path}: no text field; found {sorted(row)}. Name it `text` (or "
        "`text_a` and `text_b` for sentence pairs)."
    )


def _label(row, multi_label, is_jsonl, path, line):
    where = f"{path}, line {line}"
    if not multi_label:
        if "label" not in row:
            hint = (
                " This file has `labels` (several per text): pass "
                "--multi_label (`multi_label=True`)."
                if "labels" in row
                else ""
            )
            raise ValueError(
                f"{where}: no `label` field (found {sorted(row)}). Every "
                f"example needs one.{hint}"
            )
        label = row["label"]
        if isinstance(label, list):
            raise ValueError(
                f"{where}: `label` is a list ({label!r}). For several "
                "labels per text pass --multi_label (`multi_label=True`) "
                "and write them as `labels`."
            )
        if label is None or (isinstance(label, str) and not label.strip()):
            raise ValueError(
                f"{where}: an empty `label`. Every example of a "
                "single-label file has one; for texts with no label use "
                "--multi_label."
            )
        return str(label)
    key = "labels" if "labels" in row else "label" if "label" in row else None
    if key is None:
        raise ValueError(
            f"{where}: no `labels` field (found {sorted(row)}). Write a "
            "list of names per text (`[]` for none)."
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
