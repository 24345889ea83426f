"""BertDistiller: keras.distillation on raw text; the student stays plain."""

import json
import os
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.distillation import BertDistiller
from keras_bert.distillation import SigmoidLogitsDistillation
from keras_bert.distillation import distillation_loss_for
from keras_bert.distillation import distiller as distiller_module
from keras_bert.distillation import student_of
from tests.helpers import EXPORT_SENTENCES
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import export_preprocessor
from tests.helpers import far_from_uniform

TEXTS = ["the quick brown fox", "a lazy dog", "good film", "bad film"] * 4
LABELS = ["pos", "neg", "pos", "neg"] * 4


def _teacher(num_classes=2, **kwargs):
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(EXPORT_VOCABULARY),
        num_layers=4,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
        dropout=0.0,
    )
    model = keras_bert.BertClassifier(
        backbone,
        num_classes,
        preprocessor=export_preprocessor(),
        dropout=0.0,
        **kwargs,
    )
    return far_from_uniform(model)


def _distill_logs(distiller, *args, **kwargs):
    history = distiller.fit(*args, batch_size=4, verbose=0, seed=0, **kwargs)
    return history.history


def test_fit_on_unlabelled_text_lowers_the_distillation_loss():
    teacher = _teacher()
    student = student_of(teacher, layers=(0, 3))
    distiller = BertDistiller(teacher, student, student_loss_weight=0.0)
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    logs = _distill_logs(distiller, TEXTS, epochs=6)
    losses = logs["distillation_loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert logs["student_loss"] == [0.0] * 6


def test_fit_on_labelled_text_takes_label_names_and_trains_both_losses():
    teacher = _teacher(label_names=["neg", "pos"])
    teacher_weights = [w.copy() for w in teacher.get_weights()]
    student = student_of(teacher, num_layers=2)
    distiller = BertDistiller(teacher, student, temperature=3.0)
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    logs = _distill_logs(distiller, TEXTS, LABELS, epochs=4)
    # Both losses count: the labels' and the (random) teacher's.
    assert logs["student_loss"][0] > 0 and logs["distillation_loss"][0] > 0
    assert logs["total_loss"][-1] < logs["total_loss"][0]
    # The teacher is frozen: only the student learns.
    for before, after in zip(teacher_weights, teacher.get_weights()):
        np.testing.assert_array_equal(before, after)


def test_auto_compile_is_the_students_optimizer_and_loss():
    teacher = _teacher()
    distiller = BertDistiller(teacher, student_of(teacher, num_layers=2))
    distiller.compile()
    assert isinstance(distiller.optimizer, keras_bert.training.AdamW)
    assert distiller._student_loss_for_serialization is (distiller.student.loss)
    # The schedule is laid over the fit: the rate warms up from 0.
    _distill_logs(distiller, TEXTS[:8], [1, 0] * 4)
    assert float(distiller.optimizer.learning_rate) < 2e-5


def test_the_loss_fits_the_students_outputs():
    teacher = _teacher()
    loss = distillation_loss_for(teacher, temperature=4.0)
    assert isinstance(loss, keras.distillation.LogitsDistillation)
    assert loss.temperature == 4.0
    multi = _teacher(3, multi_label=True)
    assert isinstance(distillation_loss_for(multi), SigmoidLogitsDistillation)
    regression = _teacher(1)
    assert isinstance(
        distillation_loss_for(regression),
        keras.distillation.FeatureDistillation,
    )
    with pytest.raises(ValueError, match="temperature"):
        distillation_loss_for(teacher, temperature=0)


def test_sigmoid_distillation_is_zero_only_for_the_teachers_logits():
    loss = SigmoidLogitsDistillation(temperature=2.0)
    teacher = np.array([[3.0, -2.0], [0.5, 1.0]], "float32")
    same = float(loss.compute_loss(teacher, teacher))
    other = float(loss.compute_loss(teacher, -teacher))
    # Cross-entropy to itself: the entropy of the teacher's sigmoids.
    assert same < other


def test_a_multi_label_student_distils_on_label_names():
    teacher = _teacher(3, multi_label=True, label_names=["a", "b", "c"])
    distiller = BertDistiller(teacher, student_of(teacher, num_layers=2))
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    labels = [["a"], ["b", "c"], [], ["a", "c"]] * 4
    logs = _distill_logs(distiller, TEXTS, labels, epochs=2)
    assert np.isfinite(logs["loss"]).all()


def test_a_teacher_of_another_vocabulary_is_refused():
    teacher = _teacher()
    other = keras_bert.BertClassifier(
        keras_bert.BertBackbone(
            vocabulary_size=99,
            num_layers=1,
            num_heads=2,
            hidden_dim=16,
            intermediate_dim=32,
        ),
        2,
    )
    with pytest.raises(ValueError, match="read the ids of one"):
        BertDistiller(teacher, other)


def test_the_trained_student_saves_loads_and_exports_without_the_distiller(
    tmp_path,
):
    teacher = _teacher(label_names=["neg", "pos"])
    student = student_of(teacher, layers=(1, 2))
    distiller = BertDistiller(teacher, student)
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    _distill_logs(distiller, TEXTS, LABELS, epochs=1)
    path = str(tmp_path / "student.keras")
    student.save(path)
    with zipfile.ZipFile(path) as archive:
        config = archive.read("config.json").decode()
    assert "distiller" not in config and "Distiller" not in config
    assert json.loads(config)["class_name"] == "BertClassifier"
    loaded = keras.models.load_model(path)
    assert type(loaded) is keras_bert.BertClassifier
    assert loaded.backbone.num_layers == 2
    assert len(loaded.weights) == len(student_of(teacher, num_layers=2).weights)
    np.testing.assert_allclose(
        loaded.predict(EXPORT_SENTENCES, verbose=0),
        student.predict(EXPORT_SENTENCES, verbose=0),
        atol=1e-5,
    )
    # Fine-tuned on as any classifier, with its own optimizer.
    loaded.fit(TEXTS[:4], LABELS[:4], verbose=0)
    export_dir = keras_bert.serving.export_saved_model(
        student, export_dir=str(tmp_path / "export"), check_cpu=False
    )
    served = tf.saved_model.load(export_dir).signatures["serving_default"]
    outputs = served(text=tf.constant(EXPORT_SENTENCES))
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(),
        keras.ops.convert_to_numpy(
            keras.ops.softmax(student.predict(EXPORT_SENTENCES, verbose=0))
        ),
        atol=1e-4,
    )
    assert os.path.isdir(export_dir)


