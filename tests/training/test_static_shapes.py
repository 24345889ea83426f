import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.data import trim_batch
from keras_bert.training import create_adamw
from keras_bert.training import trace_per_shape
from tests.helpers import tiny_backbone_config


def _batches(lengths, width=8, batch_size=4, multiple=4, seed=0):
    """A dataset of classifier batches with rows of `lengths`, cut as the
    recipes cut them."""
    rng = np.random.default_rng(seed)
    mask = np.arange(width)[None, :] < np.array(lengths)[:, None]
    features = {
        "token_ids": (rng.integers(5, 50, mask.shape) * mask).astype("int32"),
        "segment_ids": np.zeros(mask.shape, "int32"),
        "padding_mask": mask.astype("int32"),
    }
    labels = rng.integers(0, 2, len(lengths)).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.batch(batch_size).map(
        lambda x, y: (trim_batch(x, multiple), y)
    )


def _classifier(strategy=None, seen=None):
    keras.utils.set_random_seed(0)
    with strategy.scope() if strategy else tf.init_scope():
        backbone = keras_bert.BertBackbone(**tiny_backbone_config(dropout=0.0))
        model = keras_bert.BertClassifier(backbone, num_classes=2, dropout=0.0)
        model.compile(optimizer=create_adamw(1e-2))
    if seen is not None:
        keras_step = model.train_step

        def train_step(data):
            seen.append(tuple(data[0]["token_ids"].shape))
            return keras_step(data)

        model.train_step = train_step
    return model


# Rows of 1..8 tokens: with multiple=4 the batches are 4 or 8 wide.
LENGTHS = [3, 2, 4, 1, 7, 5, 2, 6, 2, 2, 2, 3, 3]


@pytest.mark.parametrize(
    "strategy_name",
    ["one_device", pytest.param("mirrored", marks=pytest.mark.slow)],
)
def test_each_batch_shape_traced_static_and_same_weights(strategy_name):
    """Every trace sees a fully static batch (one per distinct shape, the
    partial last batch included), and training reaches Keras' own
    function's weights."""
    strategy = {
        "one_device": lambda: tf.distribute.OneDeviceStrategy("/cpu:0"),
        "mirrored": lambda: tf.distribute.MirroredStrategy(["/cpu:0"]),
    }[strategy_name]()
    dataset = _batches(LENGTHS)
    shapes = {tuple(x["token_ids"].shape) for x, _ in dataset}
    assert len(shapes) == 3  # (4, 4), (4, 8), (1, 4)

    seen = []
    ours = trace_per_shape(_classifier(strategy, seen))
    ours.fit(dataset, epochs=2, verbose=0)
    # Traced per shape, never relaxed (the first shape can trace twice:
    # the optimizer creates its variables in the first trace).
    assert set(seen) == shapes and len(seen) <= len(shapes) + 1

    keras_seen = []
    reference = _classifier(strategy, keras_seen)
    reference.fit(dataset, epochs=2, verbose=0)
    assert any(None in shape for shape in keras_seen)  # Keras relaxes

    assert int(ours.optimizer.iterations.numpy()) == 8
    for a, b in zip(ours.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_too_many_shapes_fall_back_to_keras(caplog):
    """Unbucketed data: after `max_shapes` shapes, Keras' function runs the
    rest of the run, no batch is lost, and the run says why."""
    dataset = _batches(LENGTHS[:3], batch_size=1, multiple=1)
    seen = []
    model = trace_per_shape(_classifier(seen=seen), max_shapes=1)
    reference = _classifier()
    with caplog.at_level("WARNING"):
        model.fit(dataset, epochs=1, verbose=0)
    reference.fit(dataset, epochs=1, verbose=0)
    assert "distinct batch shapes" in caplog.text
    assert int(model.optimizer.iterations.numpy()) == 3
    assert any(None in shape for shape in seen)
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_only_this_model_changes():
    model = trace_per_shape(_classifier())
    other = _classifier()
    assert "make_train_function" in vars(model)
    assert "make_train_function" not in vars(other)
    assert keras.Model.make_train_function is type(other).make_train_function
