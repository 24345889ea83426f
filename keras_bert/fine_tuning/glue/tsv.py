"""Reads a GLUE split from the TSV files GLUE's download script writes."""

import csv
import os

import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert.fine_tuning.glue.tasks import get_glue_task


def glue_split_path(task, split, data_dir):
    """The path of `split`'s TSV file under a GLUE data directory.

    Args:
        task: `GlueTask` or str.
        split: str. A split of the task, e.g. `"validation_matched"`.
        data_dir: str. The GLUE directory (holding `CoLA/`, `MNLI/`, ...).
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    _check_split(task, split)
    return os.path.join(data_dir, task.directory, task.splits[split].filename)


def read_glue_tsv(task, split, data_dir):
    """Reads one split of a GLUE task from its original TSV file.

    The files are tab-separated with no quoting: a `"` is part of the
    text. CoLA's train and dev files have no header; every other file
    has one, checked against the columns the task needs. Rows with the
    wrong number of fields are an error, except for QQP, whose train
    file has a few broken rows that are dropped (and counted in the log),
    as TFDS drops them. Blank lines are skipped.

    Args:
        task: `GlueTask` or str. The task, e.g. `"rte"`.
        split: str. `"train"`, `"validation"`, `"test"` (MNLI:
            `"validation_matched"`, `"test_mismatched"`, ...).
        data_dir: str. The GLUE directory (holding `RTE/`, `MNLI/`, ...).

    Returns:
        A dict of numpy arrays, one entry per example: `idx` (int32, the
        row's position among the file's data rows, as TFDS numbers them),
        each of the task's text features (str), and `label`: an int32
        label id, a float32 score for STS-B, `-1` for test splits.

    Example:
    ```python
    examples = read_glue_tsv("rte", "validation", "/data/glue")
    examples["sentence1"][0], examples["label"][0]
    ```
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    path = glue_split_path(task, split, data_dir)
    layout = task.splits[split]
    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise FileNotFoundError(
            f"GLUE task {task.name!r}, split {split!r}: no file {path}. "
            f"Expected {task.directory}/{layout.filename} under the GLUE "
            f"directory --data_dir={data_dir} (the layout GLUE's "
            "download_glue_data.py writes). Download the task there or "
            "point --data_dir at the directory that holds it."
        )

    # GFile yields lines with their line ends, as `open(newline="")` does.
    with tf.io.gfile.GFile(path, "r") as f:
        rows = [
            (line, row)
            for line, row in _numbered_rows(f)
            if row  # blank lines
        ]
    if layout.header:
        if not rows:
            raise ValueError(f"{path} is empty: expected a header line.")
        columns = [c.lstrip("\ufeff") for c in rows.pop(0)[1]]
    else:
        columns = list(layout.columns)
    if not rows:
        raise ValueError(
            f"{path} has no examples. A GLUE {task.name} {split} file has "
            f"{'a header and ' if layout.header else ''}one line per example."
        )

    needed = list(task.text_features.values())
    if layout.labelled:
        needed.append(task.label_column)
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(
            f"{path}: the header has no column {', '.join(missing)}. "
            f"Found columns {columns}; a GLUE {task.name} {split} file has "
            f"{list(layout.columns)}."
        )
    positions = {name: columns.index(name) for name in needed}

    examples = {"idx": []}
    examples.update({feature: [] for feature in task.text_features})
    examples["label"] = []
    skipped = []
    for idx, (line, row) in enumerate(rows):
        if len(row) != len(columns):
            if task.skip_malformed_rows:
                skipped.append(line)
                continue
            raise ValueError(
                f"{path}, line {line}: expected {len(columns)} tab-separated "
                f"fields ({', '.join(columns)}), found {len(row)}. GLUE "
                "files are tab-separated and unquoted; check that the file "
                "was not re-saved with quoting or a different separator."
            )
        examples["idx"].append(idx)
        for feature, column in task.text_features.items():
            examples[feature].append(row[positions[column]])
        if layout.labelled:
            value = row[positions[task.label_column]]
            examples["label"].append(_parse_label(task, value, path, line))
        else:
            examples["label"].append(-1)
    if skipped:
        logging.warning(
            "%s: skipped %d malformed rows (wrong number of fields), "
            "lines %s%s.",
            path,
            len(skipped),
            ", ".join(map(str, skipped[:10])),
            ", ..." if len(skipped) > 10 else "",
        )
    if not examples["idx"]:
        raise ValueError(f"{path} has no well-formed examples.")

    result = {"idx": np.asarray(examples.pop("idx"), "int32")}
    label = examples.pop("label")
    for feature, texts in examples.items():
        result[feature] = np.asarray(texts, dtype=object)
    result["label"] = np.asarray(
        label, "float32" if task.is_regression else "int32"
    )
    return result


def _numbered_rows(f):
    reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
    for row in reader:
        yield reader.line_num, row


def _parse_label(task, value, path, line):
    if task.is_regression:
        try:
            return float(value)
        except ValueError:
            raise ValueError(
                f"{path}, line {line}: {task.label_column} {value!r} is not "
                f"a number; {task.name} labels are scores such as 3.8."
            ) from None
    if value not in task.labels:
        raise ValueError(
            f"{path}, line {line}: label {value!r} is not a {task.name} "
            f"label. Valid labels: {', '.join(task.labels)}."
        )
    return task.labels.index(value)


def _check_split(task, split):
    if split not in task.splits:
        raise ValueError(
            f"GLUE task {task.name!r} has no split {split!r}. Its splits: "
            f"{', '.join(task.splits)}."
        )
