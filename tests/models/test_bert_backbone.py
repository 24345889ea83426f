"""BertBackbone: outputs, padding, saving, argument checks."""

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def test_output_shapes_and_dtypes():
    backbone = BertBackbone(**tiny_backbone_config())
    outputs = backbone(backbone_inputs(batch_size=3, sequence_length=7))
    assert outputs["sequence_output"].shape == (3, 7, 8)
    assert outputs["pooled_output"].shape == (3, 8)
    assert set(outputs) == {"sequence_output", "pooled_output"}


def test_pooled_output_is_tanh_dense_of_cls():
    backbone = BertBackbone(**tiny_backbone_config())
    outputs = backbone(backbone_inputs())
    kernel, bias = backbone.pooler_dense.get_weights()
    cls = _numpy(outputs["sequence_output"])[:, 0]
    np.testing.assert_allclose(
        _numpy(outputs["pooled_output"]),
        np.tanh(cls @ kernel + bias),
        atol=1e-6,
    )


def test_padding_does_not_change_real_positions():
    backbone = BertBackbone(**tiny_backbone_config())
    inputs = backbone_inputs(batch_size=2, sequence_length=8)
    real = inputs["padding_mask"].astype(bool)
    base = _numpy(backbone(inputs)["sequence_output"])
    base_pooled = _numpy(backbone(inputs)["pooled_output"])

    # Different ids (and segments) under the padding.
    changed = {k: v.copy() for k, v in inputs.items()}
    changed["token_ids"][~real] = 17
    changed["segment_ids"][~real] = 1
    out = backbone(changed)
    assert (
        np.abs(_numpy(out["sequence_output"])[real] - base[real]).max() <= 1e-6
    )
    assert np.abs(_numpy(out["pooled_output"]) - base_pooled).max() <= 1e-6

    # More padding appended.
    longer = {k: np.pad(v, ((0, 0), (0, 5))) for k, v in inputs.items()}
    out = backbone(longer)
    longer_seq = _numpy(out["sequence_output"])[:, :8]
    assert np.abs(longer_seq[real] - base[real]).max() <= 1e-6
    assert np.abs(_numpy(out["pooled_output"]) - base_pooled).max() <= 1e-6


def test_outputs_at_equal_the_full_outputs_where_they_are_read():
    backbone = BertBackbone(**tiny_backbone_config(num_layers=3))
    inputs = backbone_inputs(batch_size=2, sequence_length=8)
    full = backbone(inputs)
    positions = np.array([[3, 1, 1], [7, 0, 5]])
    at = backbone.outputs_at(inputs, positions)
    np.testing.assert_allclose(
        _numpy(at["sequence_output"]),
        np.take_along_axis(
            _numpy(full["sequence_output"]), positions[:, :, None], axis=1
        ),
        atol=1e-6,
    )
    for outputs in (at, backbone.outputs_at(inputs)):
        np.testing.assert_allclose(
            _numpy(outputs["pooled_output"]),
            _numpy(full["pooled_output"]),
            atol=1e-6,
        )
    assert set(backbone.outputs_at(inputs)) == {"pooled_output"}

    # Symbolic: a head of one's own, sharing the backbone's weights.
    symbolic = {
        name: keras.Input(shape=(None,), dtype="int32", name=name)
        for name in inputs
    }
    model = keras.Model(
        symbolic, backbone.outputs_at(symbolic)["pooled_output"]
    )
    np.testing.assert_allclose(
        _numpy(model(inputs)), _numpy(full["pooled_output"]), atol=1e-6
    )
    assert model.count_params() == backbone.count_params()
    with pytest.raises(ValueError, match="missing \\['padding_mask'\\]"):
        backbone.outputs_at({"token_ids": 1, "segment_ids": 1})


def test_optimizations_switch_is_passed_down_and_serialised():
    """`optimizations=()` (the reference computation, Keras' own layers,
    the last block at every position) gives the default's outputs; the
    switch reaches every block and the embedding, and configs saved
    without it load with all the optimisations."""
    from keras_bert.layers.optimizations import ALL

    default = BertBackbone(**tiny_backbone_config())
    reference = BertBackbone(**tiny_backbone_config(), optimizations=())
    reference.set_weights(default.get_weights())
    assert reference.get_config()["optimizations"] == []
    assert all(
        layer.optimizations == ()
        for layer in [reference.embedding] + reference.transformer_layers
    )
    inputs = backbone_inputs(batch_size=2, sequence_length=8)
    positions = np.array([[3, 1], [7, 0]])
    for outputs, expected in (
        (reference(inputs), default(inputs)),
        (
            reference.outputs_at(inputs, positions),
            default.outputs_at(inputs, positions),
        ),
    ):
        for key in expected:
            np.testing.assert_allclose(
                _numpy(outputs[key]), _numpy(expected[key]), atol=1e-6
            )
    config = default.get_config()
    assert config.pop("optimizations") == list(ALL)
    assert BertBackbone.from_config(config).optimizations == ALL


