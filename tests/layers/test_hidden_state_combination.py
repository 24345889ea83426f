"""HiddenStateCombination: the feature-based rows of BERT's Table 7."""

import keras
import numpy as np
import pytest

from keras_bert.layers import HiddenStateCombination
from keras_bert.layers.hidden_state_combination import COMBINATIONS
from tests.helpers import assert_config_complete
from tests.helpers import run_layer_saving_test
from tests.helpers import run_serialization_test

# Seven states (embeddings + 6 blocks, as MiniLM-L6), each (2, 3, 4),
# state j filled with distinct values so each mode's pick is visible.
RNG = np.random.default_rng(0)
STATES = [RNG.normal(size=(2, 3, 4)).astype("float32") for _ in range(7)]


def combine(combination, states=STATES):
    layer = HiddenStateCombination(combination)
    return keras.ops.convert_to_numpy(layer(states)), layer


@pytest.mark.parametrize(
    "combination, expected",
    [
        ("embeddings", STATES[0]),
        ("second_to_last", STATES[5]),
        ("last", STATES[6]),
        ("sum_last_four", STATES[3] + STATES[4] + STATES[5] + STATES[6]),
        ("concat_last_four", np.concatenate(STATES[3:], axis=-1)),
        # Zero weights at first: the softmax is uniform, gamma is 1.
        ("weighted_sum_all", np.mean(STATES, axis=0)),
    ],
)
def test_each_mode_picks_or_combines_the_right_states(combination, expected):
    output, layer = combine(combination)
    np.testing.assert_allclose(output, expected, rtol=1e-6, atol=1e-6)
    assert output.shape == layer.compute_output_shape([s.shape for s in STATES])


def test_concat_of_the_last_four_is_four_hidden_wide():
    output, _ = combine("concat_last_four")
    assert output.shape == (2, 3, 16)


def test_weighted_sum_is_a_softmax_of_learned_weights_times_gamma():
    layer = HiddenStateCombination("weighted_sum_all")
    layer(STATES)
    logits = np.arange(7, dtype="float32") / 3
    layer.layer_weights.assign(logits)
    layer.gamma.assign(2.5)
    weights = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer.normalized_layer_weights),
        weights,
        rtol=1e-6,
    )
    assert np.isclose(weights.sum(), 1.0)
    expected = 2.5 * sum(w * s for w, s in zip(weights, STATES))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(STATES)), expected, rtol=1e-5
    )


def test_only_the_weighted_sum_has_weights():
    for combination in COMBINATIONS:
        _, layer = combine(combination)
        expected = 2 if combination == "weighted_sum_all" else 0
        assert len(layer.weights) == expected, combination
    with pytest.raises(ValueError, match="only combination='weighted_sum"):
        combine("last")[1].normalized_layer_weights


def test_bad_mode_and_too_few_states_are_named():
    with pytest.raises(ValueError, match="combination='lst'") as error:
        HiddenStateCombination("lst")
    for name in COMBINATIONS:
        assert repr(name) in str(error.value)
    with pytest.raises(ValueError, match="needs at least 4 hidden states"):
        HiddenStateCombination("sum_last_four")(STATES[:3])
    with pytest.raises(ValueError, match="takes a list of hidden states"):
        HiddenStateCombination("last")(STATES[0])


@pytest.mark.parametrize(
    "combination", ["concat_last_four", "weighted_sum_all"]
)
def test_config_round_trips_and_saves(combination):
    layer = HiddenStateCombination(combination, name="features")
    assert_config_complete(layer)
    assert run_serialization_test(layer).combination == combination
    run_layer_saving_test(layer, STATES)
