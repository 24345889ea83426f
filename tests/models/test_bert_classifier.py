"""BertClassifier: classification and regression heads."""

import warnings

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert import BertClassifier
from keras_bert.training import TRAINING_DEFAULTS
from keras_bert.training import AdamW
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config


def test_logits_shape_and_dtype():
    model = BertClassifier(
        BertBackbone(**tiny_backbone_config()), num_classes=3
    )
    logits = model(backbone_inputs(batch_size=4))
    assert logits.shape == (4, 3)
    assert logits.dtype == "float32"


def test_logits_are_the_head_on_the_backbones_pooled_output():
    """The last block runs on [CLS] only (BertBackbone.outputs_at); the
    logits are those of the full backbone's pooled output."""
    backbone = BertBackbone(**tiny_backbone_config())
    model = BertClassifier(backbone, num_classes=3)
    inputs = backbone_inputs(batch_size=4, sequence_length=9)
    pooled = backbone(inputs)["pooled_output"]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(model(inputs)),
        keras.ops.convert_to_numpy(model.output_dense(pooled)),
        atol=1e-6,
    )


def _keyword_task(n=96, seed=0):
    """Label 1 iff token 7 occurs in the sequence."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(8, 30, size=(n, 8)).astype("int32")
    labels = rng.integers(0, 2, size=(n,)).astype("int32")
    where = rng.integers(1, 8, size=(n,))
    tokens[labels == 1, where[labels == 1]] = 7
    tokens[:, 0] = 2  # [CLS]
    features = {
        "token_ids": tokens,
        "segment_ids": np.zeros_like(tokens),
        "padding_mask": np.ones_like(tokens),
    }
    return features, labels


def _small_backbone(dtype="float32"):
    return BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=32,
            hidden_dim=32,
            num_heads=4,
            intermediate_dim=64,
            dropout=0.0,
            dtype=dtype,
        )
    )


@pytest.mark.parametrize(
    "dtype",
    ["float32", pytest.param("mixed_bfloat16", marks=pytest.mark.slow)],
)
def test_fit_learns_a_small_classification_task(dtype):
    keras.utils.set_random_seed(1)
    model = BertClassifier(_small_backbone(dtype), num_classes=2, dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    features, labels = _keyword_task()
    history = model.fit(features, labels, batch_size=16, epochs=25, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert history.history["accuracy"][-1] > 0.9


def test_regression_with_one_class():
    keras.utils.set_random_seed(2)
    model = BertClassifier(_small_backbone(), num_classes=1, dropout=0.0)
    assert isinstance(model.loss, keras.losses.MeanSquaredError)
    model.compile(optimizer=keras.optimizers.Adam(2e-3))
    features, labels = _keyword_task()
    scores = labels.astype("float32") * 5.0
    history = model.fit(features, scores, batch_size=16, epochs=25, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.25 * losses[0], losses


def test_save_load_and_config():
    model = BertClassifier(
        BertBackbone(**tiny_backbone_config()), num_classes=4, dropout=0.3
    )
    assert_config_complete(model)
    restored = run_model_saving_test(model, backbone_inputs())
    assert restored.dropout == 0.3
    assert restored.num_classes == 4


def test_invalid_num_classes():
    backbone = BertBackbone(**tiny_backbone_config())
    with pytest.raises(ValueError, match="num_classes=0"):
        BertClassifier(backbone, num_classes=0)


class _LearningRates(keras.callbacks.Callback):
    """The optimizer's learning rate at every training step."""

    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(self.model.optimizer.learning_rate))


def test_compile_auto_warms_up_and_decays_over_each_fit():
    model = BertClassifier(_small_backbone(), num_classes=2)
    features, labels = _keyword_task(n=80)
    peak = TRAINING_DEFAULTS["classifier"].learning_rate
    for _ in range(2):  # the schedule is laid out again for the second fit
        rates = _LearningRates()
        model.fit(
            features, labels, batch_size=8, epochs=2, verbose=0,
            callbacks=[rates],
        )  # fmt: skip
        # 20 updates: 2 of warmup, then a linear decay to 0 at the 20th.
        assert len(rates.rates) == 20
        np.testing.assert_allclose(
            rates.rates[:4], [0.0, peak / 2, peak, peak * 17 / 18], rtol=1e-5
        )
        assert np.all(np.diff(rates.rates[:3]) > 0)
        assert np.all(np.diff(rates.rates[2:]) < 0)
        assert rates.rates[-1] == pytest.approx(peak / 18, rel=1e-5)
        assert float(model.optimizer.learning_rate) == 0.0  # after the last


