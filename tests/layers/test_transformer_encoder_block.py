"""TransformerEncoderBlock against the formula in numpy; its call
arguments, config and saving. (Every implementation of the block against
the reference, and the reference against the formula:
test_block_implementations.py.)"""

import keras
import numpy as np
import pytest

from keras_bert.layers import TransformerEncoderBlock
from tests.helpers import assert_config_complete
from tests.helpers import run_layer_saving_test
from tests.helpers import run_serialization_test
from tests.layers.block_formula import numpy_block


def _set_random_weights(block, x, mask, rng):
    """Gives `block` random weights (not the small initial ones); returns
    them by name."""
    hidden, inter = x.shape[-1], block.intermediate_dim
    block(x, padding_mask=mask)
    w = {
        "qkv_kernel": rng.normal(size=(hidden, 3 * hidden)),
        "qkv_bias": rng.normal(size=(3 * hidden,)),
        "attn_out_kernel": rng.normal(size=(hidden, hidden)),
        "attn_out_bias": rng.normal(size=(hidden,)),
        "ln1_gamma": rng.normal(size=(hidden,)),
        "ln1_beta": rng.normal(size=(hidden,)),
        "inter_kernel": rng.normal(size=(hidden, inter)),
        "inter_bias": rng.normal(size=(inter,)),
        "out_kernel": rng.normal(size=(inter, hidden)),
        "out_bias": rng.normal(size=(hidden,)),
        "ln2_gamma": rng.normal(size=(hidden,)),
        "ln2_beta": rng.normal(size=(hidden,)),
    }
    w = {k: v.astype("float32") for k, v in w.items()}
    block.qkv_dense.set_weights([w["qkv_kernel"], w["qkv_bias"]])
    block.attention_output_dense.set_weights(
        [w["attn_out_kernel"], w["attn_out_bias"]]
    )
    block.attention_layer_norm.set_weights([w["ln1_gamma"], w["ln1_beta"]])
    block.intermediate_dense.set_weights([w["inter_kernel"], w["inter_bias"]])
    block.output_dense.set_weights([w["out_kernel"], w["out_bias"]])
    block.output_layer_norm.set_weights([w["ln2_gamma"], w["ln2_beta"]])
    return w


# Inference on the fast and the reference path; training (dropout 0) on
# the XLA-fused path.
@pytest.mark.parametrize(
    "optimizations, training",
    [(None, False), ((), False), (None, True)],
    ids=["fast", "reference", "fused"],
)
def test_attention_probabilities_match_numpy_formula(
    monkeypatch, optimizations, training
):
    from keras_bert.layers import fused_ops

    monkeypatch.setattr(fused_ops, "MIN_ELEMENTS", 0)  # fuse this tiny case
    block = TransformerEncoderBlock(
        num_heads=2,
        intermediate_dim=6,
        dropout=0.0,
        optimizations=optimizations,
    )
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    w = _set_random_weights(block, x, mask, rng)
    expected, expected_probs = numpy_block(
        x.astype("float64"),
        mask,
        {k: v.astype("float64") for k, v in w.items()},
        2,
        approximate=False,
        return_probs=True,
    )
    y, probs = block(
        x,
        padding_mask=mask,
        training=training,
        return_attention_probabilities=True,
    )
    assert probs.shape == (2, 2, 3, 3)  # (batch, heads, queries, keys)
    probs = keras.ops.convert_to_numpy(probs)
    np.testing.assert_allclose(probs, expected_probs, rtol=1e-4, atol=1e-6)
    assert (probs[0, :, :, 2] == 0).all()  # a padding key
    # The output is the one the block gives without being asked.
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(y),
        keras.ops.convert_to_numpy(
            block(x, padding_mask=mask, training=training)
        ),
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(y), expected, rtol=1e-4, atol=1e-5
    )


