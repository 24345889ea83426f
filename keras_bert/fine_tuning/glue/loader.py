"""Loads a GLUE split from whichever source is there: TSV files or TFDS."""

import os

import numpy as np

from keras_bert.fine_tuning.glue.tasks import get_glue_task
from keras_bert.fine_tuning.glue.tfds import GlueDataNotFoundError
from keras_bert.fine_tuning.glue.tfds import load_glue_tfds
from keras_bert.fine_tuning.glue.tsv import read_glue_tsv

GLUE_DOWNLOAD_SCRIPT = (
    "https://github.com/nyu-mll/GLUE-baselines/blob/master/"
    "download_glue_data.py"
)


def load_glue(task, split, data_dir=None, tfds_data_dir=None):
    """Reads one split of a GLUE task.

    With `data_dir`, from the TSV files of a GLUE directory (as GLUE's
    `download_glue_data.py` lays it out); without, from TFDS
    (`glue/<task>`), downloading it if needed and possible. When neither
    is there, raises `GlueDataNotFoundError` listing what was looked for
    and how to provide it.

    Args:
        task: `GlueTask` or str.
        split: str. E.g. `"train"`, `"validation_matched"`, `"test"`.
        data_dir: str or `None`. A GLUE directory.
        tfds_data_dir: str or `None`. TFDS's data directory.

    Returns:
        A dict of numpy arrays: `idx`, the text features and `label`.

    Example:
    ```python
    train = load_glue("sst2", "train", data_dir="/data/glue")
    ```
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    if data_dir:
        return read_glue_tsv(task, split, data_dir)
    try:
        return load_glue_tfds(task, split, data_dir=tfds_data_dir)
    except GlueDataNotFoundError as error:
        raise GlueDataNotFoundError(
            missing_glue_data_message(task, str(error))
        ) from None


def missing_glue_data_message(task, reason):
    """Says what was looked for, and how to provide a GLUE task's data.

    Args:
        task: `GlueTask`.
        reason: str. Why TFDS could not provide it.
    """
    files = "\n".join(
        "      " + os.path.join("GLUE_DIR", task.directory, split.filename)
        for split in task.splits.values()
    )
    return (
        f"No data for GLUE task {task.name!r}. Looked for the TFDS dataset "
        f"{task.tfds_name}: {reason}\n"
        "Provide the data in one of these ways:\n"
        "  - pass --data_dir=GLUE_DIR, a GLUE directory with these files "
        "(test files are optional):\n"
        f"{files}\n"
        f"    as GLUE's download script writes them ({GLUE_DOWNLOAD_SCRIPT});"
        "\n"
        f"  - or, on a machine with network, run `tfds build "
        f"{task.tfds_name}` and copy the TFDS data directory here "
        "(pass it as --tfds_data_dir if it is not ~/tensorflow_datasets)."
    )


def split_holdout(examples, fraction, seed=0):
    """Splits examples into a training part and a held-out part.

    For tasks whose dev set is not at hand (e.g. MRPC from the Microsoft
    train file alone). The split depends only on `seed`, not on the
    training seed, so runs with different seeds evaluate on the same
    examples.

    Args:
        examples: dict of equal-length numpy arrays (`load_glue`'s result).
        fraction: float in `(0, 1)`. Share of examples held out.
        seed: int. Seed of the split.

    Returns:
        `(train, holdout)`, two dicts like `examples`.

    Example:
    ```python
    train, holdout = split_holdout(load_glue("mrpc", "train", d), 0.1)
    ```
    """
    if not 0 < fraction < 1:
        raise ValueError(
            "Received an invalid value for argument `fraction`, expected a "
            f"float in (0, 1). Received: fraction={fraction!r}"
        )
    count = len(examples["idx"])
    holdout_count = int(round(count * fraction))
    if not 0 < holdout_count < count:
        raise ValueError(
            f"Holding out {fraction} of {count} examples leaves an empty "
            "part; use more examples or another fraction."
        )
    order = np.random.default_rng(seed).permutation(count)
    holdout = np.sort(order[:holdout_count])
    train = np.sort(order[holdout_count:])
    return (
        {name: values[train] for name, values in examples.items()},
        {name: values[holdout] for name, values in examples.items()},
    )
