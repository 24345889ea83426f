"""The warmup + linear decay schedule, checked at hand-computed steps."""

import keras
import numpy as np
import pytest

from keras_bert.training import FitWarmupLinearDecay
from keras_bert.training import WarmupLinearDecay


def test_values_at_hand_computed_steps():
    schedule = WarmupLinearDecay(1e-4, total_steps=1000, warmup_steps=100)
    steps = [0, 50, 100, 550, 1000, 2000]
    expected = [0.0, 5e-5, 1e-4, 5e-5, 0.0, 0.0]
    np.testing.assert_allclose(
        [float(schedule(s)) for s in steps], expected, atol=1e-10
    )


def test_no_warmup_starts_at_the_peak():
    schedule = WarmupLinearDecay(2.0, total_steps=10, warmup_steps=0)
    np.testing.assert_allclose(
        [float(schedule(s)) for s in (0, 5, 10, 20)], [2.0, 1.0, 0.0, 0.0]
    )


def test_resumes_where_the_step_counter_is():
    """The rate is a function of the optimizer's step alone, so a restored
    step counter restores the schedule."""
    schedule = WarmupLinearDecay(1e-3, total_steps=100, warmup_steps=10)
    optimizer = keras.optimizers.AdamW(learning_rate=schedule)
    optimizer.build([keras.Variable(1.0)])
    optimizer.iterations.assign(40)
    assert float(optimizer.learning_rate) == pytest.approx(1e-3 * 60 / 90)


def test_config_round_trip():
    schedule = WarmupLinearDecay(3e-4, total_steps=50, warmup_steps=5)
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(schedule)
    )
    assert restored.get_config() == schedule.get_config()
    assert float(restored(7)) == pytest.approx(float(schedule(7)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"total_steps": 0}, "total_steps=0"),
        ({"total_steps": 10, "warmup_steps": 11}, "warmup_steps=11"),
    ],
)
def test_invalid_arguments_name_the_value(kwargs, message):
    kwargs = {"learning_rate": 1e-4, **kwargs}
    with pytest.raises(ValueError, match=message):
        WarmupLinearDecay(**kwargs)


def test_fit_schedule_is_laid_over_the_updates_of_each_fit():
    schedule = FitWarmupLinearDecay(1e-4, warmup_fraction=0.1)
    # Before any fit: the peak, whatever the step.
    assert float(schedule(0)) == pytest.approx(1e-4)
    schedule.lay_out(first_step=0, total_steps=1000)
    np.testing.assert_allclose(
        [float(schedule(s)) for s in [0, 50, 100, 550, 1000, 2000]],
        [0.0, 5e-5, 1e-4, 5e-5, 0.0, 0.0],
        atol=1e-10,
    )
    # A second fit starts where the optimizer's step counter is.
    schedule.lay_out(first_step=1000, total_steps=10)
    np.testing.assert_allclose(
        [float(schedule(s)) for s in [1000, 1001, 1005, 1010]],
        [0.0, 1e-4, 1e-4 * 5 / 9, 0.0],
        rtol=1e-6,
        atol=1e-10,
    )
    # Steps unknown: the peak.
    schedule.lay_out(first_step=1010, total_steps=None)
    assert float(schedule(1500)) == pytest.approx(1e-4)


def test_fit_schedule_peaks_at_the_lora_rate_with_lora():
    schedule = FitWarmupLinearDecay(2e-5, lora_learning_rate=1e-3)
    schedule.lay_out(first_step=0, total_steps=10, lora=True)
    assert float(schedule(1)) == pytest.approx(1e-3)
    schedule.lay_out(first_step=0, total_steps=10, lora=False)
    assert float(schedule(1)) == pytest.approx(2e-5)


def test_fit_schedule_config_round_trip():
    schedule = FitWarmupLinearDecay(
        3e-4, warmup_fraction=0.2, lora_learning_rate=1e-3
    )
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(schedule)
    )
    assert isinstance(restored, FitWarmupLinearDecay)
    assert restored.get_config() == schedule.get_config()


def test_fit_schedule_rejects_a_warmup_fraction_out_of_range():
    with pytest.raises(ValueError, match="warmup_fraction=1.5"):
        FitWarmupLinearDecay(1e-4, warmup_fraction=1.5)
