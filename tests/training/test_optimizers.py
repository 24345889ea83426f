"""AdamW and LAMB decay every weight but LayerNorm and biases."""

import contextlib

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.training import create_adamw
from keras_bert.training import create_lamb
from keras_bert.training import create_optimizer
from tests.helpers import tiny_backbone_config


def is_exempt(variable):
    return variable.name in ("gamma", "beta", "bias")


@pytest.mark.parametrize("factory", [create_adamw, create_lamb])
def test_decay_skips_layer_norm_and_biases(factory):
    """With zero gradients the Adam/LAMB step is zero, so what changes is
    the weight decay alone: `w * (1 - lr * decay)` or nothing."""
    model = keras_bert.BertMaskedLM(
        keras_bert.BertBackbone(**tiny_backbone_config())
    )
    optimizer = factory(learning_rate=0.5, weight_decay=0.1)
    variables = model.trainable_variables
    before = [v.numpy().copy() for v in variables]
    optimizer.apply_gradients([(keras.ops.zeros_like(v), v) for v in variables])
    exempt = decayed = 0
    for variable, old in zip(variables, before):
        if is_exempt(variable):
            np.testing.assert_array_equal(variable.numpy(), old)
            exempt += 1
        else:
            np.testing.assert_allclose(variable.numpy(), old * 0.95, rtol=1e-6)
            decayed += 1
    # Every block has LayerNorms and biases; kernels and embeddings decay.
    assert exempt > 10 and decayed > 10
    layer_norm_names = {
        v.name for v in variables if "layer_norm" in v.path.lower()
    }
    assert layer_norm_names == {"gamma", "beta"}


def test_clipping_and_constants():
    optimizer = create_adamw(1e-4)
    assert optimizer.global_clipnorm == 1.0
    assert optimizer.weight_decay == 0.01
    assert optimizer.epsilon == 1e-6
    assert isinstance(create_optimizer("lamb", 1e-3), keras.optimizers.Lamb)
    assert isinstance(create_optimizer("adamw", 1e-3), keras.optimizers.AdamW)


def test_unknown_optimizer_names_the_value():
    with pytest.raises(ValueError, match="name='sgd'"):
        create_optimizer("sgd", 1e-3)


def _adamw_run(optimizer, weights, gradients, strategy=None):
    """Applies `gradients` (a list of per-step lists) in a compiled step,
    in `strategy`'s replica context if one is given; returns the final
    weights and the optimizer's moments."""
    import tensorflow as tf

    variables = [keras.Variable(w, name=f"w{i}") for i, w in enumerate(weights)]

    def apply(grads):
        return optimizer.apply(grads, variables)

    if strategy is None:
        step = tf.function(apply)
    else:
        step = tf.function(lambda grads: strategy.run(apply, args=(grads,)))
    for grads in gradients:
        step(grads)
    moments = [v.numpy() for v in optimizer._momentums + optimizer._velocities]
    return [v.numpy() for v in variables], moments


def _adamw_problem(steps=10):
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=(64, 16)).astype("float32"), np.ones(16, "f")]
    # Gradients over four orders of magnitude, as real ones are.
    gradients = [
        [
            (
                rng.normal(size=w.shape) * 10 ** rng.uniform(-4, 0, w.shape)
            ).astype("float32")
            for w in weights
        ]
        for _ in range(steps)
    ]
    return weights, gradients


def _adamw_float64(weights, gradients, lr, decay, b1=0.9, b2=0.999, eps=1e-6):
    """Keras' AdamW written out in float64 numpy: decay, then Adam."""
    out = []
    for i, w in enumerate(weights):
        w = w.astype("float64")
        m = np.zeros_like(w)
        v = np.zeros_like(w)
        for t, grads in enumerate(gradients, 1):
            g = grads[i].astype("float64")
            w = w - w * decay * lr
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
            w = w - alpha * m / (np.sqrt(v) + eps)
        out.append(w)
    return out


def test_fused_adamw_matches_keras_adamw_and_float64():
    """The fused step computes Keras' AdamW: after 10 steps every weight and
    moment agrees with Keras' own AdamW within 1e-6 (weights are O(1), so a
    few float32 ulps) and both are as close to float64 as each other."""
    weights, gradients = _adamw_problem()
    kwargs = dict(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-6)
    ours, our_moments = _adamw_run(
        keras_bert.training.AdamW(**kwargs), weights, gradients
    )
    keras_weights, keras_moments = _adamw_run(
        keras.optimizers.AdamW(**kwargs), weights, gradients
    )
    for a, b in zip(ours + our_moments, keras_weights + keras_moments):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    exact = _adamw_float64(weights, gradients, 1e-3, 0.01)
    our_error = max(np.max(np.abs(a - e)) for a, e in zip(ours, exact))
    keras_error = max(
        np.max(np.abs(a - e)) for a, e in zip(keras_weights, exact)
    )
    # Both only round: 10 steps of float32 updates on O(1) weights.
    assert our_error < 3e-6 and keras_error < 3e-6
    assert our_error <= 1.5 * keras_error


