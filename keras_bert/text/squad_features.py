"""SQuAD windows and labels, built by TensorFlow ops on batches of examples.

A context longer than a window is read in overlapping windows, as the
original BERT `run_squad.py` does: each window is
`[CLS] question [SEP] context tokens [SEP]`, padded to `max_seq_length`.
`make_windows` (`keras_bert.text.question_windows`) builds them for a batch
of `(question, context)` strings with TensorFlow and tensorflow-text ops
only, so the same code makes training features in `tf.data` and splits
contexts inside an exported SavedModel. `squad_dataset` and
`squad_features` apply it to a dict of examples (see
`read_squad_examples`).
"""

import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.text.question_windows import check_window_arguments
from keras_bert.text.question_windows import make_windows

# The model's inputs among the feature fields.
INPUT_NAMES = BACKBONE_INPUTS
LABEL_NAMES = ("start_positions", "end_positions")
# Fields a training batch keeps; evaluation keeps every field.
TRAINING_NAMES = INPUT_NAMES + LABEL_NAMES + ("example_index",)


def trainable_examples(examples):
    """The examples training can learn from, with their indices.

    Drops those `read_squad_examples` marked untrainable (an answer not
    found in its context, an empty question or context), logging how many.

    Args:
        examples: dict of lists, as from `read_squad_examples`. Without a
            `trainable` field every example is kept.

    Returns:
        `(examples, indices)`: the kept examples (same fields) and their
        indices in `examples`.
    """
    count = len(examples["question"])
    trainable = np.asarray(examples.get("trainable", [True] * count), bool)
    indices = np.flatnonzero(trainable)
    if len(indices) < count:
        logging.warning(
            "Training skips %d of %d SQuAD examples (answer not found in "
            "the context, or an empty question, context or answer; see the "
            "log of read_squad_examples).",
            count - len(indices),
            count,
        )
    kept = {
        name: [values[i] for i in indices] for name, values in examples.items()
    }
    return kept, indices