def test_compile_auto_schedules_fit_with_positional_callbacks():
    model = BertClassifier(_small_backbone(), num_classes=2)
    features, labels = _keyword_task(n=16)
    rates = _LearningRates()
    model.fit(features, labels, 8, 2, 0, [rates])  # batch, epochs, verbose
    assert len(rates.rates) == 4  # the user's callback ran
    # 4 updates: no whole update of warmup, then a decay to 0 over them.
    peak = TRAINING_DEFAULTS["classifier"].learning_rate
    np.testing.assert_allclose(rates.rates, [peak, peak * 3 / 4, peak / 2,
                                             peak / 4], rtol=1e-5)  # fmt: skip
    assert float(model.optimizer.learning_rate) == 0.0


def test_compile_auto_with_lora_peaks_at_the_lora_rate():
    backbone = _small_backbone()
    model = BertClassifier(backbone, num_classes=2)
    backbone.enable_lora(2)  # after compile("auto"): fit picks the rate
    features, labels = _keyword_task(n=40)
    rates = _LearningRates()
    model.fit(features, labels, batch_size=4, epochs=1, verbose=0,
              callbacks=[rates])  # fmt: skip
    assert max(rates.rates) == pytest.approx(
        TRAINING_DEFAULTS["classifier"].lora_learning_rate
    )


def test_compile_auto_keeps_its_schedule_in_a_keras_file(tmp_path):
    model = BertClassifier(_small_backbone(), num_classes=2)
    features, labels = _keyword_task(n=16)
    model.fit(features, labels, batch_size=8, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    rates = _LearningRates()
    restored.fit(features, labels, batch_size=1, verbose=0, callbacks=[rates])
    # 16 updates, the first of warmup.
    assert rates.rates[0] == 0.0 and rates.rates[1] > 0.0


@pytest.mark.parametrize("trained", [False, True])
def test_a_saved_compiled_model_reloads_without_warnings(trained, tmp_path):
    """Saved with `model.save`, compiled by its constructor, before or
    after `fit`: reloading it warns of nothing (no "Skipping variable
    loading for optimizer") and keeps the optimizer's step."""
    model = BertClassifier(_small_backbone(), num_classes=2)
    if trained:
        features, labels = _keyword_task(n=16)
        model.fit(features, labels, batch_size=8, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        restored = keras.saving.load_model(path)
    assert [str(w.message) for w in caught] == []
    assert int(restored.optimizer.iterations) == (2 if trained else 0)
    for saved, loaded in zip(
        model.optimizer.variables, restored.optimizer.variables
    ):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(loaded),
            keras.ops.convert_to_numpy(saved),
        )


def test_a_fixed_rate_optimizer_state_loads_into_the_schedule(tmp_path):
    """A file of a model trained with a fixed learning rate (as
    `compile("auto")` was before it had a schedule) resumes in a model
    compiled with `"auto"`: step and moments load, with no warning."""
    features, labels = _keyword_task(n=16)
    keras.utils.set_random_seed(0)
    trained = BertClassifier(_small_backbone(), num_classes=2)
    trained.compile(optimizer=AdamW(learning_rate=2e-5))
    trained.fit(features, labels, batch_size=8, verbose=0)
    assert len(trained.optimizer.variables) == 2 + 2 * len(
        trained.trainable_variables
    )
    path = str(tmp_path / "model.weights.h5")
    trained.save_weights(path)
    keras.utils.set_random_seed(0)
    resumed = BertClassifier(_small_backbone(), num_classes=2)
    resumed.optimizer.build(resumed.trainable_variables)
    assert len(resumed.optimizer.variables) + 1 == len(
        trained.optimizer.variables
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed.load_weights(path)
    assert [str(w.message) for w in caught] == []
    assert int(resumed.optimizer.iterations) == 2
    saved = [trained.optimizer.variables[0]] + trained.optimizer.variables[2:]
    for expected, loaded in zip(saved, resumed.optimizer.variables):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(loaded),
            keras.ops.convert_to_numpy(expected),
        )