@pytest.mark.parametrize("strategy_name", ["one_device", "mirrored"])
def test_fit_under_a_strategy_equals_fit_without(strategy_name):
    """The decay pass and the fused Adam kernel give `fit` the same weights
    under a `OneDeviceStrategy` / `MirroredStrategy` as without one."""
    import tensorflow as tf

    weights, _ = _adamw_problem()
    rng = np.random.default_rng(1)
    x = rng.normal(size=(32, 64)).astype("float32")
    y = rng.normal(size=(32, 16)).astype("float32")

    def fit(strategy):
        with strategy.scope() if strategy else contextlib.nullcontext():
            model = keras.Sequential(
                [keras.Input((64,)), keras.layers.Dense(16)]
            )
            model.set_weights(weights)
            model.compile(optimizer=create_adamw(1e-3), loss="mse")
        model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return model.get_weights()

    strategy = {
        "one_device": lambda: tf.distribute.OneDeviceStrategy("/cpu:0"),
        "mirrored": lambda: tf.distribute.MirroredStrategy(["/cpu:0"]),
    }[strategy_name]()
    alone = fit(None)
    for a, b in zip(alone, fit(strategy)):
        assert np.abs(a - weights[0 if a.ndim == 2 else 1]).max() > 1e-4
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fused_adamw_sparse_gradient_equals_dense():
    """An embedding's IndexedSlices gradient updates as its dense
    equivalent: untouched rows' moments decay too, and a row that appears
    twice gets the square of its summed gradient in `v`. (Keras' own AdamW
    squares each slice before summing, so a repeated row gets a different
    `v` from the dense update.)"""
    import tensorflow as tf

    weights, gradients = _adamw_problem(steps=3)
    rows = tf.constant([3, 7, 3])  # a repeated row is summed
    values = [g[0][:3] for g in gradients]
    sparse = [
        [tf.IndexedSlices(tf.constant(v), rows, tf.constant([64, 16]))]
        for v in values
    ]
    dense = [
        [tf.math.unsorted_segment_sum(tf.constant(v), rows, 64)] for v in values
    ]
    optimizer = keras_bert.training.AdamW(1e-2)
    a, a_moments = _adamw_run(optimizer, weights[:1], sparse)
    b, b_moments = _adamw_run(
        keras_bert.training.AdamW(1e-2), weights[:1], dense
    )
    for ours, dense_result in zip(a + a_moments, b + b_moments):
        np.testing.assert_array_equal(ours, dense_result)
    c, _ = _adamw_run(keras.optimizers.AdamW(1e-2), weights[:1], dense)
    np.testing.assert_allclose(a[0], c[0], rtol=1e-5, atol=1e-6)


def test_fused_adamw_config_round_trip_and_amsgrad_fallback():
    optimizer = create_adamw(1e-4)
    assert isinstance(optimizer, keras_bert.training.AdamW)
    config = keras.optimizers.serialize(optimizer)
    restored = keras.optimizers.deserialize(config)
    assert type(restored) is keras_bert.training.AdamW
    assert restored.get_config() == optimizer.get_config()
    # amsgrad has no fused kernel: Keras' own update, same result.
    weights, gradients = _adamw_problem(steps=3)
    a, _ = _adamw_run(
        keras_bert.training.AdamW(1e-2, amsgrad=True), weights, gradients
    )
    b, _ = _adamw_run(
        keras.optimizers.AdamW(1e-2, amsgrad=True), weights, gradients
    )
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# === PyTorch's epsilon and clipping by the gradient's own norm ===


def _torch_adamw_run(weights, gradients, lr, decay, eps):
    """`torch.optim.AdamW` on the same weights and gradients (float32)."""
    import torch

    parameters = [torch.nn.Parameter(torch.tensor(w)) for w in weights]
    optimizer = torch.optim.AdamW(
        parameters, lr=lr, weight_decay=decay, eps=eps, betas=(0.9, 0.999)
    )
    for grads in gradients:
        for parameter, g in zip(parameters, grads):
            parameter.grad = torch.tensor(g)
        optimizer.step()
    return [p.detach().numpy() for p in parameters]


