"""BertTokenClassifier: a tag per token, trained on labelled positions only.

Checked: logits `(batch, sequence, classes)` float32 (also under
`mixed_bfloat16`); the default loss is PyTorch's `cross_entropy` with
`ignore_index=-100` (mean over labelled positions), positions labelled
`-100` change neither the loss nor its gradient, and the accuracy counts
labelled positions only; `fit` learns with `-100` labels present; config,
`.keras` saving and labels survive; bad arguments are named in the error;
a Hugging Face checkpoint written by `save_huggingface` reads back as a
`BertTokenClassifier` (by class and by `"auto"`), with its labels and
without pooler tensors; the serving endpoints need tag-like labels.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

import keras_bert
from keras_bert import BertBackbone
from keras_bert import BertTokenClassifier
from keras_bert.serving import serving_endpoints
from keras_bert.training.losses import IGNORED_LABEL
from keras_bert.training.losses import GlobalBatchCrossEntropy
from tests.helpers import assert_config_complete
from tests.helpers import backbone_inputs
from tests.helpers import run_model_saving_test
from tests.helpers import run_serialization_test
from tests.helpers import tiny_backbone_config

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def tagger(num_classes=len(LABELS), labels=LABELS, **backbone_overrides):
    backbone = BertBackbone(**tiny_backbone_config(**backbone_overrides))
    return BertTokenClassifier(backbone, num_classes, labels=labels)


def token_labels(inputs, num_classes, seed=0):
    """Random tags; `-100` on `[CLS]`-like first tokens and padding."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, inputs["token_ids"].shape)
    labels[:, 0] = IGNORED_LABEL
    labels[inputs["padding_mask"] == 0] = IGNORED_LABEL
    return labels.astype("int32")


def random_logits_and_labels(shape=(4, 16), num_classes=9, seed=0):
    """Random logits and labels, about half of them `-100`."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, (*shape, num_classes)).astype("float32")
    labels = rng.integers(0, num_classes, shape).astype("int32")
    labels[rng.random(shape) < 0.5] = IGNORED_LABEL
    assert 0 < (labels != IGNORED_LABEL).sum() < labels.size
    return logits, labels


def torch_cross_entropy(logits, labels):
    """PyTorch's loss (as `BertForTokenClassification`) and its gradient."""
    torch = pytest.importorskip("torch")
    num_classes = logits.shape[-1]
    logits = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, num_classes),
        torch.tensor(labels, dtype=torch.long).reshape(-1),
        ignore_index=-100,
    )
    loss.backward()
    return loss.item(), logits.grad.numpy()


def loss_and_gradient(loss_fn, logits, labels):
    logits = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = loss_fn(tf.constant(labels), logits)
    return float(loss), tape.gradient(loss, logits).numpy()


# --- Outputs -----------------------------------------------------------------


def test_logits_shape_and_dtype():
    model = tagger()
    logits = model(backbone_inputs(batch_size=3, sequence_length=7))
    assert logits.shape == (3, 7, len(LABELS))
    assert logits.dtype == "float32"


def test_logits_stay_float32_under_mixed_bfloat16():
    model = tagger(dtype="mixed_bfloat16")
    assert model.backbone.dtype_policy.name == "mixed_bfloat16"
    logits = model(backbone_inputs(batch_size=3, sequence_length=7))
    assert logits.shape == (3, 7, len(LABELS))
    assert logits.dtype == "float32"
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(logits)))


def test_logits_are_sequence_output_times_kernel_plus_bias():
    model = tagger(dropout=0.0)
    rng = np.random.default_rng(0)
    kernel = rng.normal(size=(8, len(LABELS))).astype("float32")
    bias = rng.normal(size=(len(LABELS),)).astype("float32")
    model.output_dense.kernel.assign(kernel)
    model.output_dense.bias.assign(bias)
    inputs = backbone_inputs()
    hidden = keras.ops.convert_to_numpy(
        model.backbone(inputs)["sequence_output"]
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(model(inputs)),
        hidden @ kernel + bias,
        atol=1e-5,
    )


def test_head_kernel_is_normal_not_truncated():
    # Hugging Face's init (normal, std initializer_range), which trained
    # faster on CoNLL than the truncated normal (docs/ner.md). A truncated
    # normal never draws beyond 2 std; a normal does, ~4.6% of the time.
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(**tiny_backbone_config(hidden_dim=64, num_heads=2))
    model = BertTokenClassifier(backbone, num_classes=50)
    kernel = keras.ops.convert_to_numpy(model.output_dense.kernel)
    std = backbone.initializer_range
    assert abs(kernel.std() - std) < 0.05 * std
    assert 0.03 < np.mean(np.abs(kernel) > 2 * std) < 0.065
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model.output_dense.bias), 0.0
    )


