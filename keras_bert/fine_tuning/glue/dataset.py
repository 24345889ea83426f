"""Turns GLUE examples into model inputs: packed ids, then batches."""

import numpy as np

from keras_bert.data.packed_batches import pack_texts
from keras_bert.data.packed_batches import packed_batches
from keras_bert.fine_tuning.glue.tasks import get_glue_task


def preprocess_glue(task, examples, preprocessor, batch_size=256):
    """`keras_bert.data.pack_texts` on a GLUE split's text features, in order.

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
    return pack_texts(texts, preprocessor, batch_size)


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
    features = pack_texts(texts, preprocessor, batch_size)
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

    `keras_bert.data.packed_batches` with labels: each batch cut to its
    longest example, in order or shuffled per epoch, optionally of
    like-length examples (see its arguments).

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
    return packed_batches(
        features,
        labels,
        batch_size,
        shuffle=shuffle,
        seed=seed,
        trim_padding=trim_padding,
        first_epoch=first_epoch,
        num_epochs=num_epochs,
        group_by_length=group_by_length,
    )
