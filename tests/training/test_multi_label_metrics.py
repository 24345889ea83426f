"""Multi-label scores: hand-computed, scikit-learn's, Keras' and NumPy's."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from sklearn import metrics as sklearn_metrics

from keras_bert.decoding import labels_over_thresholds
from keras_bert.training import MultiLabelF1
from keras_bert.training import SubsetAccuracy
from keras_bert.training import multi_label_scores
from keras_bert.training import tune_thresholds

LABELS = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
PROBABILITIES = np.array(
    [[0.9, 0.2, 0.4], [0.1, 0.7, 0.6], [0.8, 0.3, 0.1], [0.2, 0.1, 0.3]]
)


def test_scores_by_hand():
    # Predicted at 0.5: [1,0,0], [0,1,1], [1,0,0], [0,0,0].
    # Per label (tp, fp, fn): (2, 0, 0), (1, 0, 1), (0, 1, 1).
    scores = multi_label_scores(LABELS, PROBABILITIES)
    assert scores["micro_f1"] == pytest.approx(2 * 3 / (2 * 3 + 1 + 2))
    assert scores["macro_f1"] == pytest.approx((1.0 + 2 / 3 + 0.0) / 3)
    # Only row 3 (nothing true, nothing predicted) is wholly right.
    assert scores["subset_accuracy"] == 0.25


def test_scores_equal_scikit_learn_and_keras():
    rng = np.random.default_rng(0)
    labels = (rng.random((200, 5)) < 0.3).astype("float32")
    logits = rng.normal(size=(200, 5)).astype("float32") + 2 * labels - 1
    probabilities = 1 / (1 + np.exp(-logits))
    thresholds = [0.3, 0.5, 0.5, 0.7, 0.5]
    scores = multi_label_scores(labels, probabilities, thresholds)
    predicted = probabilities > np.array(thresholds)
    for average in ("micro", "macro"):
        assert scores[f"{average}_f1"] == pytest.approx(
            sklearn_metrics.f1_score(
                labels, predicted, average=average, zero_division=0
            )
        )
    assert scores["subset_accuracy"] == pytest.approx(
        sklearn_metrics.accuracy_score(labels, predicted)
    )
    # Keras' metrics on logits, threshold 0.5, batch by batch.
    at_half = multi_label_scores(labels, probabilities)
    metrics = [MultiLabelF1("micro"), MultiLabelF1("macro"), SubsetAccuracy()]
    for start in range(0, 200, 64):
        for metric in metrics:
            metric.update_state(
                labels[start : start + 64], logits[start : start + 64]
            )
    for metric in metrics:
        assert float(metric.result()) == pytest.approx(
            at_half[metric.name], abs=1e-6
        )


def test_tuned_thresholds_maximise_each_labels_f1():
    # Label 0 (true at 0.9, 0.8; false at 0.1, 0.2): every threshold in
    # [0.2, 0.8) is perfect, and 0.5 is the nearest to 0.5.
    # Label 1 (true at 0.7, 0.3; false at 0.2, 0.1): perfect in
    # [0.2, 0.3); of the grid, 0.2 and 0.25, 0.25 nearer to 0.5.
    # Label 2 (true at 0.4; false at 0.6, 0.1, 0.3): a threshold in
    # [0.3, 0.4) predicts 0.4 and 0.6, F1 2/3, the best there is; of the
    # grid, 0.3 and 0.35, 0.35 nearer to 0.5.
    thresholds = tune_thresholds(LABELS, PROBABILITIES)
    assert thresholds == [0.5, 0.25, 0.35]
    tuned = multi_label_scores(LABELS, PROBABILITIES, thresholds)
    assert (
        tuned["macro_f1"]
        > multi_label_scores(LABELS, PROBABILITIES)["macro_f1"]
    )


def test_metrics_survive_serialization():
    for metric in (MultiLabelF1("macro", threshold=0.3), SubsetAccuracy(0.4)):
        config = keras.saving.serialize_keras_object(metric)
        restored = keras.saving.deserialize_keras_object(config)
        assert type(restored) is type(metric)
        assert restored.get_config() == metric.get_config()
    with pytest.raises(ValueError, match="average.*'weighted'"):
        MultiLabelF1("weighted")


def test_labels_over_thresholds_puts_the_names_over_first():
    names = labels_over_thresholds(
        tf.constant([[0.9, 0.1, 0.7], [0.2, 0.3, 0.1], [0.4, 0.6, 0.2]]),
        [0.5, 0.5, 0.3],
        ["PER", "ORG", "LOC"],
    ).numpy()
    assert names.tolist() == [
        [b"PER", b"LOC", b""],
        [b"", b"", b""],
        [b"ORG", b"", b""],
    ]
