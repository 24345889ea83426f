"""TFRecords in the original layout: features, sharding, determinism, and
the recipe end to end."""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import PretrainingInstance
from keras_bert.data import PretrainingInstanceCreator
from keras_bert.data import instance_to_example
from keras_bert.data import output_shard_paths
from keras_bert.data import parse_pretraining_example
from keras_bert.data import pretraining_dataset_from_tfrecords
from keras_bert.data import write_pretraining_tfrecords
from tests.data import pretraining_helpers as helpers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
FEATURES = {
    "input_ids": 128,
    "input_mask": 128,
    "segment_ids": 128,
    "masked_lm_positions": 20,
    "masked_lm_ids": 20,
    "masked_lm_weights": 20,
    "next_sentence_labels": 1,
}


def digest(paths):
    return [hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths]


def write_real(directory, seed, num_shards=3):
    creator = PretrainingInstanceCreator(
        helpers.real_tokenizer(), dupe_factor=2, random_seed=seed
    )
    outputs = output_shard_paths(os.path.join(directory, "train"), num_shards)
    stats = write_pretraining_tfrecords(
        creator,
        helpers.python_doc_files()[:12],
        outputs,
        input_format="text",
        progress=False,
    )
    return outputs, stats


def test_same_seed_gives_byte_identical_files(tmp_path):
    first, stats = write_real(tmp_path / "a", seed=1)
    second, _ = write_real(tmp_path / "b", seed=1)
    third, _ = write_real(tmp_path / "c", seed=2)
    assert stats["instances"] > 500
    assert digest(first) == digest(second)
    assert digest(first) != digest(third)


def test_original_feature_names_and_shapes(tmp_path):
    outputs, stats = write_real(tmp_path, seed=3, num_shards=2)
    records = [
        r.numpy() for path in outputs for r in tf.data.TFRecordDataset(path)
    ]
    assert len(records) == stats["instances"]
    example = tf.train.Example.FromString(records[0])
    features = example.features.feature
    assert set(features) == set(FEATURES)
    for name, length in FEATURES.items():
        kind = "float_list" if name == "masked_lm_weights" else "int64_list"
        assert len(getattr(features[name], kind).value) == length, name


def test_parsing_maps_features_onto_model_inputs():
    instance = PretrainingInstance(
        token_ids=(2, 7, 4, 3, 9, 3),
        segment_ids=(0, 0, 0, 0, 1, 1),
        masked_lm_positions=(2, 4),
        masked_lm_ids=(8, 9),
        is_random_next=True,
        a_document=0,
        a_span=(0, 2),
        b_document=1,
        b_span=(0, 1),
    )
    serialized = instance_to_example(instance, 8, 3).SerializeToString()
    features, labels = parse_pretraining_example(
        tf.constant([serialized]), 8, 3
    )
    assert features["token_ids"].numpy().tolist() == [[2, 7, 4, 3, 9, 3, 0, 0]]
    assert features["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 1, 1, 0, 0]
    ]
    assert features["padding_mask"].numpy().tolist() == [[1] * 6 + [0] * 2]
    assert features["masked_positions"].numpy().tolist() == [[2, 4, 0]]
    assert labels["mlm_logits"].numpy().tolist() == [[8, 9, 0]]
    assert labels["nsp_logits"].numpy().tolist() == [1]
    assert all(t.dtype == tf.int32 for t in tf.nest.flatten((features, labels)))