def test_pooler_is_frozen_and_not_in_trainable_weights():
    model = tagger()
    trainable = {id(v) for v in model.trainable_variables}
    assert id(model.backbone.pooler_dense.kernel) not in trainable
    assert id(model.output_dense.kernel) in trainable


# --- Loss and metric ---------------------------------------------------------


def test_default_loss_is_cross_entropy_ignoring_minus_100():
    model = tagger()
    assert isinstance(model.loss, GlobalBatchCrossEntropy)
    assert model.loss.ignore_class == IGNORED_LABEL == -100


def test_loss_and_gradient_equal_torch_cross_entropy_ignore_index():
    """Mean over labelled positions, as `BertForTokenClassification`."""
    logits, labels = random_logits_and_labels()
    loss, gradient = loss_and_gradient(tagger().loss, logits, labels)
    expected_loss, expected_gradient = torch_cross_entropy(logits, labels)
    np.testing.assert_allclose(loss, expected_loss, atol=1e-6, rtol=0)
    np.testing.assert_allclose(gradient, expected_gradient, atol=1e-6, rtol=0)


def test_ignored_positions_change_neither_loss_nor_gradient():
    model = tagger()
    logits, labels = random_logits_and_labels(seed=1)
    ignored = labels == IGNORED_LABEL
    changed = logits.copy()
    changed[ignored] = np.random.default_rng(2).normal(
        0, 50, changed[ignored].shape
    )
    loss, gradient = loss_and_gradient(model.loss, logits, labels)
    changed_loss, changed_gradient = loss_and_gradient(
        model.loss, changed, labels
    )
    assert loss == changed_loss
    np.testing.assert_array_equal(gradient, changed_gradient)
    assert np.all(gradient[ignored] == 0)
    assert np.all(np.abs(gradient[~ignored]).sum(-1) > 0)


def test_evaluate_counts_labelled_positions_only():
    """A hand-worked case: every token predicts class 1 (bias only).

    Labelled positions: 1, 2, 1 in row 0 and 1, 0 in row 1: accuracy 3/5.
    Each labelled position's loss is logsumexp(bias) - bias[label].
    """
    model = BertTokenClassifier(
        BertBackbone(**tiny_backbone_config()), 3, dropout=0.0
    )
    bias = np.array([0.0, 2.0, -1.0], "float32")
    model.output_dense.kernel.assign(np.zeros((8, 3), "float32"))
    model.output_dense.bias.assign(bias)
    inputs = backbone_inputs(batch_size=2, sequence_length=6)
    labels = np.array(
        [[-100, 1, 2, 1, -100, -100], [-100, 1, -100, 0, -100, -100]], "int32"
    )
    result = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    np.testing.assert_allclose(result["accuracy"], 3 / 5, rtol=1e-6)
    log_sum_exp = np.log(np.exp(bias).sum())
    by_hand = np.mean([log_sum_exp - bias[k] for k in (1, 2, 1, 1, 0)])
    np.testing.assert_allclose(result["loss"], by_hand, rtol=1e-6)


def test_all_positions_ignored_gives_zero_loss_not_nan():
    model = tagger()
    logits, labels = random_logits_and_labels()
    labels[:] = IGNORED_LABEL
    loss, gradient = loss_and_gradient(model.loss, logits, labels)
    assert loss == 0.0
    assert np.all(gradient == 0)


# --- Training ----------------------------------------------------------------