def squad_dataset(
    examples,
    tokenizer,
    batch_size=32,
    training=False,
    max_seq_length=384,
    doc_stride=128,
    max_query_length=64,
    shuffle_buffer_size=10000,
    seed=None,
    examples_per_call=256,
):
    """A `tf.data.Dataset` of batched windows of SQuAD examples.

    Examples go through `make_windows` `examples_per_call` at a time, so
    tokenizing is batched and no Python runs per example.

    For training, untrainable examples are skipped (see
    `trainable_examples`); the examples, then their windows, are shuffled
    anew each epoch; batches are complete (the last partial batch is
    dropped) with static shapes `(batch_size, max_seq_length)`; each holds
    `token_ids`, `segment_ids`, `padding_mask`, `start_positions`,
    `end_positions` and `example_index`. Every window of an example is
    kept, those without the answer labelled at `[CLS]`.

    For evaluation, every window of every example comes in order (the
    windows of example 0, then of example 1, ...), with every field of
    `make_windows`; the last batch may be smaller.

    `example_index` is the example's index in `examples`. Map the batches
    to `(inputs, labels)` for `fit`, e.g. `dataset.map(lambda f: ({k: f[k]
    for k in INPUT_NAMES}, {k: f[k] for k in LABEL_NAMES}))`.

    Args:
        examples: dict of lists, as from `read_squad_examples`: at least
            `question` and `context`; labels need `answer_start` and
            `answer_text` (required for training).
        tokenizer: `keras_bert.BertTokenizer`.
        batch_size: int. Windows per batch. Defaults to `32`.
        training: bool. Shuffle, skip untrainable examples and drop the last
            partial batch. Defaults to `False`.
        max_seq_length, doc_stride, max_query_length: int. Window sizes,
            see `make_windows`. Default to `384`, `128` and `64`.
        shuffle_buffer_size: int. Windows shuffled together in training.
            Defaults to `10000`.
        seed: optional int. Seed of the training shuffles.
        examples_per_call: int. Examples tokenized and windowed together.
            Defaults to `256`.

    Returns:
        A `tf.data.Dataset` of dicts of int32 tensors: `(batch_size,
        max_seq_length)` per-token fields and `(batch_size,)` per-window
        fields.

    Example:

    ```python
    examples = read_squad_examples("train-v1.1.json")
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(checkpoint)
    train = squad_dataset(examples, tokenizer, batch_size=32, training=True)
    ```
    """
    check_window_arguments(max_seq_length, doc_stride, max_query_length)
    indices = np.arange(len(examples["question"]))
    with_answers = "answer_start" in examples and "answer_text" in examples
    if training:
        if not with_answers:
            raise ValueError(
                "Training needs answers: `examples` should hold "
                "`answer_start` and `answer_text` (as read_squad_examples "
                f"returns). Received fields {sorted(examples)}."
            )
        examples, indices = trainable_examples(examples)
    columns = {
        "question": _string_list(examples["question"]),
        "context": _string_list(examples["context"]),
        "example_index": tf.constant(indices, tf.int32),
    }
    if with_answers:
        columns["answer_start"] = tf.constant(
            np.asarray(examples["answer_start"], np.int64)
        )
        columns["answer_text"] = _string_list(examples["answer_text"])

    def windows(batch):
        features = make_windows(
            tokenizer,
            batch["question"],
            batch["context"],
            answer_starts=batch.get("answer_start"),
            answer_texts=batch.get("answer_text"),
            max_seq_length=max_seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
        )
        features["example_index"] = tf.gather(
            batch["example_index"], features["example_index"]
        )
        if training:
            features = {name: features[name] for name in TRAINING_NAMES}
        return features

    dataset = tf.data.Dataset.from_tensor_slices(columns)
    if training:
        dataset = dataset.shuffle(
            max(len(indices), 1), seed=seed, reshuffle_each_iteration=True
        )
    dataset = dataset.batch(examples_per_call).map(
        windows, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    dataset = dataset.unbatch()
    if training:
        dataset = dataset.shuffle(
            shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True
        )
    dataset = dataset.batch(batch_size, drop_remainder=training)
    return dataset.prefetch(tf.data.AUTOTUNE)


def squad_features(
    examples,
    tokenizer,
    max_seq_length=384,
    doc_stride=128,
    max_query_length=64,
    examples_per_call=256,
):
    """Every window of every example, in order, as numpy arrays.

    The windows of `squad_dataset(..., training=False)`, built eagerly
    `examples_per_call` examples at a time (nothing to trace) and gathered
    in memory: for post-processing, which matches model outputs to windows
    row by row, and for counting windows.

    Args:
        examples: dict of lists, as from `read_squad_examples`: at least
            `question` and `context`; labels need `answer_start` and
            `answer_text`.
        tokenizer: `keras_bert.BertTokenizer`.
        max_seq_length, doc_stride, max_query_length, examples_per_call:
            as for `squad_dataset`.

    Returns:
        A dict of int32 numpy arrays with the fields of `make_windows`,
        `(num_windows, max_seq_length)` or `(num_windows,)`;
        `example_index` is the example's index in `examples`.
    """
    check_window_arguments(max_seq_length, doc_stride, max_query_length)
    count = len(examples["question"])
    with_answers = "answer_start" in examples and "answer_text" in examples
    chunks = []
    for begin in range(0, max(count, 1), examples_per_call):
        end = min(begin + examples_per_call, count)
        answers = {}
        if with_answers:
            answers = {
                "answer_starts": tf.constant(
                    np.asarray(examples["answer_start"][begin:end], np.int64)
                ),
                "answer_texts": _string_list(
                    examples["answer_text"][begin:end]
                ),
            }
        chunk = make_windows(
            tokenizer,
            _string_list(examples["question"][begin:end]),
            _string_list(examples["context"][begin:end]),
            max_seq_length=max_seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
            **answers,
        )
        chunk = {name: value.numpy() for name, value in chunk.items()}
        chunk["example_index"] += begin
        chunks.append(chunk)
    return {
        name: np.concatenate([chunk[name] for chunk in chunks])
        for name in chunks[0]
    }


def _string_list(values):
    return tf.constant(list(values), dtype=tf.string, shape=[len(values)])