def small_record_file(tmp_path):
    """One record of 5 positions and 2 prediction slots."""
    example = tf.train.Example()
    for name, values in {
        "input_ids": [2, 5, 3, 6, 3],
        "input_mask": [1] * 5,
        "segment_ids": [0, 0, 0, 1, 1],
        "masked_lm_positions": [1, 3],
        "masked_lm_ids": [5, 6],
        "next_sentence_labels": [0],
    }.items():
        example.features.feature[name].int64_list.value.extend(values)
    example.features.feature["masked_lm_weights"].float_list.value.extend(
        [1.0, 0.0]
    )
    path = str(tmp_path / "other.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(example.SerializeToString())
    return path


def test_weightless_slots_read_as_padding(tmp_path):
    """Files from other writers may leave ids in weight-0 slots."""
    path = small_record_file(tmp_path)
    dataset = pretraining_dataset_from_tfrecords(
        path, batch_size=1, max_seq_length=5, max_predictions_per_seq=2,
        shuffle=False, repeat=False,
    )  # fmt: skip
    features, labels = next(iter(dataset))
    assert features["masked_positions"].numpy().tolist() == [[1, 0]]
    assert labels["mlm_logits"].numpy().tolist() == [[5, 0]]


@pytest.mark.parametrize(
    "lengths, message",
    [
        (
            {"max_seq_length": 128},
            r"written with max_seq_length=5, but max_seq_length=128 was "
            r"asked for. Pass max_seq_length=5",
        ),
        (
            {"max_seq_length": 5, "max_predictions_per_seq": 20},
            r"written with max_predictions_per_seq=2, but "
            r"max_predictions_per_seq=20",
        ),
    ],
)
def test_files_of_other_lengths_fail_at_once_naming_the_flag(
    tmp_path, lengths, message
):
    path = small_record_file(tmp_path)
    with pytest.raises(ValueError, match=message) as error:
        pretraining_dataset_from_tfrecords(path, batch_size=1, **lengths)
    assert path in str(error.value)


def test_a_file_of_other_records_is_named(tmp_path):
    path = str(tmp_path / "other.tfrecord")
    example = tf.train.Example()
    example.features.feature["text"].bytes_list.value.append(b"hello")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(example.SerializeToString())
    with pytest.raises(ValueError, match="not a BERT pre-training TFRecord"):
        pretraining_dataset_from_tfrecords(path, batch_size=1)


def test_output_shard_paths():
    assert output_shard_paths("a,b") == ["a", "b"]
    assert output_shard_paths("out", 2) == [
        "out-00000-of-00002",
        "out-00001-of-00002",
    ]
    with pytest.raises(ValueError, match="num_shards=0"):
        output_shard_paths("out", 0)
    with pytest.raises(ValueError, match="not both"):
        output_shard_paths("a,b", 2)


def run_recipe(*flags):
    script = os.path.join(REPO, "recipes", "create_pretraining_data.py")
    return subprocess.run(
        [sys.executable, script, "--noprogress", *flags],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


@pytest.mark.slow
def test_recipe_with_original_flags_is_deterministic(tmp_path):
    corpus = helpers.write_synthetic_corpus(tmp_path)
    vocab = helpers.write_synthetic_vocab(tmp_path)
    outputs = []
    for run in ("first", "second"):
        result = run_recipe(
            f"--input_file={corpus}",
            f"--output_file={tmp_path}/{run}/train.tfrecord",
            f"--vocab_file={vocab}",
            "--do_lower_case",
            "--max_seq_length=32",
            "--max_predictions_per_seq=5",
            "--masked_lm_prob=0.15",
            "--short_seq_prob=0.1",
            "--dupe_factor=3",
            "--random_seed=99",
            "--do_whole_word_mask",
            "--num_output_shards=2",
        )
        assert result.returncode == 0, result.stderr[-3000:]
        outputs.append(sorted((tmp_path / run).glob("train.tfrecord-*")))
    assert len(outputs[0]) == 2
    assert digest(outputs[0]) == digest(outputs[1])
    with open(
        tmp_path / "first" / "stats-train.tfrecord-00000-of-00002.json"
    ) as f:
        stats = json.load(f)
    count = sum(1 for p in outputs[0] for _ in tf.data.TFRecordDataset(str(p)))
    assert stats["instances"] == count > 50
    assert stats["documents"] == 30


@pytest.mark.slow  # the library-level check is in test_corpus.py
def test_recipe_missing_input_is_a_clear_error(tmp_path):
    vocab = helpers.write_synthetic_vocab(tmp_path)
    result = run_recipe(
        f"--input_file={tmp_path}/missing*.txt",
        f"--output_file={tmp_path}/out.tfrecord",
        f"--vocab_file={vocab}",
    )
    assert result.returncode != 0
    assert "No file matches the input pattern" in result.stderr
    assert "missing*.txt" in result.stderr
    assert not np.any([p.name.startswith("out") for p in tmp_path.iterdir()])
