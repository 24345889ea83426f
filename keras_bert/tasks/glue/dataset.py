"""Turns GLUE examples into model inputs: packed ids, then batches."""

import numpy as np
import tensorflow as tf

from keras_bert.data.length_grouped_epochs import length_grouped_epochs
from keras_bert.data.shuffled_epochs import shuffled_epochs
from keras_bert.data.trim_batch import trim_batch
from keras_bert.tasks.glue.tasks import get_glue_task


def preprocess_texts(texts, preprocessor, batch_size=256):
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
    features = preprocess_texts(
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
    parts = {}
    for features in dataset.as_numpy_iterator():
        for name, values in features.items():
            parts.setdefault(name, []).append(values)
    return {name: np.concatenate(values) for name, values in parts.items()}


def preprocess_glue(task, examples, preprocessor, batch_size=256):
    """`preprocess_texts` on a GLUE split's text features, in order.

    Args:
        task: `GlueTask` or str.
        examples: dict of numpy arrays, as `load_glue` returns.
        preprocessor: `keras_bert.BertPreprocessor`.
        batch_size: int. Strings tokenized per call.

    Example:
    ```python
    dev = load_glue("rte", "validation", data_dir)
    logits = classifier.predict(preprocess_glue("rte", dev, preprocessor))
    ```
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    texts = tuple(examples[feature] for feature in task.text_features)
    return preprocess_texts(texts, preprocessor, batch_size)


def preprocess_glue_splits(splits, preprocessor, batch_size=256):
    """`preprocess_glue` on several splits in one pass of the tokenizer.

    Building the tokenizer's graph is the slow part for small splits, so
    the texts of every split are packed together and cut apart again.

    Args:
        splits: list of `(task, examples)`; every task with the same
            number of texts (MNLI with AX is fine, MNLI with SST-2 not).
        preprocessor: `keras_bert.BertPreprocessor`.
        batch_size: int. Strings tokenized per call.

    Returns:
        A list of feature dicts, one per split, in order.

    Example:
    ```python
    train_features, dev_features = preprocess_glue_splits(
        [("rte", train), ("rte", dev)], preprocessor
    )
    ```
    """
    columns = []
    for task, examples in splits:
        task = get_glue_task(task) if isinstance(task, str) else task
        columns.append([examples[feature] for feature in task.text_features])
    if len({len(texts) for texts in columns}) != 1:
        raise ValueError(
            "Expected splits with the same number of texts each. Received "
            f"{[len(texts) for texts in columns]}."
        )
    texts = tuple(np.concatenate(side) for side in zip(*columns))
    features = preprocess_texts(texts, preprocessor, batch_size)
    ends = np.cumsum([len(texts[0]) for texts in columns])
    starts = np.concatenate([[0], ends[:-1]])
    return [
        {name: values[start:end] for name, values in features.items()}
        for start, end in zip(starts, ends)
    ]


def glue_dataset(
    features,
    labels,
    batch_size,
    shuffle=False,
    seed=None,
    trim_padding=True,
    first_epoch=None,
    num_epochs=None,
    group_by_length=False,
):
    """Batches of `(features, label)` from packed ids, for `fit`/`predict`.

    With `trim_padding`, each batch is cut to its longest example
    (`keras_bert.data.trim_batch`): the columns dropped are padding in
    every row, which BERT's attention mask ignores, so the outputs do not
    change (up to float rounding) while short-sentence tasks such as SST-2
    train several times faster. Cutting exactly beats padding up to a few
    lengths so that the static-shape fused kernels could run (MiniLM on
    SST-2: 1.165x the step of lengths rounded up to 32, fused;
    `benchmarks/recipe_steps.py`).

    Args:
        features: dict of int arrays `(num_examples, sequence_length)`, as
            `preprocess_glue` returns (padding at the end of each row).
        labels: array `(num_examples,)`.
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

    Example:
    ```python
    train = load_glue("rte", "train", data_dir)
    dataset = glue_dataset(
        preprocess_glue("rte", train, preprocessor), train["label"], 32,
        shuffle=True, seed=0,
    )
    classifier.fit(dataset, epochs=3)
    ```
    """
    if group_by_length and not (shuffle and first_epoch is not None):
        raise ValueError(
            "`group_by_length=True` orders training epochs: pass "
            "`shuffle=True` and `first_epoch`/`num_epochs` too. Received: "
            f"shuffle={shuffle!r}, first_epoch={first_epoch!r}"
        )
    if group_by_length:
        lengths = np.asarray(features["padding_mask"]).sum(axis=1)
        dataset = length_grouped_epochs(
            (features, labels),
            lengths,
            batch_size,
            seed,
            first_epoch,
            num_epochs,
        )
    elif shuffle and first_epoch is not None:
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        dataset = shuffled_epochs(
            dataset, batch_size, seed, first_epoch, num_epochs
        )
    else:
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        if shuffle:
            dataset = dataset.shuffle(
                len(labels), seed=seed, reshuffle_each_iteration=True
            )
        dataset = dataset.batch(batch_size)
    if trim_padding:
        multiple = 1 if trim_padding is True else int(trim_padding)
        dataset = dataset.map(
            lambda features, labels: (trim_batch(features, multiple), labels)
        )
    return dataset.prefetch(tf.data.AUTOTUNE)
