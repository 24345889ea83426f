"""Retrieval and STS scores, by hand."""

import numpy as np
import pytest

from keras_bert.fine_tuning.embeddings import retrieval_metrics
from keras_bert.fine_tuning.embeddings import sts_spearman


def test_retrieval_by_hand():
    corpus = np.eye(3)
    queries = np.array(
        [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.2, 0.3, 0.1]]
    )  # ranks of entries 0, 1, 2: 1, 2, 3
    metrics = retrieval_metrics(queries, corpus, [0, 1, 2])
    assert metrics["recall@1"] == pytest.approx(1 / 3)
    assert metrics["mrr@10"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)


def test_mrr_counts_ranks_up_to_k_only():
    corpus = np.eye(4)
    query = np.array([[4.0, 3.0, 2.0, 1.0]])  # entry 3 ranks 4th
    assert retrieval_metrics(query, corpus, [3], k=4)["mrr@4"] == 0.25
    assert retrieval_metrics(query, corpus, [3], k=3)["mrr@3"] == 0.0


def test_sts_spearman_by_hand():
    a = np.array([[1.0, 0.0]] * 3)
    b = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])  # cos 1, .71, 0
    assert sts_spearman(a, b, [5.0, 3.0, 1.0]) == pytest.approx(1.0)
    assert sts_spearman(a, b, [1.0, 3.0, 5.0]) == pytest.approx(-1.0)