def test_dropout_is_inactive_at_inference():
    backbone = BertBackbone(**tiny_backbone_config(dropout=0.5))
    inputs = backbone_inputs()
    a = _numpy(backbone(inputs)["sequence_output"])
    b = _numpy(backbone.predict(inputs, verbose=0)["sequence_output"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    c = _numpy(backbone(inputs, training=True)["sequence_output"])
    assert np.abs(a - c).max() > 1e-3


def test_save_load_round_trip_and_config():
    backbone = BertBackbone(
        **tiny_backbone_config(activation="gelu_approximate", dropout=0.2)
    )
    assert_config_complete(backbone)
    restored = run_model_saving_test(backbone, backbone_inputs())
    assert restored.get_config() == backbone.get_config()


def test_from_config_round_trip_keeps_every_argument():
    config = tiny_backbone_config(
        dropout=0.3,
        attention_dropout=0.05,
        num_segments=3,
        activation="gelu_approximate",
        layer_norm_epsilon=1e-6,
        initializer_range=0.05,
        name="my_bert",
    )
    backbone = BertBackbone(**config)
    rebuilt = BertBackbone.from_config(backbone.get_config())
    for key, value in config.items():
        assert rebuilt.get_config()[key] == value, key


def test_hidden_not_divisible_by_heads():
    with pytest.raises(ValueError, match="hidden_dim=10 and num_heads=4"):
        BertBackbone(**tiny_backbone_config(hidden_dim=10, num_heads=4))


def test_token_ids_out_of_range_in_eager_mode():
    backbone = BertBackbone(**tiny_backbone_config())
    inputs = backbone_inputs()
    inputs["token_ids"][1, 1] = 50
    with pytest.raises(ValueError, match=r"token_ids.*\[0, 50\).*value 50"):
        backbone(inputs)


def test_sequence_longer_than_positions():
    backbone = BertBackbone(**tiny_backbone_config(max_sequence_length=4))
    with pytest.raises(ValueError, match="max_sequence_length=4"):
        backbone(backbone_inputs(sequence_length=6))


def test_missing_input_key_is_named():
    backbone = BertBackbone(**tiny_backbone_config())
    inputs = backbone_inputs()
    del inputs["padding_mask"]
    with pytest.raises(ValueError, match="padding_mask"):
        backbone(inputs)


@pytest.mark.parametrize(
    "argument", ["vocabulary_size", "num_layers", "num_heads", "hidden_dim"]
)
def test_non_positive_sizes_are_refused(argument):
    with pytest.raises(ValueError, match=f"{argument}=0"):
        BertBackbone(**tiny_backbone_config(**{argument: 0}))


def test_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="activation='relu'"):
        BertBackbone(**tiny_backbone_config(activation="relu"))


def test_mixed_bfloat16_backbone():
    backbone = BertBackbone(**tiny_backbone_config(dtype="mixed_bfloat16"))
    outputs = backbone(backbone_inputs())
    assert outputs["sequence_output"].dtype == "bfloat16"
    assert all(w.dtype == "float32" for w in backbone.weights)
    fp32 = BertBackbone(**tiny_backbone_config())
    fp32.set_weights(backbone.get_weights())
    reference = _numpy(fp32(backbone_inputs())["sequence_output"])
    lowp = _numpy(keras.ops.cast(outputs["sequence_output"], "float32"))
    # bfloat16 has 8 bits of mantissa: agreement to a few percent.
    assert np.abs(lowp - reference).max() < 0.1


def test_mixed_precision_policy_survives_config_and_saving():
    backbone = BertBackbone(**tiny_backbone_config(dtype="mixed_bfloat16"))
    assert backbone.dtype_policy.name == "mixed_bfloat16"
    rebuilt = BertBackbone.from_config(backbone.get_config())
    assert rebuilt.dtype_policy.name == "mixed_bfloat16"
    assert rebuilt.embedding.dtype_policy.name == "mixed_bfloat16"
    restored = run_model_saving_test(backbone, backbone_inputs())
    assert restored.transformer_layers[0].dtype_policy.name == "mixed_bfloat16"