def copy_task(n=32, length=10, num_classes=3, seed=0):
    """Tag = token id mod `num_classes`; `-100` on the ends and padding."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(5, 40, (n, length)).astype("int32")
    padding_mask = np.ones_like(tokens)
    for row, used in enumerate(rng.integers(4, length + 1, n)):
        padding_mask[row, used:] = 0
    tokens = np.where(padding_mask == 1, tokens, 0).astype("int32")
    tokens[:, 0] = 2  # [CLS]
    labels = (tokens % num_classes).astype("int32")
    labels[:, 0] = IGNORED_LABEL
    labels[padding_mask == 0] = IGNORED_LABEL
    features = {
        "token_ids": tokens,
        "segment_ids": np.zeros_like(tokens),
        "padding_mask": padding_mask,
    }
    return features, labels


def test_fit_with_default_compile_runs_with_ignored_labels():
    model = tagger(num_classes=3, labels=None)
    features, labels = copy_task()
    assert (labels == IGNORED_LABEL).sum() > 32
    history = model.fit(features, labels, batch_size=8, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert 0 <= history.history["accuracy"][-1] <= 1


@pytest.mark.parametrize(
    "dtype",
    [
        pytest.param(dtype, marks=pytest.mark.slow)  # a minute on two cores
        for dtype in ("float32", "mixed_bfloat16")
    ],
)
def test_fit_learns_a_tagging_task(dtype):
    keras.utils.set_random_seed(0)
    model = BertTokenClassifier(
        BertBackbone(
            **tiny_backbone_config(
                hidden_dim=32,
                num_heads=4,
                intermediate_dim=64,
                dropout=0.0,
                dtype=dtype,
            )  # fmt: skip
        ),
        num_classes=3,
        dropout=0.0,
    )
    model.compile(optimizer=keras.optimizers.Adam(3e-3))  # loss "auto"
    assert isinstance(model.loss, GlobalBatchCrossEntropy)
    features, labels = copy_task()
    history = model.fit(features, labels, batch_size=8, epochs=20, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert history.history["accuracy"][-1] > 0.9, history.history


# --- Config and saving -------------------------------------------------------


def test_config_is_complete_and_round_trips():
    model = tagger(dropout=0.0)
    assert_config_complete(model)
    config = model.get_config()
    assert config["num_classes"] == len(LABELS)
    assert config["labels"] == LABELS
    rebuilt = run_serialization_test(model)
    assert rebuilt.labels == LABELS


def test_keras_file_round_trip_keeps_outputs_labels_and_loss(tmp_path):
    backbone = BertBackbone(**tiny_backbone_config())
    model = BertTokenClassifier(
        backbone, len(LABELS), dropout=0.3, labels=LABELS
    )
    inputs = backbone_inputs()
    restored = run_model_saving_test(model, inputs)
    assert restored.labels == LABELS
    assert restored.label_names == LABELS
    assert restored.num_classes == len(LABELS)
    assert restored.dropout == 0.3
    labels = token_labels(inputs, len(LABELS))
    assert isinstance(restored.loss, GlobalBatchCrossEntropy)
    assert restored.loss.ignore_class == IGNORED_LABEL
    expected = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    actual = restored.evaluate(inputs, labels, verbose=0, return_dict=True)
    np.testing.assert_allclose(actual["loss"], expected["loss"], rtol=1e-6)
    assert actual["accuracy"] == expected["accuracy"]


def test_keras_file_round_trip_without_labels():
    model = tagger(num_classes=3, labels=None)
    restored = run_model_saving_test(model, backbone_inputs())
    assert restored.labels is None
    assert restored.label_names == ["LABEL_0", "LABEL_1", "LABEL_2"]


def test_label_names_default_and_given():
    assert tagger(num_classes=3, labels=None).label_names == [
        "LABEL_0",
        "LABEL_1",
        "LABEL_2",
    ]
    model = tagger()
    assert model.label_names == LABELS
    model.label_names.append("changed")  # a copy: the model is unchanged
    assert model.label_names == LABELS


def test_labels_are_stored_as_strings():
    model = tagger(num_classes=3, labels=[0, 1, 2])
    assert model.labels == ["0", "1", "2"]


# --- Argument checks ---------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"num_classes": 0}, "num_classes=0"),
        ({"num_classes": -2}, "num_classes=-2"),
        ({"num_classes": "3"}, "num_classes='3'"),
        ({"num_classes": 2.0}, "num_classes=2.0"),
        ({"num_classes": 3, "dropout": 1.0}, "dropout=1.0"),
        ({"num_classes": 3, "dropout": -0.1}, "dropout=-0.1"),
        (
            {"num_classes": 3, "labels": ["O", "B-PER"]},
            r"3 distinct labels.*labels=\['O', 'B-PER'\]",
        ),
        (
            {"num_classes": 3, "labels": ["O", "B-PER", "I-PER", "B-LOC"]},
            r"labels=\['O', 'B-PER', 'I-PER', 'B-LOC'\]",
        ),
        (
            {"num_classes": 3, "labels": ["O", "B-PER", "O"]},
            r"distinct.*labels=\['O', 'B-PER', 'O'\]",
        ),
    ],
)
def test_invalid_arguments_are_named(arguments, message):
    backbone = BertBackbone(**tiny_backbone_config())
    with pytest.raises(ValueError, match=message):
        BertTokenClassifier(backbone, **arguments)


# --- Hugging Face checkpoints ------------------------------------------------


def trained_looking_tagger():
    """A tagger with a non-zero head (bias too) and explicit labels."""
    model = tagger(dropout=0.0)
    rng = np.random.default_rng(0)
    model.output_dense.kernel.assign(
        rng.normal(size=(8, len(LABELS))).astype("float32")
    )
    model.output_dense.bias.assign(
        rng.normal(size=(len(LABELS),)).astype("float32")
    )
    return model


def assert_same_logits(model, expected_model, inputs):
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model(inputs, training=False)),
        keras.ops.convert_to_numpy(expected_model(inputs, training=False)),
    )


def test_huggingface_round_trip_restores_classes_labels_and_logits(tmp_path):
    model = trained_looking_tagger()
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    restored = BertTokenClassifier.from_checkpoint(str(tmp_path))
    assert restored.num_classes == len(LABELS)
    assert restored.labels == LABELS
    assert_same_logits(restored, model, backbone_inputs())


def test_auto_detects_a_token_classifier_not_a_sequence_classifier(tmp_path):
    """`classifier.*` is also BertClassifier's; `architectures` decides."""
    model = trained_looking_tagger()
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    restored = keras_bert.checkpoints.load_checkpoint(str(tmp_path), "auto")
    assert type(restored) is BertTokenClassifier
    assert restored.labels == LABELS
    assert_same_logits(restored, model, backbone_inputs())


