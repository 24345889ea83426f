"""Pre-training TFRecords in the original BERT layout.

Each `tf.train.Example` has the features Google's
`create_pretraining_data.py` writes, so files made by either tool can be
read by either trainer:

| feature                | type    | shape                       |
|------------------------|---------|-----------------------------|
| `input_ids`            | int64   | `max_seq_length`            |
| `input_mask`           | int64   | `max_seq_length`            |
| `segment_ids`          | int64   | `max_seq_length`            |
| `masked_lm_positions`  | int64   | `max_predictions_per_seq`   |
| `masked_lm_ids`        | int64   | `max_predictions_per_seq`   |
| `masked_lm_weights`    | float32 | `max_predictions_per_seq`   |
| `next_sentence_labels` | int64   | `1` (0 = is next, 1 = random) |

Unused prediction slots have position 0, id 0 and weight 0.
"""

import tensorflow as tf
from absl import logging
from tqdm import tqdm

from keras_bert.data.corpus import read_documents
from keras_bert.validation import check_positive_int


def _int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def _padded(values, length):
    return list(values) + [0] * (length - len(values))


def instance_to_example(instance, max_seq_length, max_predictions_per_seq):
    """Serialises a `PretrainingInstance` as an original-layout Example.

    Args:
        instance: `keras_bert.data.PretrainingInstance`.
        max_seq_length: int. Length the sequence features are padded to.
        max_predictions_per_seq: int. Length of the prediction features.

    Returns:
        A `tf.train.Example`.
    """
    length = len(instance.token_ids)
    num_predictions = len(instance.masked_lm_positions)
    if length > max_seq_length or num_predictions > max_predictions_per_seq:
        raise ValueError(
            f"The instance has {length} tokens and {num_predictions} "
            f"predictions, more than max_seq_length={max_seq_length} or "
            f"max_predictions_per_seq={max_predictions_per_seq}. Create "
            "instances with the same limits as the writer."
        )
    features = {
        "input_ids": _int64_feature(
            _padded(instance.token_ids, max_seq_length)
        ),
        "input_mask": _int64_feature(_padded([1] * length, max_seq_length)),
        "segment_ids": _int64_feature(
            _padded(instance.segment_ids, max_seq_length)
        ),
        "masked_lm_positions": _int64_feature(
            _padded(instance.masked_lm_positions, max_predictions_per_seq)
        ),
        "masked_lm_ids": _int64_feature(
            _padded(instance.masked_lm_ids, max_predictions_per_seq)
        ),
        "masked_lm_weights": _float_feature(
            _padded([1.0] * num_predictions, max_predictions_per_seq)
        ),
        "next_sentence_labels": _int64_feature([instance.next_sentence_label]),
    }
    return tf.train.Example(features=tf.train.Features(feature=features))


def output_shard_paths(output_file, num_shards=1):
    """The files to write: comma-separated names, or one name sharded.

    Args:
        output_file: str. One path, or comma-separated paths (the original
            flag's meaning: instances go round-robin to each).
        num_shards: int. With a single path and `num_shards > 1`, writes
            `{output_file}-00000-of-0000N` etc. Defaults to `1`.

    Returns:
        A list of paths.

    Example:
    ```python
    output_shard_paths("out/train.tfrecord", 2)
    # ['out/train.tfrecord-00000-of-00002', 'out/train.tfrecord-00001-of-00002']
    ```
    """
    paths = [p.strip() for p in str(output_file).split(",") if p.strip()]
    if not paths:
        raise ValueError(
            "Received an empty `output_file`. Pass a path (or comma-separated "
            f"paths). Received: output_file={output_file!r}"
        )
    check_positive_int("num_shards", num_shards)
    if num_shards > 1:
        if len(paths) > 1:
            raise ValueError(
                f"Pass either several output files ({len(paths)} given) or "
                f"`num_shards` > 1 ({num_shards}), not both."
            )
        return [
            f"{paths[0]}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)
        ]
    return paths


def write_pretraining_tfrecords(
    creator,
    input_files,
    output_files,
    input_format="sentences",
    progress=True,
):
    """Streams documents → instances → round-robin TFRecord shards.

    Memory is bounded by `creator.documents_per_chunk`, not by the corpus.

    Args:
        creator: `keras_bert.data.PretrainingInstanceCreator`.
        input_files: list of str (see `keras_bert.data.expand_input_files`).
        output_files: list of str (see `output_shard_paths`).
        input_format: str. `"sentences"` or `"text"` (see
            `keras_bert.data.read_documents`).
        progress: bool. Show a `tqdm` progress bar. Defaults to `True`.

    Returns:
        A dict of counts: `instances` written, `documents` read, and what
        was skipped or repaired (`one_sentence_documents`, `invalid_utf8_lines`,
        `empty_files`, ...).

    Example:
    ```python
    creator = PretrainingInstanceCreator(tokenizer, dupe_factor=1)
    write_pretraining_tfrecords(
        creator, ["corpus.txt"], output_shard_paths("out.tfrecord", 4)
    )
    ```
    """
    read_stats = creator.stats
    for path in output_files:
        directory = path.rpartition("/")[0]
        if directory:
            tf.io.gfile.makedirs(directory)
    documents = read_documents(input_files, input_format, stats=read_stats)
    writers = [tf.io.TFRecordWriter(path) for path in output_files]
    bar = tqdm(
        desc="instances", unit=" inst", disable=not progress, mininterval=1
    )
    written = 0
    try:
        for instance in creator.create_instances(documents):
            example = instance_to_example(
                instance,
                creator.max_seq_length,
                creator.max_predictions_per_seq,
            )
            # Deterministic: protobuf map order otherwise varies by process.
            record = example.SerializeToString(deterministic=True)
            writers[written % len(writers)].write(record)
            written += 1
            bar.update(1)
            if written % 1000 == 0:
                bar.set_postfix(documents=read_stats["documents"])
    finally:
        bar.close()
        for writer in writers:
            writer.close()
    creator.log_stats()
    if read_stats["invalid_utf8_lines"] or read_stats["empty_files"]:
        logging.warning(
            "Read %d lines of invalid UTF-8 (bad bytes as U+FFFD) and "
            "skipped %d empty files.",
            read_stats["invalid_utf8_lines"],
            read_stats["empty_files"],
        )
    logging.info("Wrote %d instances to %d files.", written, len(writers))
    return dict(read_stats, instances=written)
