"""Cosine similarity of embeddings, and the top-k search it drives.

Functions on tensors (keras.ops), not layers: they work on NumPy arrays,
eager tensors and inside a traced function or a loss alike, and answer in
kind: NumPy arrays for NumPy arrays (or lists), tensors for tensors. The
embeddings of `keras_bert.BertTextEmbedder` are what they are made for.
"""

import numpy as np
from keras import ops

from keras_bert.validation import check_positive_int

# What a zero vector's norm is taken as, so its cosine is 0, not NaN
# (torch's `cosine_similarity` and `normalize` use the same floor).
_EPSILON = 1e-12


def similarity(a, b):
    """Cosine similarity of every row of `a` with every row of `b`.

    Each row is divided by its L2 norm (at least 1e-12, so a zero row
    scores 0 with everything), then `a @ b.T`. For L2-normalised
    embeddings (`BertTextEmbedder(normalize=True)`) this is their dot
    product. Computed in float32.

    Args:
        a: float tensor `(num_a, hidden_dim)`, or `(hidden_dim,)` for one.
        b: float tensor `(num_b, hidden_dim)`, or `(hidden_dim,)` for one.

    Returns float32 `(num_a, num_b)` in `[-1, 1]` (a 1-D input gives no
    axis: `(num_b,)`, `(num_a,)` or a scalar): a NumPy array when `a` and
    `b` are NumPy arrays (or lists), else a tensor.

    Example:
    ```python
    a = np.array([[1.0, 0.0], [1.0, 1.0]])
    b = np.array([[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]])
    keras_bert.similarity(a, b)
    # [[1., 0., -1.], [0.707, 0.707, -0.707]]
    ```
    """
    numpy = _all_numpy(a, b)
    a, a_is_vector = _as_matrix(a, "a")
    b, b_is_vector = _as_matrix(b, "b")
    if None not in (a.shape[-1], b.shape[-1]) and a.shape[-1] != b.shape[-1]:
        raise ValueError(
            "`a` and `b` must have the same embedding size (last axis). "
            f"Received: a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}"
        )
    scores = ops.matmul(_unit_rows(a), ops.transpose(_unit_rows(b)))
    if b_is_vector:
        scores = scores[:, 0]
    if a_is_vector:
        scores = scores[0]
    return ops.convert_to_numpy(scores) if numpy else scores


def top_k_search(queries, corpus, k=10):
    """The `k` rows of `corpus` most cosine-similar to each query.

    An exact search: `similarity(queries, corpus)` then the `k` highest
    per query, best first (ties: the lower corpus index first). For a
    corpus that does not fit in memory, search it in chunks and merge.

    Args:
        queries: float tensor `(num_queries, hidden_dim)`.
        corpus: float tensor `(corpus_size, hidden_dim)`.
        k: int. Results per query, at most `corpus_size`. Defaults to 10.

    Returns:
        `(scores, indices)`: float32 `(num_queries, k)` cosine similarities,
        highest first, and int32 `(num_queries, k)` row indices into
        `corpus`: NumPy arrays when `queries` and `corpus` are NumPy
        arrays (or lists), else tensors.

    Example:
    ```python
    corpus = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    scores, indices = keras_bert.top_k_search(
        np.array([[1.0, 0.1]]), corpus, k=2
    )
    indices  # [[0, 2]]
    ```
    """
    check_positive_int("k", k)
    numpy = _all_numpy(queries, corpus)
    corpus = ops.convert_to_tensor(corpus)
    size = corpus.shape[0]
    if size is not None and k > size:
        raise ValueError(
            f"Received an invalid value for argument `k`, expected at most "
            f"the corpus size {size}. Received: k={k}"
        )
    scores = similarity(queries, corpus)
    if len(scores.shape) != 2:
        raise ValueError(
            "top_k_search takes 2-D `queries` and `corpus` `(rows, "
            f"hidden_dim)`. Received a similarity of shape "
            f"{tuple(scores.shape)}; add an axis to a single query "
            "(`queries[None]`)."
        )
    values, indices = ops.top_k(scores, k=k, sorted=True)
    indices = ops.cast(indices, "int32")
    if numpy:
        return ops.convert_to_numpy(values), ops.convert_to_numpy(indices)
    return values, indices


def _all_numpy(*values):
    """Whether every value is a NumPy array (or list, or number)."""
    return all(
        isinstance(value, (np.ndarray, np.generic, list, tuple, float, int))
        for value in values
    )


def _as_matrix(x, name):
    """`(x as float32 (rows, hidden_dim), whether x was one vector)`."""
    x = ops.cast(ops.convert_to_tensor(x), "float32")
    if len(x.shape) not in (1, 2):
        raise ValueError(
            f"`{name}` must be embeddings `(rows, hidden_dim)` or one "
            f"embedding `(hidden_dim,)`. Received: {name}.shape="
            f"{tuple(x.shape)}"
        )
    if len(x.shape) == 1:
        return x[None, :], True
    return x, False


def _unit_rows(x):
    norms = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
    return x / ops.maximum(norms, _EPSILON)
