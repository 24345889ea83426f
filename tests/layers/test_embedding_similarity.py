"""similarity and top_k_search against NumPy.

Checked: the cosine of every pair equals NumPy's, for raw and unit rows,
1-D inputs drop their axis, a zero row scores 0 (not NaN); top-k gives
NumPy's order (ties: lower index first) and scores; bad shapes and `k`
are named in the error; both run inside a `tf.function`.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import similarity
from keras_bert import top_k_search


def numpy_cosine(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return a @ b.T


def random_rows(rows, dim=16, seed=0):
    return np.random.default_rng(seed).normal(size=(rows, dim)).astype("f4")


def test_similarity_equals_numpy():
    a, b = random_rows(5, seed=0) * 3, random_rows(7, seed=1)
    scores = np.asarray(similarity(a, b))
    assert scores.shape == (5, 7) and scores.dtype == np.float32
    np.testing.assert_allclose(scores, numpy_cosine(a, b), atol=1e-6)


def test_one_vector_drops_its_axis():
    a, b = random_rows(3, seed=2), random_rows(4, seed=3)
    assert similarity(a[0], b).shape == (4,)
    assert similarity(a, b[0]).shape == (3,)
    np.testing.assert_allclose(
        similarity(a[0], b[1]), numpy_cosine(a[:1], b[1:2])[0, 0], atol=1e-6
    )


def test_a_zero_row_scores_zero():
    a = np.array([[0.0, 0.0], [1.0, 0.0]], "float32")
    np.testing.assert_array_equal(similarity(a, a), [[0, 0], [0, 1]])


def test_top_k_equals_numpy_order_and_scores():
    queries, corpus = random_rows(6, seed=4), random_rows(50, seed=5)
    scores, indices = top_k_search(queries, corpus, k=5)
    expected = numpy_cosine(queries, corpus)
    order = np.argsort(-expected, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(indices, order)
    assert indices.dtype == "int32" and scores.shape == (6, 5)
    np.testing.assert_allclose(
        scores, np.take_along_axis(expected, order, 1), atol=1e-6
    )


def test_top_k_ties_take_the_lower_index_first():
    corpus = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]], "float32")
    _, indices = top_k_search(np.array([[1.0, 0.0]], "float32"), corpus, 3)
    np.testing.assert_array_equal(indices, [[0, 2, 1]])


def test_inside_a_tf_function():
    queries, corpus = random_rows(2, seed=6), random_rows(9, seed=7)
    search = tf.function(lambda q, c: top_k_search(q, c, k=3))
    scores, indices = search(tf.constant(queries), tf.constant(corpus))
    expected_scores, expected_indices = top_k_search(queries, corpus, k=3)
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-6)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: similarity(np.ones((2, 3)), np.ones((2, 4))),
            "a.shape=(2, 3)",
        ),
        (lambda: similarity(np.ones((1, 2, 3)), np.ones(3)), "(rows, hidden"),
        (lambda: top_k_search(np.ones((1, 3)), np.ones((2, 3)), 3), "k=3"),
        (lambda: top_k_search(np.ones((1, 3)), np.ones((2, 3)), 0), "k=0"),
        (
            lambda: top_k_search(np.ones(3), np.ones((2, 3)), 1),
            "queries[None]",
        ),
    ],
)
def test_bad_shapes_and_k_are_named(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()
