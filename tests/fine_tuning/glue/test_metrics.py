"""GLUE metrics agree with scikit-learn and scipy over whole eval sets."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics

from keras_bert.fine_tuning.glue.metrics import accuracy
from keras_bert.fine_tuning.glue.metrics import compute_glue_metrics
from keras_bert.fine_tuning.glue.metrics import f1_score
from keras_bert.fine_tuning.glue.metrics import matthews_corrcoef
from keras_bert.fine_tuning.glue.metrics import pearson
from keras_bert.fine_tuning.glue.metrics import spearman


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(5, 300))
    labels = rng.integers(0, 2, size)
    predictions = np.where(rng.random(size) < 0.7, labels, 1 - labels)
    assert accuracy(labels, predictions) == pytest.approx(
        metrics.accuracy_score(labels, predictions)
    )
    assert f1_score(labels, predictions) == pytest.approx(
        metrics.f1_score(labels, predictions)
    )
    assert matthews_corrcoef(labels, predictions) == pytest.approx(
        metrics.matthews_corrcoef(labels, predictions)
    )
    three_labels = rng.integers(0, 3, size)
    three_predictions = rng.integers(0, 3, size)
    assert matthews_corrcoef(three_labels, three_predictions) == (
        pytest.approx(
            metrics.matthews_corrcoef(three_labels, three_predictions)
        )
    )


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(5, 300))
    scores = np.round(rng.uniform(0, 5, size), 1)  # rounding makes ties
    predictions = scores + rng.normal(0, 1.5, size)
    predictions[: size // 4] = 2.0  # ties on the prediction side too
    assert pearson(scores, predictions) == pytest.approx(
        stats.pearsonr(scores, predictions)[0]
    )
    assert spearman(scores, predictions) == pytest.approx(
        stats.spearmanr(scores, predictions)[0]
    )


def test_degenerate_cases_match_sklearn():
    zeros = np.zeros(6, "int32")
    assert matthews_corrcoef([0, 1, 0, 1, 1, 0], zeros) == 0.0
    assert f1_score(zeros, zeros) == 0.0
    assert np.isnan(pearson([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]))


def test_whole_set_mcc_differs_from_batch_average():
    # Why evaluation runs over the whole set: MCC does not average.
    labels = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    predictions = np.array([1, 0, 0, 1, 1, 0, 1, 1])
    whole = matthews_corrcoef(labels, predictions)
    halves = np.mean(
        [
            matthews_corrcoef(labels[:4], predictions[:4]),
            matthews_corrcoef(labels[4:], predictions[4:]),
        ]
    )
    assert whole == pytest.approx(
        metrics.matthews_corrcoef(labels, predictions)
    )
    assert whole != pytest.approx(halves)


def test_compute_glue_metrics_per_task():
    logits = np.array([[0.1, 0.9], [2.0, -1.0], [0.3, 0.2], [0.0, 1.0]])
    result = compute_glue_metrics("mrpc", [1, 0, 1, 1], logits)
    assert list(result) == ["f1", "accuracy"]
    assert result["f1"] == pytest.approx(0.8)
    assert result["accuracy"] == pytest.approx(0.75)
    assert list(compute_glue_metrics("cola", [1, 0], [1, 0])) == [
        "matthews_corrcoef"
    ]
    scores = compute_glue_metrics(
        "stsb", [0.0, 2.5, 5.0], np.array([[0.5], [2.0], [4.0]])
    )
    assert list(scores) == ["pearson", "spearman"]
    assert scores["spearman"] == pytest.approx(1.0)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="3 predictions for 2 labels"):
        accuracy([0, 1], [0, 1, 1])
