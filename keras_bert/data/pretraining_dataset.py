"""`tf.data` input pipelines for `BertMaskedLM.fit`.

Both functions return batches of `(features, labels)` where `features` has
int32 `token_ids`, `segment_ids`, `padding_mask` `(batch, max_seq_length)`
and `masked_positions` `(batch, max_predictions_per_seq)`, and `labels`
is `{"mlm_logits": masked_lm_ids, "nsp_logits": next_sentence_labels}`.
"""

import itertools
import random

import tensorflow as tf

from keras_bert.data.corpus import expand_input_files
from keras_bert.data.corpus import read_documents
from keras_bert.data.dynamic_masker import DynamicMasker
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS


def parse_pretraining_example(
    serialized, max_seq_length, max_predictions_per_seq
):
    """Parses original-layout Examples into `BertMaskedLM` inputs.

    Args:
        serialized: string tensor of serialized `tf.train.Example`s (a
            batch, shape `(batch_size,)`).
        max_seq_length: int. Length of the sequence features in the files.
        max_predictions_per_seq: int. Length of the prediction features.

    Returns:
        A tuple `(features, labels)`.
    """
    schema = {
        name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    for name in ("masked_lm_positions", "masked_lm_ids"):
        schema[name] = tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.int64
        )
    schema["masked_lm_weights"] = tf.io.FixedLenFeature(
        [max_predictions_per_seq], tf.float32
    )
    schema["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    example = tf.io.parse_example(serialized, schema)
    # A weight-0 slot must read as position 0 and label 0 ([PAD]), which
    # BertMaskedLM's loss and accuracy ignore.
    used = tf.cast(example["masked_lm_weights"] > 0, tf.int64)
    features = {
        "token_ids": example["input_ids"],
        "segment_ids": example["segment_ids"],
        "padding_mask": example["input_mask"],
        "masked_positions": example["masked_lm_positions"] * used,
    }
    labels = {
        "mlm_logits": example["masked_lm_ids"] * used,
        "nsp_logits": example["next_sentence_labels"][:, 0],
    }
    cast = lambda t: tf.cast(t, tf.int32)  # noqa: E731
    return tf.nest.map_structure(cast, (features, labels))


def pretraining_dataset_from_tfrecords(
    input_file,
    batch_size,
    max_seq_length=128,
    max_predictions_per_seq=20,
    shuffle=True,
    repeat=True,
    seed=None,
    drop_remainder=True,
):
    """Reads BERT pre-training TFRecords (original feature names).

    Args:
        input_file: str. Comma-separated paths or globs of TFRecord files.
        batch_size: int. Global batch size.
        max_seq_length: int. As the files were written. Defaults to `128`.
        max_predictions_per_seq: int. As the files were written. Defaults
            to `20`.
        shuffle: bool. Shuffle files and records. Defaults to `True`.
        repeat: bool. Repeat forever. Defaults to `True`.
        seed: int or `None`. Shuffling seed.
        drop_remainder: bool. Defaults to `True` (static batch shape).

    Returns:
        A `tf.data.Dataset` of `(features, labels)`.

    Example:
    ```python
    dataset = pretraining_dataset_from_tfrecords("out/*.tfrecord", 32)
    model.fit(dataset, steps_per_epoch=100)
    ```
    """
    files = expand_input_files(input_file)
    check_tfrecord_lengths(files, max_seq_length, max_predictions_per_seq)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed)
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), 8),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=seed is not None,
    )
    if shuffle:
        dataset = dataset.shuffle(10_000, seed=seed)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = dataset.map(
        lambda s: parse_pretraining_example(
            s, max_seq_length, max_predictions_per_seq
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def check_tfrecord_lengths(files, max_seq_length, max_predictions_per_seq):
    """Raises a `ValueError` unless the files hold the lengths expected.

    A file written with another `max_seq_length` or
    `max_predictions_per_seq` would otherwise fail deep inside `fit`, at
    the first batch, with a message about a feature's size. The first
    record of each of the first 16 files is read and its `input_ids` and
    `masked_lm_positions` lengths compared.
    """
    expected = {
        "input_ids": max_seq_length,
        "masked_lm_positions": max_predictions_per_seq,
    }
    flags = {
        "input_ids": "max_seq_length",
        "masked_lm_positions": "max_predictions_per_seq",
    }
    for path in files[:16]:
        record = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
        if record is None:
            continue  # an empty shard
        example = tf.train.Example.FromString(record.numpy())
        feature = example.features.feature
        for name, length in expected.items():
            if name not in feature:
                raise ValueError(
                    f"{path} is not a BERT pre-training TFRecord file: its "
                    f"records have no {name!r} feature (found "
                    f"{sorted(feature)}). Write it with "
                    "recipes/create_pretraining_data.py."
                )
            found = len(feature[name].int64_list.value)
            if found != length:
                raise ValueError(
                    f"{path} was written with {flags[name]}={found}, but "
                    f"{flags[name]}={length} was asked for. Pass "
                    f"{flags[name]}={found} (create_pretraining_data.py "
                    "records the values it used in its stats-*.json)."
                )


def pretraining_dataset_from_text(
    input_file,
    creator,
    batch_size,
    input_format="sentences",
    seed=None,
    repeat=True,
):
    """Sentence pairs from text files, masked on the fly every epoch.

    Sentence pairs (and NSP labels) are made by `creator` with masking
    switched off; each pass over the files uses a new seed, so both the
    pairs and the masks change from epoch to epoch. Masking is a
    `DynamicMasker` with the creator's settings.

    Args:
        input_file: str. Comma-separated paths or globs of text files.
        creator: `keras_bert.data.PretrainingInstanceCreator`. Its
            `max_seq_length`, `max_predictions_per_seq`, `masked_lm_prob`
            and `do_whole_word_mask` apply; its `dupe_factor` is the number
            of pair samplings per pass.
        batch_size: int.
        input_format: str. `"sentences"` or `"text"`. Defaults to
            `"sentences"`.
        seed: int or `None`. Defaults to the creator's `random_seed`.
        repeat: bool. Repeat forever. Defaults to `True`.

    Returns:
        A `tf.data.Dataset` of `(features, labels)`.

    Example:
    ```python
    creator = PretrainingInstanceCreator(tokenizer, dupe_factor=1)
    dataset = pretraining_dataset_from_text("corpus/*.txt", creator, 32)
    ```
    """
    files = expand_input_files(input_file)
    seed = creator.random_seed if seed is None else seed
    length = creator.max_seq_length
    passes = itertools.count()
    tokenizer = creator.tokenizer

    def generate():
        rng = random.Random(seed + next(passes))
        documents = read_documents(files, input_format)
        instances = creator.create_instances(
            documents, rng=rng, apply_masking=False
        )
        for instance in instances:
            yield (
                list(instance.token_ids),
                list(instance.segment_ids),
                instance.next_sentence_label,
            )

    spec = tf.TensorSpec([None], tf.int32)
    dataset = tf.data.Dataset.from_generator(
        generate,
        output_signature=(spec, spec, tf.TensorSpec([], tf.int32)),
    )
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.map(
        lambda tokens, segments, label: (
            {
                "token_ids": tokens,
                "segment_ids": segments,
                "padding_mask": tf.ones_like(tokens),
            },
            label,
        )
    )
    dataset = dataset.padded_batch(
        batch_size,
        padded_shapes=(
            {name: [length] for name in BACKBONE_INPUTS},
            [],
        ),
        padding_values=(
            {
                "token_ids": tf.constant(tokenizer.pad_token_id, tf.int32),
                "segment_ids": 0,
                "padding_mask": 0,
            },
            0,
        ),
        drop_remainder=True,
    )
    masker = DynamicMasker(
        tokenizer.vocabulary,
        tokenizer.mask_token_id,
        max_predictions_per_seq=creator.max_predictions_per_seq,
        masked_lm_prob=creator.masked_lm_prob,
        do_whole_word_mask=creator.do_whole_word_mask,
    )
    return masker.apply(dataset, seed=seed).prefetch(tf.data.AUTOTUNE)
