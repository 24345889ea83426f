"""BertMaskedLM: the paper's loss, training, saving."""

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert import BertMaskedLM
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import tiny_backbone_config


def _inputs(batch_size=2, seed=0):
    inputs = backbone_inputs(
        batch_size=batch_size, sequence_length=6, seed=seed
    )
    inputs["masked_positions"] = np.array([[1, 2, 0]] * batch_size, "int32")
    return inputs


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_outputs():
    model = BertMaskedLM(BertBackbone(**tiny_backbone_config()))
    outputs = model(_inputs(batch_size=3))
    assert outputs["mlm_logits"].shape == (3, 3, 50)
    assert outputs["nsp_logits"].shape == (3, 2)
    assert outputs["mlm_logits"].dtype == "float32"


def test_heads_read_the_backbones_full_outputs():
    """The last block runs only where the heads read (BertBackbone.
    outputs_at): the logits are the heads' on the full backbone outputs."""
    backbone = BertBackbone(**tiny_backbone_config())
    model = BertMaskedLM(backbone)
    inputs = _inputs(batch_size=3)
    inputs["masked_positions"] = np.array([[4, 1, 0], [5, 5, 2], [3, 0, 0]])
    full = backbone({k: inputs[k] for k in backbone.input})
    outputs = model(inputs)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(outputs["mlm_logits"]),
        keras.ops.convert_to_numpy(
            model.masked_lm_head(
                full["sequence_output"], inputs["masked_positions"]
            )
        ),
        atol=1e-5,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(outputs["nsp_logits"]),
        keras.ops.convert_to_numpy(model.nsp_dense(full["pooled_output"])),
        atol=1e-6,
    )


def test_default_loss_is_mean_over_real_slots_plus_nsp():
    model = BertMaskedLM(BertBackbone(**tiny_backbone_config(dropout=0.0)))
    inputs = _inputs(batch_size=2)
    # Row 0 has two real predictions, row 1 one; label 0 marks padding.
    mlm_labels = np.array([[5, 9, 0], [7, 0, 0]], "int32")
    nsp_labels = np.array([0, 1], "int32")
    outputs = model.predict(inputs, verbose=0)
    logp = _log_softmax(outputs["mlm_logits"].astype("float64"))
    real = [(0, 0, 5), (0, 1, 9), (1, 0, 7)]
    mlm = -np.mean([logp[b, p, t] for b, p, t in real])
    nsp_logp = _log_softmax(outputs["nsp_logits"].astype("float64"))
    nsp = -np.mean([nsp_logp[0, 0], nsp_logp[1, 1]])
    result = model.evaluate(
        inputs,
        {"mlm_logits": mlm_labels, "nsp_logits": nsp_labels},
        verbose=0,
        return_dict=True,
    )
    np.testing.assert_allclose(result["loss"], mlm + nsp, rtol=1e-5)
    # The share of the three real slots predicted right (a float32 metric:
    # compared within rounding, not by equality with 1 / 3).
    right = np.mean([logp[b, p].argmax() == t for b, p, t in real])
    np.testing.assert_allclose(result["mlm_logits_mlm_accuracy"], right, 1e-6)


def _copy_task(n=64, seed=0):
    """Predict the masked token: it always equals the token after it."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(5, 20, size=(n, 8)).astype("int32")
    tokens[:, 3] = tokens[:, 4]
    labels = tokens[:, 3].copy()
    tokens[:, 3] = 1  # [MASK]
    nsp = (tokens[:, 1] > 12).astype("int32")  # learnable from the input
    features = {
        "token_ids": tokens,
        "segment_ids": np.zeros_like(tokens),
        "padding_mask": np.ones_like(tokens),
        "masked_positions": np.tile([[3, 0]], (n, 1)).astype("int32"),
    }
    labels = {
        "mlm_logits": np.stack([labels, np.zeros_like(labels)], axis=1),
        "nsp_logits": nsp,
    }
    return features, labels


@pytest.mark.parametrize(
    "dtype",
    ["float32", pytest.param("mixed_bfloat16", marks=pytest.mark.slow)],
)
def test_fit_learns_a_small_task(dtype):
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=24,
            hidden_dim=32,
            num_heads=4,
            intermediate_dim=64,
            dropout=0.0,
            dtype=dtype,
        )
    )
    model = BertMaskedLM(backbone)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    features, labels = _copy_task()
    history = model.fit(
        features, labels, batch_size=16, epochs=30, verbose=0
    ).history
    assert history["loss"][-1] < 0.5 * history["loss"][0], history["loss"]
    assert history["mlm_logits_mlm_accuracy"][-1] > 0.5


def test_save_load_round_trip_keeps_weights_tied():
    model = BertMaskedLM(
        BertBackbone(**tiny_backbone_config()), activation="gelu_approximate"
    )
    assert_config_complete(model)
    restored = run_model_saving_test(model, _inputs())
    assert restored.activation == "gelu_approximate"
    head = restored.masked_lm_head
    assert head.token_embedding is restored.backbone.token_embedding
    # The tied matrix is stored once.
    assert len(restored.weights) == len(model.weights)


@pytest.mark.slow
def test_compile_settings_survive_saving(tmp_path):
    model = BertMaskedLM(BertBackbone(**tiny_backbone_config()))
    features, labels = _copy_task(n=8)
    model.fit(features, labels, epochs=1, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    assert int(restored.optimizer.iterations.numpy()) == 1
    restored.fit(features, labels, epochs=1, verbose=0)


def test_fill_mask_without_a_preprocessor_names_fill_mask_and_its_length():
    model = BertMaskedLM(BertBackbone(**tiny_backbone_config()))
    with pytest.raises(ValueError) as error:
        model.fill_mask(["the [MASK] fox"])
    message = str(error.value)
    assert message.startswith("BertMaskedLM.fill_mask received raw text")
    assert "sequence_length=128" in message  # what from_checkpoint attaches
    assert "from_checkpoint" in message and "ids dict" not in message
