"""LoRA: `BertBackbone.enable_lora` on every task model and every path."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.models import merge_lora
from tests.helpers import backbone_inputs
from tests.helpers import served_variables
from tests.helpers import tiny_backbone_config

TASKS = {
    "classifier": lambda b: keras_bert.BertClassifier(
        b, num_classes=3, dropout=0.0
    ),
    "masked_lm": keras_bert.BertMaskedLM,
    "question_answerer": keras_bert.BertQuestionAnswerer,
    "token_classifier": lambda b: keras_bert.BertTokenClassifier(
        b, num_classes=3, dropout=0.0
    ),
}


def _inputs(task_name, batch_size=3, sequence_length=6):
    inputs = backbone_inputs(batch_size, sequence_length)
    if task_name == "masked_lm":
        inputs["masked_positions"] = np.array([[1, 2, 0]] * batch_size, "int32")
    return inputs


def _model(task_name, **backbone_overrides):
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(dropout=0.0, **backbone_overrides)
    )
    return TASKS[task_name](backbone)


def _outputs(model, inputs, training=False):
    return keras.tree.map_structure(
        keras.ops.convert_to_numpy, model(inputs, training=training)
    )


def _assert_close(a, b, atol):
    keras.tree.map_structure(
        lambda x, y: np.testing.assert_allclose(x, y, atol=atol), a, b
    )


def _move_lora(backbone, seed=1):
    """Non-zero LoRA updates, as training would leave them."""
    rng = np.random.default_rng(seed)
    for weight in backbone.weights:
        if "lora_kernel" in weight.path:
            weight.assign(rng.normal(0, 0.3, weight.shape))


def _head_weights(model):
    backbone_ids = {id(w) for w in model.backbone.weights}
    return {w.path for w in model.weights if id(w) not in backbone_ids}


@pytest.mark.parametrize("task_name", sorted(TASKS))
def test_only_lora_and_the_head_train_and_outputs_start_unchanged(task_name):
    model = _model(task_name)
    inputs = _inputs(task_name)
    before = _outputs(model, inputs)
    model.backbone.enable_lora(2)
    trainable = {w.path for w in model.trainable_weights}
    lora = {w.path for w in model.backbone.trainable_weights}
    assert lora == {
        f"transformer_layer_{i}/qkv_dense/lora_kernel_{ab}"
        for i in range(2)
        for ab in "ab"
    }
    # The head's own weights (not the tied embedding) stay trainable.
    assert trainable == lora | _head_weights(model)
    _assert_close(_outputs(model, inputs), before, atol=1e-6)


@pytest.mark.parametrize("optimizations", [None, ()], ids=["fast", "reference"])
@pytest.mark.parametrize("task_name", ["classifier", "masked_lm"])
def test_lora_reaches_every_path_like_merged_kernels(
    monkeypatch, task_name, optimizations
):
    """With LoRA moved, the model equals its merged copy in inference
    (the query-positions path of `outputs_at`) and in training (the
    XLA-fused path on the fast side, forced on this tiny shape)."""
    from keras_bert.layers import fused_ops

    monkeypatch.setattr(fused_ops, "MIN_ELEMENTS", 0)
    model = _model(task_name, optimizations=optimizations)
    inputs = _inputs(task_name)
    start = _outputs(model, inputs)
    model.backbone.enable_lora(
        2, target_layer_names=("qkv_dense", "output_dense")
    )
    _move_lora(model.backbone)
    merged = merge_lora(model)
    assert merged.backbone.lora_rank is None
    assert not any("lora" in w.path for w in merged.weights)
    for training in (False, True):
        lora_outputs = _outputs(model, inputs, training)
        _assert_close(_outputs(merged, inputs, training), lora_outputs, 1e-5)
    # LoRA changed the outputs, so every path above read it.
    assert not np.allclose(
        keras.tree.flatten(lora_outputs)[0], keras.tree.flatten(start)[0]
    )


def test_gradients_reach_lora_only():
    model = _model("classifier")
    model.backbone.enable_lora(2)
    inputs = _inputs("classifier")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(inputs, training=True) ** 2)
    weights = model.trainable_weights
    gradients = tape.gradient(loss, weights)
    for weight, gradient in zip(weights, gradients):
        # B starts at zero: A's first gradient is zero, B's is not.
        if "lora_kernel_a" not in weight.path:
            assert np.any(gradient.numpy() != 0), weight.path


def test_keras_file_reloads_with_lora_and_keeps_training(tmp_path):
    model = _model("classifier")
    model.backbone.enable_lora(2)
    _move_lora(model.backbone)
    inputs = _inputs("classifier")
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.backbone.lora_rank == 2
    assert restored.backbone.get_config()["lora_rank"] == 2
    assert {w.path for w in restored.trainable_weights} == {
        w.path for w in model.trainable_weights
    }
    # The LoRA weights came back as they were, not merged and zeroed.
    for saved, loaded in zip(model.weights, restored.weights):
        np.testing.assert_array_equal(saved.numpy(), loaded.numpy())
    _assert_close(_outputs(restored, inputs), _outputs(model, inputs), 1e-6)


def test_weight_files_keep_lora_weights(tmp_path):
    model = _model("token_classifier")
    model.backbone.enable_lora(2)
    _move_lora(model.backbone)
    path = os.path.join(tmp_path, "model.weights.h5")
    model.save_weights(path)
    other = _model("token_classifier")
    other.backbone.enable_lora(2)
    other.load_weights(path)
    for saved, loaded in zip(model.weights, other.weights):
        np.testing.assert_array_equal(saved.numpy(), loaded.numpy())
    plain = _model("token_classifier")
    with pytest.raises(ValueError, match=r"enable_lora\(rank\)"):
        plain.load_weights(path)


def test_plain_weights_load_into_a_lora_model(tmp_path):
    model = _model("classifier")
    path = os.path.join(tmp_path, "plain.weights.h5")
    model.save_weights(path)
    other = _model("classifier")
    other.backbone.enable_lora(2)
    _move_lora(other.backbone)
    other.load_weights(path)
    inputs = _inputs("classifier")
    _assert_close(_outputs(other, inputs), _outputs(model, inputs), 1e-6)


@pytest.mark.parametrize(
    "rank, message",
    [
        (0, "expected a positive integer"),
        (-1, "expected a positive integer"),
        (2.5, "expected a positive integer"),
        (9, "at most hidden_dim=8"),
    ],
)
def test_bad_rank_is_refused(rank, message):
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    with pytest.raises(ValueError, match=message):
        backbone.enable_lora(rank)
    assert backbone.lora_rank is None


def test_bad_targets_and_a_second_call_are_refused():
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    with pytest.raises(ValueError, match="target_layer_names"):
        backbone.enable_lora(2, target_layer_names=("query_dense",))
    backbone.enable_lora(2)
    with pytest.raises(ValueError, match="already enabled"):
        backbone.enable_lora(4)


def test_mixed_precision():
    model = _model("classifier", dtype="mixed_bfloat16")
    inputs = _inputs("classifier")
    before = _outputs(model, inputs)
    model.backbone.enable_lora(2)
    assert {w.dtype for w in model.backbone.trainable_weights} == {"float32"}
    _assert_close(_outputs(model, inputs), before, atol=1e-6)
    _move_lora(model.backbone)
    # bfloat16 computation: the merged copy agrees to bfloat16 rounding.
    _assert_close(
        _outputs(merge_lora(model), inputs), _outputs(model, inputs), 5e-2
    )


@pytest.mark.parametrize(
    "documented, check",
    [
        (
            keras_bert.BertBackbone.enable_lora,
            lambda ns: len(ns["backbone"].trainable_weights) == 4,
        ),
        (
            keras_bert.layers.LoraDense,
            lambda ns: (
                [w.name for w in ns["dense"].trainable_weights]
                == ["bias", "lora_kernel_a", "lora_kernel_b"]
            ),
        ),
        (merge_lora, lambda ns: ns["merged"].backbone.lora_rank is None),
    ],
)
def test_docstring_examples_run(documented, check):
    import inspect
    import re

    example = re.search(
        r"```python\n(.*?)```", inspect.getdoc(documented), re.S
    ).group(1)
    namespace = {"np": np, "keras": keras, "keras_bert": keras_bert}
    exec(example, namespace)
    assert check(namespace)


def test_the_recipes_lora_rank_flag():
    from absl import app

    from keras_bert.cli import recipe_flags

    values = {"init_checkpoint": "ckpt", "preset": None, "lora_rank": -1}
    values["warmup_fraction"] = 0.1
    with pytest.raises(app.UsageError, match="--lora_rank must be 0"):
        recipe_flags.check_flags(values, positive=())
    recipe_flags.check_flags({**values, "lora_rank": 8}, positive=())


def test_a_hugging_face_checkpoint_holds_the_merged_kernels(tmp_path):
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    backbone.enable_lora(2)
    _move_lora(backbone)
    keras_bert.checkpoints.save_huggingface(backbone, None, str(tmp_path))
    reloaded = keras_bert.BertBackbone.from_checkpoint(str(tmp_path))
    inputs = backbone_inputs()
    _assert_close(_outputs(reloaded, inputs), _outputs(backbone, inputs), 1e-6)


def test_the_export_serves_the_merged_model(tmp_path):
    """No LoRA weights in the SavedModel; its answers are the merged
    model's, which are the LoRA model's."""
    from keras_bert.serving import export_saved_model

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "dog"]
    vocabulary += ["the", "fox", "quick", "lazy"]
    texts = ["the quick fox", "a lazy dog", "a dog", "the the fox"]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=8
    )
    model = _model("classifier", vocabulary_size=len(vocabulary))
    model.backbone.enable_lora(2)
    _move_lora(model.backbone)
    path = export_saved_model(model, preprocessor, str(tmp_path))
    loaded = tf.saved_model.load(path)
    served = served_variables(path)
    assert served  # at least the WordPiece table
    assert not any("lora" in v.name for v in served)
    saved = tf.train.list_variables(f"{path}/variables/variables")
    assert not any("lora" in name.lower() for name, _ in saved)
    served = loaded.signatures["serving_default"](text=tf.constant(texts))
    features = preprocessor(tf.constant(texts))
    merged_logits = _outputs(merge_lora(model), features)
    np.testing.assert_allclose(
        merged_logits, _outputs(model, features), atol=1e-6
    )
    np.testing.assert_allclose(
        served["probabilities"].numpy(),
        keras.ops.convert_to_numpy(keras.ops.softmax(merged_logits)),
        atol=1e-6,
    )


def test_from_checkpoint_enables_lora_after_loading(tmp_path):
    backbone = keras_bert.BertBackbone(**tiny_backbone_config())
    keras_bert.checkpoints.save_huggingface(backbone, None, str(tmp_path))
    classifier = keras_bert.BertClassifier.from_checkpoint(
        str(tmp_path), num_classes=2, lora_rank=2
    )
    assert classifier.backbone.lora_rank == 2
    inputs = backbone_inputs()
    _assert_close(
        _outputs(classifier.backbone, inputs), _outputs(backbone, inputs), 1e-6
    )