@pytest.mark.parametrize("with_strategy", [False, True])
def test_epsilon_hat_false_is_torch_adamw(with_strategy):
    """`epsilon_hat=False` gives `torch.optim.AdamW`'s update, on both of
    our paths (the fused XLA pass, and `ResourceApplyAdam` under a
    strategy); the default, Keras' epsilon hat, does not when gradients are
    small next to epsilon (here 1e-9 to 1e-5, as after clipping a model's
    gradient to norm 1)."""
    import tensorflow as tf

    weights, gradients = _adamw_problem()
    gradients = [[g * 1e-5 for g in grads] for grads in gradients]
    kwargs = dict(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-6)
    torch_weights = _torch_adamw_run(weights, gradients, 1e-3, 0.01, 1e-6)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    results = {}
    for epsilon_hat in (False, True):
        if with_strategy:
            with strategy.scope():
                optimizer = keras_bert.training.AdamW(
                    epsilon_hat=epsilon_hat, **kwargs
                )
                results[epsilon_hat], _ = _adamw_run(
                    optimizer, weights, gradients, strategy
                )
        else:
            optimizer = keras_bert.training.AdamW(
                epsilon_hat=epsilon_hat, **kwargs
            )
            results[epsilon_hat], _ = _adamw_run(optimizer, weights, gradients)
    for ours, theirs in zip(results[False], torch_weights):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    # The default moves the weights less: its epsilon is 31.6x larger at
    # the first step. 10 steps of lr 1e-3 move a weight by up to 1e-2.
    difference = max(
        np.abs(ours - theirs).max()
        for ours, theirs in zip(results[True], torch_weights)
    )
    assert difference > 1e-3


def test_epsilon_hat_config_and_bad_values():
    optimizer = create_adamw(1e-4, epsilon_hat=False)
    assert optimizer.epsilon_hat is False
    restored = keras.optimizers.deserialize(
        keras.optimizers.serialize(optimizer)
    )
    assert restored.epsilon_hat is False
    assert create_adamw(1e-4).epsilon_hat is True
    with pytest.raises(ValueError, match="epsilon_hat=1"):
        keras_bert.training.AdamW(1e-4, epsilon_hat=1)
    with pytest.raises(ValueError, match="amsgrad=True"):
        keras_bert.training.AdamW(1e-4, amsgrad=True, epsilon_hat=False)


def test_global_clipnorm_uses_the_summed_rows_of_a_sparse_gradient():
    """A row looked up twice counts with its summed gradient in the global
    norm, as its dense gradient would (Keras' own clipping adds the squares
    of the two slices instead)."""
    import tensorflow as tf

    rng = np.random.default_rng(3)
    values = rng.normal(size=(5, 4)).astype("float32")
    rows = tf.constant([2, 0, 2, 2, 7])  # row 2 three times
    dense_kernel = rng.normal(size=(4, 3)).astype("float32")
    sparse = tf.IndexedSlices(tf.constant(values), rows, tf.constant([8, 4]))
    dense = tf.math.unsorted_segment_sum(values, rows, 8).numpy()
    norm = np.sqrt((dense**2).sum() + (dense_kernel**2).sum())
    assert norm > 1.0  # the clipping binds
    optimizer = keras_bert.training.AdamW(1e-3, global_clipnorm=1.0)
    clipped_sparse, clipped_kernel = optimizer._clip_gradients(
        [sparse, tf.constant(dense_kernel)]
    )
    np.testing.assert_allclose(
        tf.convert_to_tensor(clipped_sparse).numpy(), dense / norm, rtol=1e-6
    )
    np.testing.assert_allclose(
        clipped_kernel.numpy(), dense_kernel / norm, rtol=1e-6
    )
    # The same as clipping the dense gradient, which Keras does right.
    reference = keras.optimizers.AdamW(1e-3, global_clipnorm=1.0)
    expected = reference._clip_gradients([dense, dense_kernel])
    np.testing.assert_allclose(
        tf.convert_to_tensor(clipped_sparse).numpy(),
        np.asarray(expected[0]),
        rtol=1e-6,
    )
    # Keras' own norm of the slices is another one.
    keras_clipped = reference._clip_gradients(
        [sparse, tf.constant(dense_kernel)]
    )
    assert not np.allclose(
        tf.convert_to_tensor(keras_clipped[0]).numpy(), dense / norm
    )
    # Below the norm nothing changes; None gradients pass through.
    small = keras_bert.training.AdamW(1e-3, global_clipnorm=100.0)
    unclipped, none = small._clip_gradients([sparse, None])
    assert none is None
    np.testing.assert_allclose(
        tf.convert_to_tensor(unclipped).numpy(), dense, rtol=1e-6
    )
