"""Per-worker input sharding, resuming the data and chief-only writing."""

import os
import types

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.data.experimental.ops import distribute

from keras_bert import training


def fake_strategy(num_workers, task_id=0):
    """Enough of a multi-worker strategy for the input helpers."""
    spec = tf.train.ClusterSpec(
        {"worker": [f"127.0.0.1:{2000 + i}" for i in range(num_workers)]}
    )
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        spec, task_type="worker", task_id=task_id
    )
    extended = types.SimpleNamespace(should_checkpoint=task_id == 0)
    return types.SimpleNamespace(cluster_resolver=resolver, extended=extended)


def write_files(directory, num_files, per_file):
    paths = []
    for index in range(num_files):
        path = os.path.join(directory, f"part-{index}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for record in range(per_file):
                writer.write(f"{index}:{record}".encode())
        paths.append(path)
    return paths


def shard(dataset, num_workers, index):
    """What `MultiWorkerMirroredStrategy` does to worker `index`'s input."""
    return distribute._AutoShardDataset(dataset, num_workers, index, 1)


def test_file_policy_gives_each_worker_its_own_files(tmp_path):
    paths = write_files(str(tmp_path), num_files=4, per_file=3)
    dataset = tf.data.Dataset.from_tensor_slices(paths).interleave(
        tf.data.TFRecordDataset, cycle_length=2
    )
    dataset = training.with_auto_shard_policy(dataset, "file")
    seen = [
        sorted(
            r.decode() for r in shard(dataset, 2, worker).as_numpy_iterator()
        )
        for worker in (0, 1)
    ]
    files = [{record.split(":")[0] for record in s} for s in seen]
    assert files == [{"0", "2"}, {"1", "3"}]
    assert sorted(seen[0] + seen[1]) == sorted(
        f"{f}:{r}" for f in range(4) for r in range(3)
    )


def test_data_policy_splits_generated_data_without_overlap():
    dataset = tf.data.Dataset.range(12).map(lambda x: x * 10)
    dataset = training.with_auto_shard_policy(dataset, "data")
    seen = [list(shard(dataset, 2, w).as_numpy_iterator()) for w in (0, 1)]
    assert seen == [list(range(0, 120, 20)), list(range(10, 120, 20))]


def test_invalid_policy_names_the_value():
    with pytest.raises(ValueError, match="policy='files'"):
        training.with_auto_shard_policy(tf.data.Dataset.range(2), "files")


def test_file_policy_only_with_enough_files():
    assert training.file_shard_policy(num_files=8, num_workers=4) == "file"
    assert training.file_shard_policy(num_files=1, num_workers=2) == "data"


def test_num_workers():
    assert training.num_workers(tf.distribute.get_strategy()) == 1
    assert training.num_workers(fake_strategy(3)) == 3


def batches(dataset):
    return [b.tolist() for b in dataset.as_numpy_iterator()]


def test_skip_with_data_sharding_skips_global_batches():
    dataset = tf.data.Dataset.range(20).batch(4, drop_remainder=True)
    dataset = training.with_auto_shard_policy(dataset, "data")
    for strategy in (tf.distribute.get_strategy(), fake_strategy(2)):
        skipped = training.skip_trained_steps(dataset, 3, strategy)
        assert batches(skipped) == [[12, 13, 14, 15], [16, 17, 18, 19]]


def test_skip_with_file_sharding_skips_each_workers_share():
    # Each of 2 workers takes half a global batch of its own files per
    # step: after 3 steps it has used 6 of its examples.
    dataset = tf.data.Dataset.range(20).batch(4, drop_remainder=True)
    dataset = training.with_auto_shard_policy(dataset, "file")
    skipped = training.skip_trained_steps(dataset, 3, fake_strategy(2))
    assert batches(skipped) == [
        [6, 7, 8, 9],
        [10, 11, 12, 13],
        [14, 15, 16, 17],
    ]
    policy = skipped.options().experimental_distribute.auto_shard_policy
    assert policy == tf.data.experimental.AutoShardPolicy.FILE


def test_skip_nothing_returns_the_dataset():
    dataset = tf.data.Dataset.range(4)
    assert training.skip_trained_steps(dataset, 0, fake_strategy(2)) is dataset


def test_only_the_chief_writes_to_the_run_directory(tmp_path):
    run = str(tmp_path / "run")
    assert training.write_directory(run, fake_strategy(2, 0)) == run
    worker = training.write_directory(run, fake_strategy(2, 1))
    assert not os.path.abspath(worker).startswith(os.path.abspath(run))
    assert "workertemp_1" in worker and os.path.isdir(worker)
    training.remove_write_directory(worker, run)
    assert not os.path.exists(worker)
    os.makedirs(run)
    training.remove_write_directory(run, run)  # never the run's own
    assert os.path.isdir(run)


def test_chief_and_task_of_local_strategies():
    for strategy in (
        tf.distribute.get_strategy(),
        training.create_strategy("one_device"),
    ):
        assert training.is_chief(strategy)
    assert training.strategies.task_id(fake_strategy(2, 1)) == 1
    assert not training.is_chief(fake_strategy(2, 1))


def test_global_batch_cross_entropy_on_one_replica():
    loss = training.GlobalBatchCrossEntropy(ignore_class=0)
    labels = np.array([[3, 0], [1, 2]])
    logits = np.random.RandomState(0).randn(2, 2, 5).astype("float32")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -(log_probs[0, 0, 3] + log_probs[1, 0, 1] + log_probs[1, 1, 2])
    assert float(loss(labels, logits)) == pytest.approx(expected / 3, 1e-6)
    assert (
        training.GlobalBatchCrossEntropy.from_config(
            loss.get_config()
        ).ignore_class
        == 0
    )