def test_an_embedder_student_learns_the_teachers_vectors_from_text():
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(EXPORT_VOCABULARY),
        num_layers=3,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
    )
    teacher = keras_bert.BertTextEmbedder(
        backbone, preprocessor=export_preprocessor()
    )
    teacher.set_weights(
        [
            np.random.default_rng(0).normal(0, 0.3, w.shape)
            for w in teacher.get_weights()
        ]
    )
    student = student_of(teacher, layers=(0,))
    distiller = BertDistiller(teacher, student, student_loss_weight=0.0)
    assert isinstance(
        distiller.distillation_losses[0], keras.distillation.FeatureDistillation
    )
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    logs = _distill_logs(distiller, TEXTS, epochs=5)
    # Cosine similarity, negated: it falls as the vectors align.
    assert logs["distillation_loss"][-1] < logs["distillation_loss"][0]
    with pytest.raises(ValueError, match="no loss on labels"):
        BertDistiller(teacher, student).compile()


def test_a_token_classifier_distils_on_ids_without_labels():
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(EXPORT_VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
    )
    teacher = keras_bert.BertTokenClassifier(backbone, 4)
    student = student_of(teacher, layers=(1,))
    distiller = BertDistiller(teacher, student, student_loss_weight=0.0)
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    ids = export_preprocessor()(TEXTS)
    history = distiller.fit(dict(ids), batch_size=4, epochs=2, verbose=0)
    assert np.isfinite(history.history["distillation_loss"]).all()


def test_logits_distillation_is_the_kl_of_the_softened_softmax():
    """T² KL(softmax(t / T) || softmax(s / T)), not a KL of raw logits
    (what Keras 3.15's `LogitsDistillation()` default computes)."""
    loss = distillation_loss_for(_teacher(), temperature=2.0)
    teacher = np.array([[3.0, -2.0], [0.5, 1.0]], "float32")
    student = np.array([[1.0, 0.0], [-1.0, 2.0]], "float32")

    def softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    p, q = softmax(teacher / 2), softmax(student / 2)
    expected = 4 * np.mean(np.sum(p * np.log(p / q), axis=-1))
    np.testing.assert_allclose(
        float(loss.compute_loss(teacher, student)), expected, rtol=1e-4
    )
    assert abs(float(loss.compute_loss(teacher, teacher))) < 1e-6


@pytest.mark.parametrize(
    "kwargs, texts",
    [
        ({"student_loss_weight": 0.5}, TEXTS),
        # A mean over real tokens: each micro-batch's is weighted by its
        # examples, the whole batch's where every text has its length.
        ({"hidden_state_weight": 1.0}, ["good film", "bad film"] * 8),
    ],
    ids=["logits_and_labels", "hidden_states"],
)
def test_gradient_accumulation_trains_as_the_whole_batch(
    monkeypatch, kwargs, texts
):
    steps_seen = []
    accumulate = distiller_module.accumulating_train_step
    monkeypatch.setattr(
        distiller_module,
        "accumulating_train_step",
        lambda model, data, steps: (
            steps_seen.append(steps) or accumulate(model, data, steps)
        ),
    )
    teacher = _teacher(label_names=["neg", "pos"])
    start = student_of(teacher, layers=(0, 3)).get_weights()
    trained = []
    for steps in (1, 2):
        student = student_of(teacher, layers=(0, 3))
        distiller = BertDistiller(teacher, student, **kwargs)
        distiller.compile(
            optimizer=keras.optimizers.SGD(0.5),
            gradient_accumulation_steps=steps,
        )
        distiller.fit(texts, LABELS, batch_size=4, shuffle=False, verbose=0)
        trained.append(student.get_weights())
    assert set(steps_seen) == {2}  # only the second run accumulated
    moved = 0
    for before, whole, micro in zip(start, *trained):
        # Within 0.1% of how far the weights moved: float32 sums in another
        # order, grown over 4 steps at learning rate 0.5 (Eigen's kernels on
        # an AVX2-only CPU: up to 2.3e-5 apart, at most 2.8e-5 of the move);
        # an update summed instead of averaged would be off by the update.
        update = np.abs(whole - before).max()
        assert np.abs(micro - whole).max() <= 1e-3 * update + 1e-6
        moved += not np.allclose(before, whole, atol=1e-4)
    assert moved > 10  # the student trained: the equality says something
