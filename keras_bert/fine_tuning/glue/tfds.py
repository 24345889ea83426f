"""Reads a GLUE split from TensorFlow Datasets (`glue/<task>`)."""

import socket

import numpy as np

from keras_bert.fine_tuning.glue.tasks import get_glue_task

# Where TFDS's GLUE builder downloads every task from.
GLUE_DOWNLOAD_HOST = "dl.fbaipublicfiles.com"


class GlueDataNotFoundError(FileNotFoundError):
    """No copy of a GLUE task here, and no way to download one."""


def load_glue_tfds(task, split, data_dir=None, download=True):
    """Reads one split of a GLUE task from TFDS.

    Uses the TFDS dataset prepared under `data_dir` if there is one;
    otherwise downloads and prepares it when `download` is true and the
    GLUE host answers. With no network, fails at once with
    `GlueDataNotFoundError` rather than retrying the download.

    TFDS builds MRPC from Microsoft's own files and GLUE's dev ids, so its
    MRPC `idx` counts rows of `msr_paraphrase_train.txt` rather than of
    GLUE's `MRPC/train.tsv`; every other task numbers rows as the TSV
    reader does.

    Args:
        task: `GlueTask` or str.
        split: str. A TFDS split name (the same names as
            `GlueTask.splits`).
        data_dir: str or `None`. TFDS's data directory. Defaults to TFDS's
            default (`~/tensorflow_datasets`).
        download: bool. Whether to download a missing dataset.

    Returns:
        A dict of numpy arrays sorted by `idx`, as `read_glue_tsv` returns:
        `idx`, the text features (str) and `label`.

    Example:
    ```python
    examples = load_glue_tfds("sst2", "validation")
    ```
    """
    import tensorflow_datasets as tfds

    task = get_glue_task(task) if isinstance(task, str) else task
    builder = tfds.builder(task.tfds_name, data_dir=data_dir)
    if not builder.is_prepared():
        if not download:
            raise GlueDataNotFoundError(
                f"TFDS dataset {task.tfds_name} is not prepared under "
                f"{builder.data_dir} and download=False."
            )
        reason = glue_download_unavailable()
        if reason:
            raise GlueDataNotFoundError(
                f"TFDS dataset {task.tfds_name} is not prepared under "
                f"{builder.data_dir} and cannot be downloaded: {reason}."
            )
        builder.download_and_prepare()
    dataset = builder.as_dataset(split=split, shuffle_files=False)
    columns = {}
    for batch in tfds.as_numpy(dataset.batch(4096)):
        for name, values in batch.items():
            columns.setdefault(name, []).append(values)
    if not columns:
        raise ValueError(f"TFDS {task.tfds_name} split {split!r} is empty.")
    columns = {name: np.concatenate(parts) for name, parts in columns.items()}
    # TFDS stores examples in hashed-key order; restore the file's order.
    order = np.argsort(columns["idx"], kind="stable")
    examples = {"idx": columns["idx"][order].astype("int32")}
    for feature in task.text_features:
        examples[feature] = np.asarray(
            [text.decode("utf-8") for text in columns[feature][order]],
            dtype=object,
        )
    examples["label"] = columns["label"][order].astype(
        "float32" if task.is_regression else "int32"
    )
    return examples


def glue_download_unavailable(timeout=3.0):
    """Why GLUE's download host cannot be reached, or `None` if it can.

    Args:
        timeout: float. Seconds to wait for a connection.
    """
    try:
        socket.create_connection((GLUE_DOWNLOAD_HOST, 443), timeout).close()
    except OSError as error:
        return f"no connection to {GLUE_DOWNLOAD_HOST} ({error})"
    return None
