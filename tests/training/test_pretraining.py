"""Pre-training runs: resume restores weights, optimizer and step; the
strategy, mixed precision and the export."""

import os

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import save_huggingface
from keras_bert.data import pretraining_dataset_from_tfrecords
from keras_bert.training import WarmupLinearDecay
from keras_bert.training import create_adamw
from keras_bert.training import create_strategy
from keras_bert.training import pretrain
from keras_bert.training.pretraining import summary_frequency
from tests.data import pretraining_helpers as helpers
from tests.training import pretraining_data


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return pretraining_data.write_training_files(tmp_path_factory.mktemp("d"))


def dataset(files, seed=0):
    return pretraining_dataset_from_tfrecords(
        files["tfrecord"],
        batch_size=4,
        max_seq_length=pretraining_data.MAX_SEQ_LENGTH,
        max_predictions_per_seq=pretraining_data.MAX_PREDICTIONS,
        seed=seed,
    )


def tiny_model(total_steps=6, learning_rate=1e-3):
    backbone = keras_bert.BertBackbone(**pretraining_data.TINY_CONFIG)
    model = keras_bert.BertMaskedLM(backbone)
    schedule = WarmupLinearDecay(learning_rate, total_steps, warmup_steps=2)
    model.compile(optimizer=create_adamw(schedule))
    return model


def state(model):
    return [v.numpy().copy() for v in model.weights], [
        v.numpy().copy() for v in model.optimizer.variables
    ]


def test_resume_restores_weights_optimizer_state_and_step(files, tmp_path):
    run = str(tmp_path / "run")
    keras.utils.set_random_seed(1)
    first = tiny_model()
    result = pretrain(first, dataset(files), run, 4, 2, verbose=0)
    assert (result["resumed_from_step"], result["final_step"]) == (0, 4)
    weights, optimizer = state(first)

    keras.utils.set_random_seed(2)  # different initial weights
    again = tiny_model()
    result = pretrain(again, dataset(files), run, 4, 2, verbose=0)
    assert result["resumed_from_step"] == 4
    assert result["steps_this_run"] == 0
    restored_weights, restored_optimizer = state(again)
    assert len(restored_optimizer) == len(optimizer) > 10
    for expected, actual in zip(
        weights + optimizer, restored_weights + restored_optimizer
    ):
        np.testing.assert_array_equal(actual, expected)
    assert float(again.optimizer.learning_rate) == pytest.approx(
        float(WarmupLinearDecay(1e-3, 6, 2)(4))
    )

    result = pretrain(again, dataset(files), run, 6, 2, verbose=0)
    assert (result["resumed_from_step"], result["final_step"]) == (4, 6)
    assert len(result["history"]["loss"]) == 1
    # TensorBoard's per-interval points continue: epochs 0, 1, then 2.
    assert epoch_summary_steps(os.path.join(run, "tensorboard", "train")) == [
        0,
        1,
        2,
    ]


def epoch_summary_steps(directory):
    """Steps of the `epoch_loss` summaries in every event file, in order."""
    import glob

    import tensorflow as tf

    steps = []
    for path in sorted(glob.glob(os.path.join(directory, "events.out.*"))):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            if any(v.tag == "epoch_loss" for v in event.summary.value):
                steps.append(event.step)
    return sorted(steps)


@pytest.mark.slow
def test_training_lowers_the_loss(files, tmp_path):
    keras.utils.set_random_seed(3)
    model = tiny_model(total_steps=60, learning_rate=1e-2)
    result = pretrain(model, dataset(files), str(tmp_path), 60, 20, verbose=0)
    # Random words: only unigram statistics can be learnt, about 0.3 nats.
    losses = result["history"]["loss"]
    assert losses[-1] < losses[0] - 0.15, losses
    assert result["steps_per_second"] > 0
    assert os.listdir(tmp_path / "tensorboard")


def test_interval_must_divide_the_run(files, tmp_path):
    with pytest.raises(
        ValueError, match="num_train_steps=10 is not a multiple"
    ):
        pretrain(tiny_model(), dataset(files), str(tmp_path), 10, 3)


def test_mirrored_strategy_with_mixed_precision(files, tmp_path):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        with create_strategy("mirrored").scope():
            model = tiny_model()
        result = pretrain(model, dataset(files), str(tmp_path), 2, 2, verbose=0)
        assert model.backbone.compute_dtype == "bfloat16"
        assert np.isfinite(result["history"]["loss"][0])
        features, _ = next(iter(dataset(files)))
        outputs = model.predict_on_batch(features)
        assert outputs["mlm_logits"].dtype == np.float32
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_export_loads_with_from_checkpoint(tmp_path):
    model = tiny_model()
    tokenizer = keras_bert.BertTokenizer(helpers.SYNTHETIC_VOCABULARY)
    files = save_huggingface(model, tokenizer, str(tmp_path))
    assert {"config.json", "vocab.txt"} <= set(files)
    backbone = keras_bert.BertBackbone.from_checkpoint(str(tmp_path))
    for expected, actual in zip(model.backbone.weights, backbone.weights):
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    reloaded = keras_bert.BertMaskedLM.from_checkpoint(str(tmp_path))
    for expected, actual in zip(model.weights, reloaded.weights):
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    restored_tokenizer = keras_bert.BertTokenizer.from_checkpoint(str(tmp_path))
    assert restored_tokenizer.vocabulary == helpers.SYNTHETIC_VOCABULARY


@pytest.mark.slow
def test_jit_compiled_training(files, tmp_path):
    model = tiny_model()
    model.compile(optimizer=create_adamw(1e-3), jit_compile=True)
    result = pretrain(model, dataset(files), str(tmp_path), 4, 2, verbose=0)
    assert result["final_step"] == 4
    assert np.isfinite(result["history"]["loss"][-1])


def test_summary_frequency_divides_the_checkpoint_interval():
    assert [summary_frequency(n) for n in (250, 200, 1000, 7, 1, 101)] == [
        50,
        100,
        100,
        7,
        1,
        1,
    ]