def test_exact_and_approximate_gelu_differ():
    x = np.random.default_rng(0).normal(size=(1, 4, 8)).astype("float32")
    outputs = []
    for activation in ("gelu", "gelu_approximate"):
        rng = np.random.default_rng(1)
        block = TransformerEncoderBlock(
            num_heads=2, intermediate_dim=16, activation=activation
        )
        block.build(x.shape)
        block.set_weights(
            [
                rng.normal(size=w.shape).astype("float32")
                for w in block.get_weights()
            ]
        )
        outputs.append(keras.ops.convert_to_numpy(block(x)))
    # The two GELUs differ by up to ~1e-3 on unit-scale inputs.
    assert np.abs(outputs[0] - outputs[1]).max() > 1e-4


def test_padding_keys_get_no_attention():
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=8)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0]])
    base = keras.ops.convert_to_numpy(block(x, padding_mask=mask))
    x2 = x.copy()
    x2[:, 3:] = rng.normal(size=(1, 2, 4)) * 100
    changed = keras.ops.convert_to_numpy(block(x2, padding_mask=mask))
    np.testing.assert_allclose(changed[:, :3], base[:, :3], atol=1e-6)


def test_hidden_not_divisible_by_heads_is_refused():
    block = TransformerEncoderBlock(num_heads=3, intermediate_dim=8)
    with pytest.raises(ValueError, match=r"\(8\).*`num_heads` \(3\)"):
        block(np.zeros((1, 2, 8), "float32"))


def test_invalid_arguments_name_the_value():
    with pytest.raises(ValueError, match="num_heads=0"):
        TransformerEncoderBlock(num_heads=0, intermediate_dim=8)
    with pytest.raises(ValueError, match="activation='relu'"):
        TransformerEncoderBlock(
            num_heads=2, intermediate_dim=8, activation="relu"
        )


def test_config_and_saving():
    block = TransformerEncoderBlock(
        num_heads=2,
        intermediate_dim=8,
        dropout=0.2,
        attention_dropout=0.05,
        activation="gelu_approximate",
        layer_norm_epsilon=1e-6,
    )
    assert_config_complete(block)
    rebuilt = run_serialization_test(block)
    assert rebuilt.attention_dropout == 0.05
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    run_layer_saving_test(block, x)


def test_optimizations_switch_serialises_and_old_configs_get_all():
    from keras_bert.layers.optimizations import ALL

    block = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8, optimizations=("xla_fused_ops",)
    )
    assert block.get_config()["optimizations"] == ["xla_fused_ops"]
    rebuilt = run_serialization_test(block)
    assert tuple(rebuilt.optimizations) == ("xla_fused_ops",)
    # Keras' own layers where ours are switched off; the same names.
    assert type(rebuilt.output_layer_norm) is keras.layers.LayerNormalization
    assert type(rebuilt.output_dropout) is keras.layers.Dropout
    config = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8
    ).get_config()
    assert config["optimizations"] == list(ALL)
    del config["optimizations"]  # a config saved before the switch
    assert TransformerEncoderBlock.from_config(config).optimizations == ALL


def test_unknown_optimization_is_refused():
    with pytest.raises(ValueError, match="fast_softmax"):
        TransformerEncoderBlock(
            num_heads=2, intermediate_dim=8, optimizations=("fast_softmax",)
        )


@pytest.mark.parametrize("training", [False, True])
def test_mixed_precision_keeps_softmax_in_float32(monkeypatch, training):
    """Under mixed_bfloat16 the attention softmax sees float32 scores, on
    the plain path (inference) and on the fused one (training)."""
    import tensorflow as tf

    seen = []
    keras_softmax, tf_softmax = keras.ops.softmax, tf.nn.softmax

    def spy_keras(x, *args, **kwargs):
        seen.append(keras.backend.standardize_dtype(x.dtype))
        return keras_softmax(x, *args, **kwargs)

    def spy_tf(x, *args, **kwargs):
        seen.append(x.dtype.name)
        return tf_softmax(x, *args, **kwargs)

    monkeypatch.setattr(keras.ops, "softmax", spy_keras)
    monkeypatch.setattr(tf.nn, "softmax", spy_tf)
    block = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8, dtype="mixed_bfloat16"
    )
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    out = block(
        x, padding_mask=np.array([[1, 1, 0], [1, 1, 1]]), training=training
    )
    assert out.dtype == "bfloat16"
    assert block.qkv_dense.kernel.dtype == "float32"
    assert seen and set(seen) == {"float32"}, seen
    assert np.isfinite(
        keras.ops.convert_to_numpy(keras.ops.cast(out, "float32"))
    ).all()


