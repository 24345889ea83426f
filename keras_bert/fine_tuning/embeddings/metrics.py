"""Scoring embeddings: retrieval (Recall@1, MRR@10) and STS (Spearman)."""

import numpy as np

from keras_bert.fine_tuning.glue.metrics import spearman


def retrieval_metrics(query_embeddings, corpus_embeddings, relevant, k=10):
    """Recall@1 and MRR@k of each query's one relevant corpus entry.

    Scores are dot products (cosine similarities for L2-normalised
    embeddings). The rank of a query's relevant entry is one more than
    the number of entries scoring strictly higher; its reciprocal rank
    counts if that rank is at most `k`, else 0 (as sentence-transformers'
    `InformationRetrievalEvaluator`'s MRR@k).

    Args:
        query_embeddings: float array `(num_queries, hidden_dim)`.
        corpus_embeddings: float array `(corpus_size, hidden_dim)`.
        relevant: int array `(num_queries,)`: each query's corpus row.
        k: int. The cutoff of MRR. Defaults to `10`.

    Returns:
        dict: `"recall@1"` and `f"mrr@{k}"`, floats in [0, 1].

    Example:
    ```python
    queries = np.eye(2)
    retrieval_metrics(queries, np.eye(2), [0, 1])  # both 1.0
    ```
    """
    queries = np.asarray(query_embeddings, np.float64)
    corpus = np.asarray(corpus_embeddings, np.float64)
    relevant = np.asarray(relevant)
    scores = queries @ corpus.T  # (num_queries, corpus_size)
    relevant_scores = scores[np.arange(len(relevant)), relevant]
    ranks = 1 + np.sum(scores > relevant_scores[:, None], axis=1)
    reciprocal = np.where(ranks <= k, 1.0 / ranks, 0.0)
    return {
        "recall@1": float(np.mean(ranks == 1)),
        f"mrr@{k}": float(np.mean(reciprocal)),
    }


def sts_spearman(embeddings_a, embeddings_b, scores):
    """Spearman correlation of the pairs' cosine similarity with `scores`.

    Args:
        embeddings_a: float array `(num_pairs, hidden_dim)`.
        embeddings_b: float array `(num_pairs, hidden_dim)`.
        scores: float array `(num_pairs,)`: the gold similarities.

    Returns:
        float. Spearman's rank correlation (ties get average ranks).

    Example:
    ```python
    a = np.array([[1.0, 0.0], [1.0, 0.0]])
    b = np.array([[1.0, 0.0], [0.0, 1.0]])
    sts_spearman(a, b, [5.0, 0.0])  # 1.0
    ```
    """
    a = np.asarray(embeddings_a, np.float64)
    b = np.asarray(embeddings_b, np.float64)
    cosine = np.sum(a * b, axis=1) / np.maximum(
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12
    )
    return float(spearman(np.asarray(scores, np.float64), cosine))
