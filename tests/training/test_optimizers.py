"""AdamW and LAMB decay every weight but LayerNorm and biases."""

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