def _query_case(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 7, 8)).astype("float32")
    mask = np.array([[1] * 7, [1] * 5 + [0] * 2, [1] * 3 + [0] * 4])
    # Repeated and padded positions too: each is an independent query.
    positions = np.array([[0, 2, 4], [0, 1, 1], [0, 6, 2]])
    return x, mask, positions


@pytest.mark.parametrize("optimizations", [None, ("split_qkv_first",)])
def test_attention_probabilities_at_query_positions(optimizations):
    """With and without `"query_positions_only"`: the full block's
    probabilities, at the queries asked for."""
    x, mask, positions = _query_case()
    block = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=16, optimizations=optimizations
    )
    _, full = block(x, padding_mask=mask, return_attention_probabilities=True)
    _, subset = block(
        x,
        padding_mask=mask,
        query_positions=positions,
        return_attention_probabilities=True,
    )
    assert subset.shape == (3, 2, 3, 7)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(subset),
        np.take_along_axis(
            keras.ops.convert_to_numpy(full),
            positions[:, None, :, None],
            axis=2,
        ),
        atol=1e-6,
    )


def test_symbolic_call_returns_the_probabilities_spec():
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=16)
    x = keras.Input((None, 8))
    mask = keras.Input((None,), dtype="int32")
    y, probs = block(x, padding_mask=mask, return_attention_probabilities=True)
    assert y.shape == (None, None, 8)
    assert probs.shape == (None, 2, None, None)
    positions = keras.Input((3,), dtype="int32")
    _, probs = block(
        x,
        padding_mask=mask,
        query_positions=positions,
        return_attention_probabilities=True,
    )
    assert probs.shape == (None, 2, 3, None)
    assert block.compute_output_shape((3, 7, 8), (3, 7), (3, 3)) == (3, 3, 8)
    model = keras.Model([x, mask], block(x, padding_mask=mask))
    assert model.output.shape == (None, None, 8)  # not asked: one output


@pytest.mark.parametrize("fused", [False, True])
def test_query_positions_train_like_the_full_block(monkeypatch, fused):
    """The same values and the same gradients (input and every weight) as
    the full block's outputs gathered: only what is read is computed."""
    import tensorflow as tf

    from keras_bert.layers import fused_ops

    if fused:  # the XLA-fused training path, on this tiny shape too
        monkeypatch.setattr(fused_ops, "MIN_ELEMENTS", 0)
    x, mask, positions = _query_case(1)
    block = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=16, dropout=0.0
    )
    block(x, padding_mask=mask)
    x = tf.constant(x)
    results = []
    for subset in (False, True):
        with tf.GradientTape() as tape:
            tape.watch(x)
            if subset:
                y = block(
                    x,
                    padding_mask=mask,
                    query_positions=positions,
                    training=True,
                )
            else:
                y = tf.gather(
                    block(x, padding_mask=mask, training=True),
                    positions,
                    batch_dims=1,
                )
            loss = tf.reduce_sum(y * tf.sin(y))
        gradients = tape.gradient(loss, [x] + block.trainable_variables)
        results.append([y] + [tf.convert_to_tensor(g) for g in gradients])
    for full, subset in zip(*results):
        np.testing.assert_allclose(subset.numpy(), full.numpy(), atol=2e-5)
