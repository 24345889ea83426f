"""Texts to packed ids once, then batches cut to their longest row.

What the GLUE recipe (`keras_bert.fine_tuning.glue`) and a task model's `fit`
on raw strings (`keras_bert.models.Task`) both do: tokenize every text in
one pass of a `tf.data` pipeline, then batch the packed ids, in order or
shuffled per epoch (optionally grouping rows of like length), each batch
cut to its longest row.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.data.length_grouped_epochs import length_grouped_epochs
from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.data.trim_batch import trim_batch


def pack_texts(texts, preprocessor, batch_size=256):
    """Tokenizes and packs texts once, into numpy arrays.

    The preprocessor runs in a parallel `tf.data` map over batches of
    strings. Training and evaluating on the arrays is much cheaper than
    running the tokenizer's graph again on every pass, and one call for
    many splits builds that graph once.

    Args:
        texts: tuple of one or two str arrays `(num_examples,)`: single
            sentences, or the two sides of sentence pairs.
        preprocessor: `keras_bert.BertPreprocessor` (or any callable
            taking a batch of strings, or a tuple of two, and returning
            the backbone's input dict).
        batch_size: int. Strings tokenized per call.

    Returns:
        A dict of int32 arrays `(num_examples, sequence_length)`:
        `token_ids`, `segment_ids`, `padding_mask`.

    Example:
    ```python
    features = pack_texts(
        (np.array(["A man sleeps."]), np.array(["A man rests."])),
        preprocessor,
    )
    ```
    """
    texts = tuple(tf.constant(list(t), tf.string) for t in texts)
    if not 1 <= len(texts) <= 2:
        raise ValueError(
            "Expected one or two text arrays (sentences or sentence pairs). "
            f"Received: {len(texts)}"
        )

    def pack(*batch):
        # One text: a batch of strings; two: a tuple, which means a pair.
        return preprocessor(batch[0] if len(batch) == 1 else batch)

    dataset = (
        tf.data.Dataset.from_tensor_slices(texts)
        .batch(batch_size)
        .map(pack, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    return concatenate_batches(dataset.as_numpy_iterator())


def concatenate_batches(batches):
    """One dict of numpy arrays from dicts of batches, rows in order.

    Args:
        batches: iterable of dicts of numpy arrays, each a batch of rows.

    Returns:
        A dict of the same keys, every batch's rows concatenated.
    """
    parts = {}
    for batch in batches:
        for name, values in batch.items():
            parts.setdefault(name, []).append(values)
    return {name: np.concatenate(values) for name, values in parts.items()}


def packed_batches(
    features,
    labels=None,
    batch_size=32,
    shuffle=False,
    seed=None,
    trim_padding=True,
    first_epoch=None,
    num_epochs=None,
    group_by_length=False,
    sample_weight=None,
):
    """Batches of packed ids (with labels), for `fit`/`evaluate`/`predict`.

    With `trim_padding`, each batch is cut to its longest example
    (`keras_bert.data.trim_batch`): the columns dropped are padding in
    every row, which BERT's attention mask ignores, so the outputs do not
    change (up to float rounding) while short-sentence tasks such as SST-2
    run on a fraction of the positions. Cutting exactly beats padding up
    to a few lengths so that the static-shape fused kernels could run
    (rows `bucket_16` and `bucket_32` against `recipe`, section
    `recipe_steps` of `benchmarks/RESULTS.md`).

    Args:
        features: dict of int arrays `(num_examples, sequence_length)`, as
            `pack_texts` returns (padding at the end of each row).
        labels: array `(num_examples,)` (or a nested structure of such),
            or `None` (batches of features alone, e.g. for `predict`).
        batch_size: int.
        shuffle: bool. Reshuffle every epoch (for training).
        seed: int or `None`. Shuffle seed.
        trim_padding: bool or int. Cut each batch to its longest example
            (`True`, the default), or to it rounded up to a multiple of the
            int given.
        first_epoch: int or `None`. With `shuffle`, return epochs
            `first_epoch, ..., num_epochs - 1` (0-based) one after the
            other, each shuffled with a seed made from `seed` and its epoch
            number, so that a run resumed at epoch `k` sees exactly the
            batches an uninterrupted run sees from epoch `k` on (see
            `keras_bert.data.shuffled_epochs`). Pass
            `steps_per_epoch=ceil(num_examples / batch_size)` to `fit`.
            `None` (default): one epoch, reshuffled on every iteration.
        num_epochs: int. The run's number of epochs, with `first_epoch`.
        group_by_length: bool. With `shuffle` and `first_epoch`, batch
            examples of like length together
            (`keras_bert.data.length_grouped_epochs`, as Hugging Face's
            `group_by_length`): each epoch is shuffled, cut into groups of
            50 batches and each group sorted by length, so a trimmed batch
            holds little padding. Resumed runs replay the same batches.
        sample_weight: array `(num_examples,)` or `None`. Batched as a
            third element, after the labels.

    Returns:
        A `tf.data.Dataset` of `features`, `(features, labels)` or
        `(features, labels, sample_weight)` batches.

    Example:
    ```python
    features = {
        "token_ids": np.array([[2, 7, 3, 0], [2, 7, 8, 3]]),
        "segment_ids": np.zeros((2, 4), "int32"),
        "padding_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1]]),
    }
    for batch, labels in packed_batches(features, np.array([0, 1]), 1):
        batch["token_ids"].shape  # (1, 3), then (1, 4)
    ```
    """
    if group_by_length and not (shuffle and first_epoch is not None):
        raise ValueError(
            "`group_by_length=True` orders training epochs: pass "
            "`shuffle=True` and `first_epoch`/`num_epochs` too. Received: "
            f"shuffle={shuffle!r}, first_epoch={first_epoch!r}"
        )
    rows = (features,)
    if labels is not None:
        rows += (labels,)
    if sample_weight is not None:
        if labels is None:
            raise ValueError("`sample_weight` needs `labels`.")
        rows += (sample_weight,)
    num_examples = len(features["padding_mask"])
    if group_by_length:
        lengths = np.asarray(features["padding_mask"]).sum(axis=1)
        dataset = length_grouped_epochs(
            rows, lengths, batch_size, seed, first_epoch, num_epochs
        )
    elif shuffle and first_epoch is not None:
        dataset = tf.data.Dataset.from_tensor_slices(rows)
        dataset = shuffled_epochs(
            dataset, batch_size, seed, first_epoch, num_epochs
        )
    else:
        dataset = tf.data.Dataset.from_tensor_slices(rows)
        if shuffle:
            dataset = dataset.shuffle(
                num_examples, seed=seed, reshuffle_each_iteration=True
            )
        dataset = dataset.batch(batch_size)
    if trim_padding:
        multiple = 1 if trim_padding is True else int(trim_padding)
        dataset = dataset.map(
            lambda features, *rest: (trim_batch(features, multiple), *rest)
        )
    if len(rows) == 1:
        dataset = dataset.map(lambda *row: row[0])
    return dataset.prefetch(tf.data.AUTOTUNE)


def predict_packed(model, features, batch_size=64):
    """`model.predict` on packed ids, longest rows first; outputs in the
    rows' own order.

    Each batch is cut to its longest row (`trim_batch`), so running the
    rows sorted by length puts rows of like length in a batch and the
    batches hold almost no padding, as transformers' and
    sentence-transformers' own prediction loops do (in file order, SST-2
    dev's batches of 64 are each as wide as their longest sentence). A
    row's outputs do not depend on the rows beside it (up to float
    rounding).

    Args:
        model: a Keras model taking the packed ids' dict.
        features: dict of int arrays `(num_examples, sequence_length)`, as
            `pack_texts` returns.
        batch_size: int. Rows per `predict` batch.

    Returns:
        What `model.predict` returns (an array, or a structure of arrays),
        each array's rows in `features`' order.

    Example:
    ```python
    features = pack_texts((np.array(["a short one", "a longer text"]),),
                          preprocessor)
    logits = predict_packed(classifier, features)  # (2, num_classes)
    ```
    """
    lengths = np.asarray(features["padding_mask"]).sum(axis=1)
    order = np.argsort(-lengths, kind="stable")  # longest first
    dataset = packed_batches(
        {name: np.asarray(value)[order] for name, value in features.items()},
        batch_size=batch_size,
    )
    outputs = model.predict(dataset, verbose=0)
    rows = np.empty_like(order)
    rows[order] = np.arange(len(order))  # row i was predicted at rows[i]
    return keras.tree.map_structure(
        lambda output: np.asarray(output)[rows], outputs
    )
