"""Batches that never hold the same text twice, for in-batch negatives."""

import numpy as np
import tensorflow as tf

from keras_bert.data.shuffled_epochs import EPOCH_SEED_STRIDE


def no_duplicates_batches(texts, batch_size, seed=0):
    """One shuffled epoch of index batches, no text twice in a batch.

    What sentence-transformers' `NoDuplicatesBatchSampler` does in one
    pass: the examples are shuffled, then each batch takes, in that
    order, the next examples none of whose texts (any column) is in the
    batch yet; an example that clashes waits for a later batch, keeping
    its place. Texts are compared exactly, as strings. Every example is
    in exactly one batch; the last batches may be smaller than
    `batch_size` when the examples left share texts (e.g. many questions
    about one paragraph).

    Args:
        texts: list of tuples of str, one tuple per example (e.g.
            `(anchor, positive)`).
        batch_size: int. Examples per full batch.
        seed: int. Seed of the shuffle.

    Returns:
        A list of lists of int: the examples' indices, batch by batch.

    Example:
    ```python
    texts = [("q1", "p"), ("q2", "p"), ("q3", "r")]
    no_duplicates_batches(texts, batch_size=2)  # e.g. [[1, 2], [0]]
    ```
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise ValueError(
            "Received an invalid value for argument `batch_size`, expected "
            f"a positive integer. Received: batch_size={batch_size!r}"
        )
    if batch_size <= 0:
        raise ValueError(
            "Received an invalid value for argument `batch_size`, expected "
            f"a positive integer. Received: batch_size={batch_size!r}"
        )
    order = np.random.default_rng(seed).permutation(len(texts))
    values = [frozenset(texts[index]) for index in range(len(texts))]
    remaining = [int(index) for index in order]
    batches = []
    while remaining:
        batch, seen, deferred = [], set(), []
        for position, index in enumerate(remaining):
            if len(batch) == batch_size:
                deferred.extend(remaining[position:])
                break
            if seen.isdisjoint(values[index]):
                batch.append(index)
                seen.update(values[index])
            else:
                deferred.append(index)
        batches.append(batch)
        remaining = deferred
    return batches


def no_duplicates_epochs(
    features, texts, batch_size, seed, first_epoch, num_epochs
):
    """Batches of epochs `first_epoch, ..., num_epochs - 1`, no duplicates.

    Each epoch is `no_duplicates_batches(texts, batch_size, seed')` with a
    seed made from `seed` and the epoch alone (as
    `keras_bert.data.shuffled_epochs`), so a resumed run trains on the
    batches an uninterrupted one does, cut to its first
    `ceil(len(texts) / batch_size)` batches: the steps an epoch has (as in
    sentence-transformers' trainer, whose schedule counts that many
    batches and whose one-epoch run stops there). Examples in batches past
    that (only when duplicates forced extra, smaller batches) sit out
    that epoch.

    Args:
        features: a structure (e.g. dict) of arrays or tensors whose first
            axis is the example, e.g. the packed token ids of anchors and
            positives.
        texts: list of tuples of str, one per example: what must not
            repeat within a batch.
        batch_size: int. Examples per batch.
        seed: int or `None`. The run's seed; `None` means `0`.
        first_epoch: int. The first epoch to return (0-based).
        num_epochs: int. The run's number of epochs.

    Returns:
        A `tf.data.Dataset` of `features` batches.

    Example:
    ```python
    texts = [("q1", "p"), ("q2", "p"), ("q3", "r"), ("q4", "s")]
    features = {"ids": np.arange(4)}
    dataset = no_duplicates_epochs(features, texts, 2, 0, 0, 1)
    [batch["ids"].numpy() for batch in dataset]  # e.g. [[1, 2], [0, 3]]
    ```
    """
    if not 0 <= first_epoch < (num_epochs or 0):
        raise ValueError(
            "Expected 0 <= `first_epoch` < `num_epochs`. Received: "
            f"first_epoch={first_epoch!r}, num_epochs={num_epochs!r}"
        )
    num_examples = len(texts)
    for leaf in tf.nest.flatten(features):
        if int(leaf.shape[0]) != num_examples:
            raise ValueError(
                f"Expected features with one row per text tuple "
                f"({num_examples}). Received a feature of shape "
                f"{tuple(leaf.shape)}."
            )
    steps = -(-num_examples // batch_size)
    base_seed = 0 if seed is None else int(seed)
    batches = []
    for epoch in range(first_epoch, num_epochs):
        epoch_seed = base_seed * EPOCH_SEED_STRIDE + epoch
        batches += no_duplicates_batches(texts, batch_size, epoch_seed)[:steps]
    indices = tf.ragged.constant(batches, dtype=tf.int64)
    features = tf.nest.map_structure(tf.convert_to_tensor, features)
    return tf.data.Dataset.from_tensor_slices(indices).map(
        lambda batch: tf.nest.map_structure(
            lambda leaf: tf.gather(leaf, batch), features
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
