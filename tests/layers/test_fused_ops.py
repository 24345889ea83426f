"""The XLA-fused training path of TransformerEncoderBlock against the
unfused layers: same seeds, same dropout masks, same outputs and gradients
up to float rounding; used only where it should be. And every other named
optimisation, switched off, against the default."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers import fused_ops
from keras_bert.layers.optimizations import ALL

HIDDEN, HEADS, INTERMEDIATE = 16, 2, 32
MASKS = {
    "padded": [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]],
    # A sequence with no real token: its attention is uniform, and the
    # gradient of its (all replaced) scores is 0.
    "empty_row": [[1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0]],
    None: None,
}


@pytest.fixture
def fuse_everything(monkeypatch):
    """Fused ops on the tests' tiny tensors."""
    monkeypatch.setattr(fused_ops, "MIN_ELEMENTS", 0)


def _without(*names):
    return tuple(name for name in ALL if name not in names)


def _block_step(
    fused,
    mask,
    activation="gelu",
    dropout=0.1,
    optimizations=None,
    query_positions=None,
):
    """Outputs and gradients (inputs, then weights) of one training call;
    with `optimizations` when given, else all of them (without
    `"xla_fused_ops"` unless `fused`)."""
    if optimizations is None:
        optimizations = ALL if fused else _without("xla_fused_ops")
    keras.utils.set_random_seed(0)
    block = TransformerEncoderBlock(
        num_heads=HEADS,
        intermediate_dim=INTERMEDIATE,
        dropout=dropout,
        activation=activation,
        optimizations=optimizations,
    )
    x = tf.constant(
        np.random.default_rng(1).normal(size=(2, 6, HIDDEN)), "float32"
    )
    padding_mask = None if mask is None else tf.constant(MASKS[mask])
    block(x, padding_mask=padding_mask)  # builds
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = block(
            x,
            padding_mask=padding_mask,
            query_positions=query_positions,
            training=True,
        )
        # Distinct weights per feature, so that no gradient is
        # identically zero (LayerNorm makes plain sums constant).
        weights = tf.range(HIDDEN, dtype="float32")
        loss = tf.reduce_sum(tf.cast(y, "float32") * weights)
    grads = tape.gradient(loss, [x] + block.trainable_variables)
    to_numpy = lambda t: np.asarray(tf.cast(t, "float32"))  # noqa: E731
    return to_numpy(y), [to_numpy(g) for g in grads]


def _error(actual, expected):
    """Max |difference|, relative to the largest |expected|."""
    scale = np.abs(expected).max()
    assert scale > 0
    return np.abs(actual - expected).max() / scale


def _check_against_float32(policy, mask, activation="gelu", dropout=0.1):
    """Outputs and all 13 gradients (input, 12 weights) of the fused and the
    unfused 16-bit step, each against the float32 step with the same seeds:
    the fused one is as close as the unfused one (each only rounds, in a
    different order), and both are within a
    few 16-bit roundings. The same seeds must have drawn the same dropout
    masks: otherwise outputs differ by O(1)."""
    y32, grads32 = _block_step(False, mask, activation, dropout)
    keras.config.set_dtype_policy(policy)
    try:
        y_fused, grads_fused = _block_step(True, mask, activation, dropout)
        y, grads = _block_step(False, mask, activation, dropout)
    finally:
        keras.config.set_dtype_policy("float32")
    assert len(grads_fused) == len(grads) == len(grads32) == 13
    bound = 2**-6  # two roundings to 8 significant bits (bfloat16)
    for fused, unfused, exact in zip(
        [y_fused] + grads_fused, [y] + grads, [y32] + grads32
    ):
        if not np.abs(exact).max():  # the key bias: no gradient at all
            assert not np.abs(fused).max() and not np.abs(unfused).max()
            continue
        fused_error, unfused_error = (
            _error(fused, exact),
            _error(unfused, exact),
        )
        assert fused_error < bound and unfused_error < bound
        assert fused_error <= 1.5 * unfused_error + 2**-12


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("mask", ["padded", "empty_row", None])
def test_fused_training_step_as_accurate_as_unfused(
    fuse_everything, policy, mask
):
    _check_against_float32(policy, mask)


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_fused_without_dropout_and_with_approximate_gelu(
    fuse_everything, activation
):
    # The approximate GELU is not fused; its neighbours are.
    _check_against_float32("mixed_bfloat16", "padded", activation, dropout=0.0)


