"""Batches of whole documents read in windows, for `fit` and `evaluate`.

What `pack_texts` and `packed_batches` are to texts packed one row each,
these are to documents cut into several windows each
(`keras_bert.text.document_windows.DocumentWindows`): every document is
tokenized and cut once, its windows kept flat (no document padded to the
longest one's windows), and each batch gathers the windows of its
documents, `(batch, windows, sequence_length)`, cut to the batch's most
windows and its longest row. The document, not the window, is the unit:
a batch holds `batch_size` documents with their labels.
"""

import numpy as np
import tensorflow as tf

from keras_bert.data.length_grouped_epochs import length_grouped_epochs
from keras_bert.data.packed_batches import concatenate_batches
from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.data.trim_batch import trim_batch


def pack_windows(texts, cut, batch_size=64):
    """Cuts documents into windows once, into flat numpy arrays.

    Args:
        texts: 1-D array of str, one document each.
        cut: callable from a 1-D string tensor to a dict of flat windows
            with a `document` row each
            (`DocumentWindows.flat_function()`).
        batch_size: int. Documents cut per call.

    Returns:
        A dict of int32 arrays: the inputs `(num_windows,
        sequence_length)` and `document` `(num_windows,)`, each window's
        index in `texts` (non-decreasing).
    """
    dataset = (
        tf.data.Dataset.from_tensor_slices(tf.constant(list(texts), tf.string))
        .batch(batch_size)
        .map(cut, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    return concatenate_batches(
        # Each call numbers its documents from 0: from the batch's first.
        dict(windows, document=windows["document"] + index * batch_size)
        for index, windows in enumerate(dataset.as_numpy_iterator())
    )


def window_batches(
    windows,
    labels=None,
    batch_size=32,
    shuffle=False,
    seed=None,
    first_epoch=None,
    num_epochs=None,
    group_by_length=False,
    sample_weight=None,
):
    """Batches of documents' windows (with labels), as `packed_batches`.

    The arguments after `windows` mean what they mean for
    `keras_bert.data.packed_batches`: in order, or with `shuffle` and
    `first_epoch` the epochs of a run each shuffled by `(seed, epoch)`
    (replayable on resume), with `group_by_length` in groups of 50
    batches sorted by the documents' token counts.

    Args:
        windows: `pack_windows`' dict.
        labels: array `(num_documents,)` (or a nested structure of such),
            or `None`.
        batch_size: int. Documents per batch.
        shuffle, seed, first_epoch, num_epochs, group_by_length,
            sample_weight: as `packed_batches`.

    Returns:
        A `tf.data.Dataset` of `features`, `(features, labels)` or
        `(features, labels, sample_weight)` batches; `features` holds the
        inputs `(batch, windows, length)`, padded with windows of padding
        only.

    Example:
    ```python
    windows = {
        "token_ids": np.array([[2, 5, 3], [2, 6, 3], [2, 7, 3]]),
        "segment_ids": np.zeros((3, 3), "int32"),
        "padding_mask": np.ones((3, 3), "int32"),
        "document": np.array([0, 0, 1]),
    }
    for batch, labels in window_batches(windows, np.array([1, 0]), 2):
        batch["token_ids"].shape  # (2, 2, 3): document 1 padded
    ```
    """
    if group_by_length and not (shuffle and first_epoch is not None):
        raise ValueError(
            "`group_by_length=True` orders training epochs: pass "
            "`shuffle=True` and `first_epoch`/`num_epochs` too. Received: "
            f"shuffle={shuffle!r}, first_epoch={first_epoch!r}"
        )
    document = np.asarray(windows["document"], np.int64)
    num_documents = int(document[-1]) + 1 if len(document) else 0
    rows = (np.arange(num_documents, dtype=np.int64),)
    if labels is not None:
        rows += (labels,)
    if sample_weight is not None:
        if labels is None:
            raise ValueError("`sample_weight` needs `labels`.")
        rows += (sample_weight,)
    if group_by_length:
        lengths = np.bincount(
            document,
            weights=np.asarray(windows["padding_mask"]).sum(axis=1),
            minlength=num_documents,
        )
        dataset = length_grouped_epochs(
            rows, lengths, batch_size, seed, first_epoch, num_epochs
        )
    elif shuffle and first_epoch is not None:
        dataset = shuffled_epochs(
            tf.data.Dataset.from_tensor_slices(rows),
            batch_size,
            seed,
            first_epoch,
            num_epochs,
        )
    else:
        dataset = tf.data.Dataset.from_tensor_slices(rows)
        if shuffle:
            dataset = dataset.shuffle(
                num_documents, seed=seed, reshuffle_each_iteration=True
            )
        dataset = dataset.batch(batch_size)
    by_document = {
        name: tf.RaggedTensor.from_value_rowids(
            tf.constant(values), document, nrows=num_documents
        )
        for name, values in windows.items()
        if name != "document"
    }

    def gather(documents, *rest):
        features = {
            name: tf.gather(values, documents).to_tensor()
            for name, values in by_document.items()
        }
        features = trim_batch(features, multiple=1)
        return (features, *rest) if rest else features

    return dataset.map(gather).prefetch(tf.data.AUTOTUNE)
