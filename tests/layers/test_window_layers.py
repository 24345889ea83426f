"""WindowRows and WindowAggregation: documents' windows as rows, and one
row of logits per document again."""

import numpy as np
import pytest

from keras_bert.layers import WindowAggregation
from keras_bert.layers import WindowRows
from tests.helpers import run_serialization_test


def _documents():
    # Document 0: one window; document 1: two.
    token_ids = np.array([[[2, 5, 3], [0, 0, 0]], [[2, 6, 3], [2, 7, 3]]])
    return {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": (token_ids > 0).astype("int32"),
    }


def test_window_rows_keep_the_real_windows_in_document_order():
    rows, document = WindowRows()(_documents())
    np.testing.assert_array_equal(
        rows["token_ids"], [[2, 5, 3], [2, 6, 3], [2, 7, 3]]
    )
    np.testing.assert_array_equal(document, [0, 1, 1])


@pytest.mark.parametrize(
    "aggregation, expected",
    [("mean", [[1.0, 4.0], [4.0, 2.5]]), ("max", [[1.0, 4.0], [5.0, 5.0]])],
)
def test_aggregation_by_hand(aggregation, expected):
    logits = np.array([[1.0, 4.0], [3.0, 0.0], [5.0, 5.0]], "float32")
    mask = _documents()["padding_mask"]
    outputs = WindowAggregation(aggregation)(logits, np.array([0, 1, 1]), mask)
    np.testing.assert_allclose(outputs, expected)


def test_a_document_without_windows_gets_zeros():
    logits = np.array([[1.0, -4.0]], "float32")
    mask = np.ones((2, 1, 3), "int32")
    for aggregation in ("mean", "max"):
        outputs = WindowAggregation(aggregation)(logits, np.array([1]), mask)
        np.testing.assert_allclose(outputs, [[0.0, 0.0], [1.0, -4.0]])


def test_config_round_trip_and_a_bad_aggregation():
    rebuilt = run_serialization_test(WindowAggregation("max"))
    assert rebuilt.aggregation == "max"
    run_serialization_test(WindowRows())
    with pytest.raises(ValueError, match="aggregation='sum'"):
        WindowAggregation("sum")