def test_written_config_and_tensors(tmp_path):
    model = trained_looking_tagger()
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    with open(tmp_path / "config.json") as file:
        config = json.load(file)
    assert config["architectures"] == ["BertForTokenClassification"]
    assert config["id2label"] == {str(i): n for i, n in enumerate(LABELS)}
    assert config["label2id"] == {n: i for i, n in enumerate(LABELS)}
    assert config["classifier_dropout"] == 0.1

    tensors = load_file(str(tmp_path / "model.safetensors"))
    assert not [name for name in tensors if "pooler" in name]
    assert all(n.startswith(("bert.", "classifier.")) for n in tensors)
    assert set(n for n in tensors if n.startswith("classifier.")) == {
        "classifier.weight",
        "classifier.bias",
    }
    # Hugging Face layout: (out, in).
    np.testing.assert_array_equal(
        tensors["classifier.weight"],
        keras.ops.convert_to_numpy(model.output_dense.kernel).T,
    )
    np.testing.assert_array_equal(
        tensors["classifier.bias"],
        keras.ops.convert_to_numpy(model.output_dense.bias),
    )


def test_default_labels_are_written_and_read_back_as_none(tmp_path):
    model = tagger(num_classes=3, labels=None)
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    with open(tmp_path / "config.json") as file:
        config = json.load(file)
    assert config["id2label"] == {
        "0": "LABEL_0",
        "1": "LABEL_1",
        "2": "LABEL_2",
    }
    restored = BertTokenClassifier.from_checkpoint(str(tmp_path))
    assert restored.num_classes == 3
    assert restored.labels is None


def test_given_labels_override_the_checkpoints(tmp_path):
    model = trained_looking_tagger()
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    other = ["O", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
    restored = BertTokenClassifier.from_checkpoint(str(tmp_path), labels=other)
    assert restored.labels == other
    assert_same_logits(restored, model, backbone_inputs())


def test_wrong_num_classes_for_the_checkpoint_head_is_an_error(tmp_path):
    model = trained_looking_tagger()
    keras_bert.checkpoints.save_huggingface(model, None, str(tmp_path))
    with pytest.raises(ValueError, match="classifier.weight"):
        BertTokenClassifier.from_checkpoint(str(tmp_path), num_classes=3)


def test_backbone_checkpoint_needs_num_classes_or_labels(tmp_path):
    backbone = BertBackbone(**tiny_backbone_config())
    keras_bert.checkpoints.save_huggingface(backbone, None, str(tmp_path))
    with pytest.raises(ValueError, match="num_classes"):
        BertTokenClassifier.from_checkpoint(str(tmp_path))

    model = BertTokenClassifier.from_checkpoint(str(tmp_path), labels=LABELS)
    assert model.num_classes == len(LABELS)
    assert model.labels == LABELS
    inputs = backbone_inputs()
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model.backbone(inputs)["sequence_output"]),
        keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"]),
    )

    model = BertTokenClassifier.from_checkpoint(str(tmp_path), num_classes=4)
    assert model.num_classes == 4 and model.labels is None


# --- Serving -----------------------------------------------------------------


def preprocessor():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
        f"word{i}" for i in range(45)
    ]
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=16
    )


def test_serving_needs_tag_like_labels():
    model = tagger(num_classes=3, labels=None)
    with pytest.raises(ValueError, match="labels="):
        serving_endpoints(model, preprocessor())
    with pytest.raises(ValueError, match="'LABEL_0'"):
        serving_endpoints(model, preprocessor())


def test_serving_labels_argument_replaces_the_models():
    model = tagger(num_classes=3, labels=None)
    endpoints = serving_endpoints(
        model, preprocessor(), labels=["O", "B-PER", "I-PER"]
    )
    assert {"serving_default", "predict_ids"} <= set(endpoints)
    with pytest.raises(ValueError, match="3 classes but 2 labels"):
        serving_endpoints(model, preprocessor(), labels=["O", "B-PER"])


def test_serving_with_bio_labels_builds_endpoints():
    endpoints = serving_endpoints(tagger(), preprocessor())
    assert {"serving_default", "predict_ids"} <= set(endpoints)
