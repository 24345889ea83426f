"""student_of: the teacher's task class on some of its blocks, or a preset."""

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.distillation import every_other_layer
from keras_bert.distillation import student_of
from tests.helpers import backbone_inputs
from tests.helpers import tiny_backbone_config


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def _backbone(num_layers=4, **overrides):
    return keras_bert.BertBackbone(
        **tiny_backbone_config(num_layers=num_layers, **overrides)
    )


def _randomised(model, seed=0):
    """Weights far from their initialisation, so that copies show."""
    rng = np.random.default_rng(seed)
    model.set_weights(
        [rng.normal(0, 0.3, w.shape) for w in model.get_weights()]
    )
    return model


def test_every_other_layer_spreads_from_the_first_block():
    assert every_other_layer(6, 3) == (0, 2, 4)
    assert every_other_layer(12, 6) == (0, 2, 4, 6, 8, 10)
    assert every_other_layer(6, 2) == (0, 3)
    assert every_other_layer(4, 4) == (0, 1, 2, 3)


def test_student_is_the_teacher_run_through_the_chosen_blocks_only():
    teacher = _randomised(keras_bert.BertClassifier(_backbone(), 3))
    student = student_of(teacher, layers=(0, 2))
    assert type(student) is keras_bert.BertClassifier
    assert student.backbone.num_layers == 2
    inputs = backbone_inputs(batch_size=3, sequence_length=7)
    backbone = teacher.backbone
    x = backbone.embedding(inputs["token_ids"], inputs["segment_ids"])
    for i in (0, 2):
        x = backbone.transformer_layers[i](
            x, padding_mask=inputs["padding_mask"]
        )
    expected = teacher.output_dense(backbone.pooler_dense(x[:, 0, :]))
    np.testing.assert_allclose(
        _numpy(student(inputs, training=False)), _numpy(expected), atol=1e-5
    )
    # Not the teacher's own output: the blocks left out count.
    assert not np.allclose(_numpy(teacher(inputs)), _numpy(expected), atol=1e-3)


@pytest.mark.parametrize(
    "make",
    [
        lambda b: keras_bert.BertClassifier(b, 3, multi_label=True),
        lambda b: keras_bert.BertClassifier(b, 1),
        lambda b: keras_bert.BertClassifier(b, 2, pair=True),
        lambda b: keras_bert.BertTokenClassifier(b, 5),
        lambda b: keras_bert.BertTextEmbedder(b, pooling="cls"),
    ],
    ids=["multi_label", "regression", "pairs", "tokens", "embedder"],
)
def test_all_blocks_give_the_teachers_outputs_for_every_task(make):
    teacher = _randomised(make(_backbone(num_layers=3)))
    student = student_of(teacher, num_layers=3)
    assert type(student) is type(teacher)
    assert student.get_config()["backbone"]["config"]["num_layers"] == 3
    inputs = backbone_inputs(batch_size=2, sequence_length=6)
    np.testing.assert_allclose(
        _numpy(student(inputs, training=False)),
        _numpy(teacher(inputs, training=False)),
        atol=1e-5,
    )
    for name in ("multi_label", "pair", "label_mode", "pooling"):
        if name in teacher.get_config():
            assert student.get_config()[name] == teacher.get_config()[name], (
                name
            )


def test_the_preprocessor_is_the_teachers_object():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=8
    )
    teacher = keras_bert.BertClassifier(
        _backbone(vocabulary_size=len(vocabulary)),
        2,
        preprocessor=preprocessor,
        label_names=["no", "yes"],
    )
    student = student_of(teacher, layers=(1, 3))
    assert student.preprocessor is preprocessor
    assert student.label_names == ["no", "yes"]
    assert student.predict(["a b"], verbose=0).shape == (1, 2)


def test_a_preset_student_has_the_presets_architecture_and_fresh_weights():
    teacher = keras_bert.BertClassifier(
        _backbone(vocabulary_size=30522, hidden_dim=16, num_heads=2), 2
    )
    student = student_of(teacher, preset="bert_tiny")
    assert student.backbone.num_layers == 2
    assert student.backbone.hidden_dim == 128
    assert student.backbone.max_sequence_length == 16  # the teacher's
    assert student(backbone_inputs(vocabulary_size=30522)).shape == (2, 2)


def test_a_preset_of_another_vocabulary_is_refused():
    teacher = keras_bert.BertClassifier(_backbone(), 2)
    with pytest.raises(ValueError, match="vocabulary of 30522"):
        student_of(teacher, preset="bert_tiny")
    with pytest.raises(ValueError, match="Unknown preset"):
        student_of(teacher, preset="bert_teeny")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"layers": (2, 0)}, "increasing block indices"),
        ({"layers": (0, 4)}, "increasing block indices"),
        ({"layers": ()}, "increasing block indices"),
        ({"num_layers": 5}, "from 1 to the teacher's 4"),
        ({}, "exactly one of"),
        ({"layers": (0,), "num_layers": 1}, "exactly one of"),
    ],
)
def test_bad_choices_of_blocks_are_refused(kwargs, match):
    teacher = keras_bert.BertClassifier(_backbone(), 2)
    with pytest.raises(ValueError, match=match):
        student_of(teacher, **kwargs)


def test_a_backbone_is_refused():
    with pytest.raises(ValueError, match="takes a task model"):
        student_of(_backbone(), num_layers=2)


def test_a_lora_teachers_student_has_the_updates_merged_and_no_lora():
    teacher = _randomised(keras_bert.BertClassifier(_backbone(), 3))
    teacher.backbone.enable_lora(2)
    inputs = backbone_inputs(batch_size=2, sequence_length=6)
    before = _numpy(teacher(inputs, training=False))
    _randomised(teacher, seed=1)  # the LoRA updates are no longer zero
    assert not np.allclose(
        _numpy(teacher(inputs, training=False)), before, atol=1e-3
    )
    student = student_of(teacher, num_layers=4)
    assert student.backbone.lora_rank is None
    assert len(student.weights) < len(teacher.weights)  # no LoRA kernels
    assert len(student.trainable_weights) == len(student.weights)
    np.testing.assert_allclose(
        _numpy(student(inputs, training=False)),
        _numpy(teacher(inputs, training=False)),
        atol=1e-4,
    )
    assert teacher.backbone.lora_rank == 2  # the teacher is unchanged
    # A preset student of a LoRA teacher: fresh weights, no LoRA.
    teacher = keras_bert.BertClassifier(
        _backbone(vocabulary_size=30522, hidden_dim=16, num_heads=2), 2
    )
    teacher.backbone.enable_lora(2)
    assert student_of(teacher, preset="bert_tiny").backbone.lora_rank is None


def test_a_frozen_teachers_student_is_trainable():
    # A BertDistiller freezes its teacher; a second student is trained too.
    teacher = keras_bert.BertClassifier(
        _backbone(vocabulary_size=30522, hidden_dim=16, num_heads=2), 2
    )
    for kwargs in ({"layers": (0,)}, {"preset": "bert_tiny"}):
        trainable = len(student_of(teacher, **kwargs).trainable_weights)
        teacher.trainable = False
        student = student_of(teacher, **kwargs)
        teacher.trainable = True
        assert student.trainable and student.backbone.trainable
        assert len(student.trainable_weights) == trainable > 0
