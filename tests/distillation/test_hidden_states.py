"""Hidden-state distillation: mapped blocks' states, in one forward pass."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.distillation import BertDistiller
from keras_bert.distillation import student_of
from keras_bert.distillation.hidden_states import hidden_state_loss
from keras_bert.distillation.hidden_states import hidden_state_model
from keras_bert.distillation.hidden_states import uniform_layer_map
from tests.distillation.test_distiller import LABELS
from tests.distillation.test_distiller import TEXTS
from tests.distillation.test_distiller import _teacher


def _batch(model):
    # Texts of different lengths: the shorter ones are padded.
    return model.preprocessor(["the quick brown fox", "a dog", "good film"])


def _loss(teacher, student, teacher_blocks):
    x = _batch(teacher)
    t = hidden_state_model(teacher, teacher_blocks)
    s = hidden_state_model(student, range(student.backbone.num_layers))
    return float(hidden_state_loss(t(x), s(x), t, s))


def _masked_mse(a, b, mask):
    error = np.mean((np.asarray(a) - np.asarray(b)) ** 2, axis=-1)
    mask = np.asarray(mask, "float32")
    return (error * mask).sum() / mask.sum()


def test_uniform_layer_map():
    assert uniform_layer_map(6, 3) == (1, 3, 5)
    assert uniform_layer_map(6, 2) == (2, 5)
    assert uniform_layer_map(4, 4) == (0, 1, 2, 3)


def test_the_loss_is_zero_for_a_copy_and_positive_otherwise():
    teacher = _teacher(label_names=["neg", "pos"])
    copy = student_of(teacher, layers=(0, 1, 2, 3))
    assert _loss(teacher, copy, (0, 1, 2, 3)) < 1e-10
    smaller = student_of(teacher, layers=(0, 2))
    assert _loss(teacher, smaller, (1, 3)) > 1e-3


def test_the_loss_is_the_masked_mse_of_mapped_blocks_the_last_at_cls():
    teacher = _teacher(label_names=["neg", "pos"])
    student = student_of(teacher, layers=(0, 2))
    x = _batch(teacher)
    mask = np.asarray(x["padding_mask"])
    assert mask.min() == 0  # some padding, masked out below
    t = teacher.backbone.layer_outputs(x)["hidden_states"]
    s = student.backbone.layer_outputs(x)["hidden_states"]
    # Student block 0 against teacher block 1 on the real tokens; the
    # student's last block (computed at [CLS] only) against the
    # teacher's last, at [CLS].
    expected = (
        _masked_mse(s[1], t[2], mask)
        + _masked_mse(s[2][:, :1], t[4][:, :1], mask[:, :1])
    ) / 2
    np.testing.assert_allclose(
        _loss(teacher, student, (1, 3)), expected, rtol=1e-5
    )
    # A mapped teacher block computed everywhere is read at [CLS] too.
    expected = (
        _masked_mse(s[1], t[1], mask)
        + _masked_mse(s[2][:, :1], t[2][:, :1], mask[:, :1])
    ) / 2
    np.testing.assert_allclose(
        _loss(teacher, student, (0, 1)), expected, rtol=1e-5
    )


def _step_loss(distiller, x, y):
    return distiller.compute_loss(
        x, y, distiller(x, training=True), training=True
    )


def test_the_term_is_added_and_its_gradient_reaches_every_student_block():
    teacher = _teacher(label_names=["neg", "pos"])
    student = student_of(teacher, layers=(0, 2))
    kwargs = dict(student_loss_weight=0.5, temperature=2.0)
    plain = BertDistiller(teacher, student, **kwargs)
    distiller = BertDistiller(
        teacher, student, hidden_state_weight=3.0, **kwargs
    )
    assert distiller.hidden_state_layers == (1, 3)
    for model in (plain, distiller):
        model.compile(optimizer="adam")
    x, y = _batch(teacher), np.array([1, 0, 1])
    with tf.GradientTape() as tape:
        term = _step_loss(distiller, x, y) - _step_loss(plain, x, y)
    np.testing.assert_allclose(
        float(term), 3.0 * _loss(teacher, student, (1, 3)), rtol=1e-4
    )
    assert float(distiller.hidden_state_loss_tracker.result()) > 0
    blocks = student.backbone.transformer_layers
    gradients = tape.gradient(term, [b.trainable_weights for b in blocks])
    for block, grads in zip(blocks, gradients):
        assert any(float(tf.reduce_max(tf.abs(g))) > 0 for g in grads), block
    assert not teacher.trainable_weights


def test_fit_lowers_the_hidden_state_loss_with_one_pass_per_model():
    teacher = _teacher(label_names=["neg", "pos"])
    teacher_weights = [w.copy() for w in teacher.get_weights()]
    student = student_of(teacher, layers=(0, 2))
    distiller = BertDistiller(
        teacher, student, student_loss_weight=1.0, hidden_state_weight=10.0
    )
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))

    def no_call(*args, **kwargs):
        raise AssertionError("a second call of the task model")

    # The logits and the states come from one pass of each model's layers.
    teacher.call = student.call = no_call
    logs = distiller.fit(
        TEXTS, LABELS, batch_size=4, epochs=4, verbose=0, seed=0
    ).history
    del teacher.call, student.call
    losses = logs["hidden_state_loss"]
    assert losses[-1] < 0.7 * losses[0], losses
    np.testing.assert_allclose(
        logs["loss"],
        np.add(logs["total_loss"], np.multiply(10.0, losses)),
        rtol=1e-4,
    )
    for before, after in zip(teacher_weights, teacher.get_weights()):
        np.testing.assert_array_equal(before, after)


def test_the_config_round_trips():
    teacher = _teacher(label_names=["neg", "pos"])
    student = student_of(teacher, layers=(0, 2))
    distiller = BertDistiller(
        teacher, student, hidden_state_weight=0.5, hidden_state_layers=(0, 3)
    )
    config = distiller.get_config()
    assert config["hidden_state_weight"] == 0.5
    assert config["hidden_state_layers"] == (0, 3)
    again = BertDistiller.from_config(config)
    assert again.hidden_state_weight == 0.5
    assert again.hidden_state_layers == (0, 3)
    assert BertDistiller(teacher, student).get_config()[
        "hidden_state_weight"
    ] == (0.0)


def test_bad_arguments_are_refused():
    teacher = _teacher(label_names=["neg", "pos"])
    student = student_of(teacher, layers=(0, 2))
    with pytest.raises(ValueError, match="one teacher block index"):
        BertDistiller(
            teacher, student, hidden_state_weight=1.0, hidden_state_layers=(1,)
        )
    with pytest.raises(ValueError, match="hidden_state_weight > 0"):
        BertDistiller(teacher, student, hidden_state_layers=(1, 3))
    with pytest.raises(ValueError, match="hidden_state_weight"):
        BertDistiller(teacher, student, hidden_state_weight=-1.0)
    by_name = keras.distillation.FeatureDistillation(
        teacher_layer_name="logits", student_layer_name="logits"
    )
    with pytest.raises(ValueError, match="without layer names"):
        BertDistiller(teacher, student, [by_name], hidden_state_weight=1.0)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=teacher.backbone.vocabulary_size,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=32,
    )
    narrow = keras_bert.BertClassifier(
        backbone, 2, preprocessor=teacher.preprocessor
    )
    with pytest.raises(ValueError, match="teacher's are 16, the student's 8"):
        BertDistiller(teacher, narrow, hidden_state_weight=1.0)
    BertDistiller(teacher, narrow)  # logits only: any width


def test_a_task_model_calling_its_backbone_nested_is_refused():
    backbone = keras_bert.BertBackbone(
        vocabulary_size=50,
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    teacher = keras_bert.BertTokenClassifier(backbone, 3)
    student = student_of(teacher, layers=(0,))
    with pytest.raises(ValueError, match="nested model .*hidden_state_weight"):
        BertDistiller(teacher, student, hidden_state_weight=1.0)