def _count_fused_calls(monkeypatch):
    calls = []
    for name in (
        "dropout_add_layer_norm",
        "exact_gelu",
        "attention_probabilities",
    ):
        original = getattr(fused_ops, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(fused_ops, name, counted)
    return calls


def _bf16_block():
    return TransformerEncoderBlock(
        num_heads=HEADS, intermediate_dim=32, dtype="mixed_bfloat16"
    )


def test_fused_only_in_training_with_static_shapes(
    fuse_everything, monkeypatch
):
    calls = _count_fused_calls(monkeypatch)
    block = _bf16_block()
    x = np.zeros((2, 6, HIDDEN), "float32")
    block(x, training=False)
    assert calls == []
    block(x, training=True)
    assert sorted(set(calls)) == [
        "attention_probabilities",
        "dropout_add_layer_norm",
        "exact_gelu",
    ]

    calls.clear()
    dynamic = tf.function(
        lambda t: block(t, training=True),
        input_signature=[tf.TensorSpec((None, None, HIDDEN), "float32")],
    )
    dynamic(x)  # would recompile for every new shape: not fused
    assert calls == []
    static = tf.function(lambda t: block(t, training=True))
    static(x)
    assert len(calls) == 4


def test_small_tensors_are_not_fused(monkeypatch):
    calls = _count_fused_calls(monkeypatch)
    _bf16_block()(np.zeros((2, 6, HIDDEN), "float32"), training=True)
    assert calls == []  # 192 elements < MIN_ELEMENTS
    assert fused_ops.MIN_ELEMENTS > 2 * 6 * HIDDEN


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float32_is_fused_and_float64_is_not(
    fuse_everything, monkeypatch, dtype
):
    calls = _count_fused_calls(monkeypatch)
    block = TransformerEncoderBlock(
        num_heads=HEADS, intermediate_dim=32, dtype=dtype
    )
    block(np.zeros((2, 6, HIDDEN), dtype), training=True)
    # float64 (used to check parity exactly) keeps its float64 ops.
    assert len(calls) == (4 if dtype == "float32" else 0)


@pytest.mark.parametrize("mask", ["padded", "empty_row", None])
def test_fused_float32_step_equals_unfused(fuse_everything, mask):
    """In float32 the fused step computes what the unfused one does, in
    another order: outputs and all 13
    gradients agree to float32 rounding."""
    y_fused, grads_fused = _block_step(True, mask)
    y, grads = _block_step(False, mask)
    assert len(grads_fused) == len(grads) == 13
    for fused, unfused in zip([y_fused] + grads_fused, [y] + grads):
        if not np.abs(unfused).max():  # the key bias: no gradient at all
            assert np.abs(fused).max() < 1e-6
            continue
        assert _error(fused, unfused) < 2e-6


# Each optimisation switched off alone, and all of them (the block's
# reference computation with Keras' own layers).
SWITCHED_OFF = [(name,) for name in ALL] + [ALL]


@pytest.mark.parametrize(
    "switched_off", SWITCHED_OFF, ids=lambda names: "+".join(names)
)
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("mask", ["padded", "empty_row"])
@pytest.mark.parametrize("query_positions", [None, [[0, 3], [5, 0]]])
def test_each_optimisation_off_gives_the_default_step(
    fuse_everything, switched_off, fused, mask, query_positions
):
    """Without any one optimisation (or without all), the training step's
    outputs and all 13 gradients are the default's, to float32 rounding.
    The fused ops replace
    the LayerNorm, dropout and GELU layers, so each is also switched off
    in an unfused step. Keras' dropout draws other masks than
    `HalfBitsDropout`, and the full last block other masks than the one at
    some positions, so without either there is no dropout."""
    other_masks = {"half_bits_dropout", "query_positions_only"}
    dropout = 0.0 if other_masks & set(switched_off) else 0.1
    positions = None
    if query_positions is not None:
        positions = tf.constant(query_positions)
    default = ALL if fused else _without("xla_fused_ops")
    y, grads = _block_step(
        fused, mask, dropout=dropout, query_positions=positions
    )
    y_off, grads_off = _block_step(
        fused,
        mask,
        dropout=dropout,
        optimizations=tuple(n for n in default if n not in switched_off),
        query_positions=positions,
    )
    assert y_off.shape == y.shape and len(grads_off) == len(grads) == 13
    for off, default in zip([y_off] + grads_off, [y] + grads):
        if not np.abs(default).max():  # the key bias: no gradient at all
            assert np.abs(off).max() < 1e-6
            continue
        assert _error(off, default) < 2e-6


def test_fused_attention_probabilities_dropout_statistics():
    # 4M probabilities of a uniform softmax over 64 keys: the kept ones are
    # scaled to 1 / 64 / (1 - rate'), where rate' = round(rate * 2**16)
    # / 2**16 as in keras_bert.layers.Dropout.
    scores = tf.zeros((64, 16, 64, 64), "float32")
    probs = fused_ops.attention_probabilities(
        scores, None, 0.1, tf.constant([3, 4], "int64"), -1e9, "float32"
    ).numpy()
    rate = round(0.1 * 2**16) / 2**16
    dropped = np.mean(probs == 0)
    std = np.sqrt(rate * (1 - rate) / probs.size)
    assert abs(dropped - rate) < 5 * std
    kept = probs[probs != 0]
    np.testing.assert_allclose(kept, 1 / 64 / (1 - rate), rtol=1e-6)
    # Each kept row still sums, in expectation, to one.
    assert abs(probs.sum(-1).mean() - 1) < 1e-3
