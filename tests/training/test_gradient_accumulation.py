"""Gradient accumulation (`compile(gradient_accumulation_steps=K)`):
batches of `B * K` run in `K` micro-batches train the weights batches of
`B * K` train whole, on one device, on two mirrored replicas, and through
a checkpoint and resume.

Two logical CPU devices must be set before TensorFlow starts, so the
mirrored comparison runs in a child process
(`python -m tests.training.test_gradient_accumulation`) that prints its
measurements as JSON.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
MICRO_BATCH = 4
STEPS = 4  # micro-batches per update
UPDATES = 10
VOCABULARY = 50
SEQUENCE_LENGTH = 8
# Float32 rounding of sums taken in another order; the weights move by ~4e-2.
TOLERANCE = 1e-5


def _data(num_examples, seed=0):
    rng = np.random.default_rng(seed)
    shape = (num_examples, SEQUENCE_LENGTH)
    features = {
        "token_ids": rng.integers(1, VOCABULARY, shape).astype("int32"),
        "segment_ids": (np.arange(SEQUENCE_LENGTH) >= 4)
        * np.ones(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    return features, rng.integers(0, 2, num_examples).astype("int32")


def _classifier(steps, strategy=None):
    """A tiny classifier, dropout off, with BERT's warmup-decay schedule
    over `UPDATES` updates (the schedule counts updates)."""
    import contextlib

    import keras

    import keras_bert
    from keras_bert import training

    keras.utils.set_random_seed(1)
    with strategy.scope() if strategy else contextlib.nullcontext():
        backbone = keras_bert.BertBackbone(
            vocabulary_size=VOCABULARY,
            num_layers=1,
            num_heads=2,
            hidden_dim=8,
            intermediate_dim=16,
            max_sequence_length=SEQUENCE_LENGTH,
            dropout=0.0,
        )
        model = keras_bert.BertClassifier(backbone, num_classes=2, dropout=0)
        schedule = training.WarmupLinearDecay(
            1e-2, total_steps=UPDATES, warmup_steps=3
        )
        model.compile(
            optimizer=training.create_adamw(schedule),
            gradient_accumulation_steps=steps,
        )
    training.support_distributed_fit(model)
    return model


def _dataset(num_examples=MICRO_BATCH * STEPS * UPDATES):
    import tensorflow as tf

    batch = MICRO_BATCH * STEPS
    return tf.data.Dataset.from_tensor_slices(_data(num_examples)).batch(batch)


def _max_difference(a, b):
    return max(
        float(np.abs(x - y).max())
        for x, y in zip(a.get_weights(), b.get_weights())
    )


@pytest.fixture(scope="module")
def whole_batches():
    """`UPDATES` updates with batches of `MICRO_BATCH * STEPS` run whole."""
    model = _classifier(1)
    history = model.fit(_dataset(), verbose=0)
    return model, history.history


def test_accumulated_batches_train_as_whole_batches(whole_batches):
    whole, whole_history = whole_batches
    accumulated = _classifier(STEPS)
    history = accumulated.fit(_dataset(), verbose=0).history
    assert int(accumulated.optimizer.iterations) == UPDATES
    assert _max_difference(whole, _classifier(1)) > 1e-2  # training moved
    assert _max_difference(accumulated, whole) <= TOLERANCE
    # The loss and accuracy of fit's logs are the whole batches' too.
    assert history["accuracy"] == whole_history["accuracy"]
    assert history["loss"] == pytest.approx(whole_history["loss"], rel=1e-6)


@pytest.mark.slow  # two more models trained (~10 s of CPU)
def test_uneven_batches_weight_micro_batches_by_their_examples():
    """Batches of 7 in 3 micro-batches (3, 2, 2 examples) and a last batch
    of 2 examples (run as 2 micro-batches: none is empty)."""
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(_data(23)).batch(7)
    whole = _classifier(1)
    whole.fit(dataset, verbose=0)
    accumulated = _classifier(3)
    accumulated.fit(dataset, verbose=0)
    assert _max_difference(accumulated, whole) <= TOLERANCE


@pytest.mark.slow  # two more models trained in float16 (~10 s of CPU)
def test_mixed_float16_loss_scaling_scales_each_micro_batch():
    """Under `mixed_float16` Keras wraps the optimizer in a
    `LossScaleOptimizer`; each micro-batch's loss is scaled and the sum
    unscaled once. The weights then differ only by float16 rounding of
    activations computed in batches of another size: measured 3.5e-4, for
    weights that moved by 3.9e-2."""
    import keras

    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        whole = _classifier(1)
        whole.fit(_dataset(), verbose=0)
        accumulated = _classifier(STEPS)
        accumulated.fit(_dataset(), verbose=0)
    finally:
        keras.config.set_dtype_policy(policy)
    optimizer = accumulated.optimizer
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert int(optimizer.iterations.numpy()) == UPDATES
    assert _max_difference(accumulated, whole) <= 2e-3


def test_resume_from_a_checkpoint_between_updates_equals_no_stop(
    tmp_path, whole_batches
):
    """A run stopped after 4 updates and resumed from its checkpoint ends
    with the weights of a run that did not stop. A checkpoint is always
    at an update boundary: one `fit` step is one update, so no
    accumulator needs saving."""
    from keras_bert.training import PreemptionCheckpoint

    whole, _ = whole_batches
    directory = str(tmp_path / "checkpoints")
    first = _classifier(STEPS)
    first.fit(
        _dataset().take(4),
        callbacks=[PreemptionCheckpoint(directory, 4)],
        verbose=0,
    )
    resumed = _classifier(STEPS)
    checkpoint = PreemptionCheckpoint(directory, 4, final_step=UPDATES)
    assert checkpoint.restore(resumed) == 4
    resumed.fit(_dataset().skip(4), callbacks=[checkpoint], verbose=0)
    assert int(resumed.optimizer.iterations) == UPDATES
    assert _max_difference(resumed, whole) <= TOLERANCE


def test_bad_steps_name_the_argument(whole_batches):
    model, _ = whole_batches
    for steps in (0, -1, 2.0, True, "4", None):
        with pytest.raises(ValueError, match="gradient_accumulation_steps"):
            model.compile(gradient_accumulation_steps=steps)


def test_steps_saved_with_the_model(tmp_path):
    import keras

    model = _classifier(STEPS)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.gradient_accumulation_steps == STEPS


def _child():
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    from keras_bert.training import create_strategy

    whole = _classifier(1, create_strategy("one_device"))
    whole.fit(_dataset(), verbose=0)
    mirrored = create_strategy("mirrored")
    accumulated = _classifier(STEPS, mirrored)
    accumulated.fit(_dataset(), verbose=0)
    result = {
        "replicas": mirrored.num_replicas_in_sync,
        "updates": int(accumulated.optimizer.iterations.numpy()),
        "difference": _max_difference(accumulated, whole),
    }
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")


@pytest.mark.slow  # a child process that starts TensorFlow (~15 s)
def test_mirrored_accumulated_batches_train_as_one_device_whole_batches():
    completed = subprocess.run(
        [sys.executable, "-m", "tests.training.test_gradient_accumulation"],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [
        line for line in completed.stdout.splitlines() if line[:7] == "RESULT "
    ]
    assert completed.returncode == 0 and lines, completed.stderr[-3000:]
    result = json.loads(lines[-1][7:])
    assert result["replicas"] == 2
    assert result["updates"] == UPDATES
    assert result["difference"] <= TOLERANCE


if __name__ == "__main__":
    _child()
