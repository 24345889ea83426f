"""`PreemptionCheckpoint` in one process: SIGTERM mid-`fit` saves and
exits with code 42; a restart resumes at that exact step and ends on the
uninterrupted run's weights. The 2-worker version runs the recipe in
test_distribute_multi_worker.py."""

import os
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert import training
from tests.training.test_distribute import _data

STEPS, INTERVAL = 10, 4


def dataset():
    # Reshuffled every pass with a fixed seed: a resumed run must skip to
    # the same place in the same sequence.
    data = tf.data.Dataset.from_tensor_slices(_data(24, seed=0))
    data = data.shuffle(24, seed=5).repeat().batch(4, drop_remainder=True)
    return training.with_auto_shard_policy(data, "data")


def tiny_model():
    keras.utils.set_random_seed(3)
    with training.create_strategy("one_device").scope():
        return _compiled_model()


def _compiled_model():
    backbone = keras_bert.BertBackbone(
        vocabulary_size=40,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
        dropout=0.0,
    )
    model = keras_bert.BertMaskedLM(backbone)
    schedule = training.WarmupLinearDecay(1e-2, STEPS, warmup_steps=2)
    model.compile(
        optimizer=training.create_adamw(schedule),
        loss=training.pretraining_losses(),
    )
    # Under a strategy Keras would read a batch ahead, moving the shuffle
    # on: the resumed run would then see other batches.
    return training.support_distributed_fit(model)


class SigtermAt(keras.callbacks.Callback):
    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def train(model, directory, callbacks=()):
    checkpoint = training.PreemptionCheckpoint(
        directory, INTERVAL, final_step=STEPS
    )
    start = checkpoint.restore(model)
    model.fit(
        dataset().skip(start),
        steps_per_epoch=INTERVAL,
        epochs=-(-(STEPS - start) // INTERVAL),
        callbacks=[*callbacks, checkpoint],
        verbose=0,
    )
    return start


def weights(model):
    return [v.numpy() for v in model.weights]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    model = tiny_model()
    train(model, str(tmp_path_factory.mktemp("uninterrupted")))
    assert int(model.optimizer.iterations.numpy()) == STEPS
    return weights(model)


def test_sigterm_saves_exits_42_and_resumes_at_the_exact_step(
    uninterrupted, tmp_path
):
    directory = str(tmp_path / "checkpoints")
    handler_before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exit_info:
        train(tiny_model(), directory, callbacks=[SigtermAt(5)])
    assert exit_info.value.code == training.fault_tolerance.RESTART_EXIT_CODE
    assert signal.getsignal(signal.SIGTERM) == handler_before
    # Saved one step after the signal, once every worker could agree.
    assert tf.train.latest_checkpoint(directory).endswith("ckpt-6")

    model = tiny_model()
    assert train(model, directory) == 6
    assert int(model.optimizer.iterations.numpy()) == STEPS
    for expected, actual in zip(uninterrupted, weights(model)):
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6)


def test_finished_run_restores_and_trains_nothing(uninterrupted, tmp_path):
    directory = str(tmp_path / "checkpoints")
    train(tiny_model(), directory)
    assert tf.train.latest_checkpoint(directory).endswith(f"ckpt-{STEPS}")
    model = tiny_model()
    checkpoint = training.PreemptionCheckpoint(directory, INTERVAL, STEPS)
    assert checkpoint.restore(model) == STEPS
    for expected, actual in zip(uninterrupted, weights(model)):
        np.testing.assert_array_equal(actual, expected)


def test_interval_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="steps_per_checkpoint=0"):
        training.PreemptionCheckpoint("unused", 0)
