"""How `basic_tokenizer.build_tables` builds its tables, fast.

What the tables do (every code point tokenized as Hugging Face does) is
tested by `test_parity.py`; here, the two things that keep building
them fast: rows deduplicated by hashing, and no garbage-collector
pauses while ~100,000 small lists are made.
"""

import gc

import numpy as np
import pytest

from keras_bert.text import basic_tokenizer


def test_unique_rows_match_numpy_unique_up_to_order():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 3, size=(500, 4)).astype(np.int64)
    unique, index = basic_tokenizer._unique_rows(rows)
    np.testing.assert_array_equal(unique[index], rows)
    expected = np.unique(rows, axis=0)
    assert len(unique) == len(expected)
    assert {r.tobytes() for r in unique} == {r.tobytes() for r in expected}
    # First-seen order: the first row is distinct row 0.
    assert index[0] == 0 and index.max() == len(unique) - 1


def test_tables_rebuild_every_code_point():
    tables = basic_tokenizer.build_tables(True, True, 5)
    entries = (
        tables["blocks"]
        .astype(np.int64)
        .reshape(-1, 128)[tables["block_index"].astype(np.int64)]
    )
    assert entries.shape == (basic_tokenizer.NUM_CODE_POINTS // 128, 128)
    classes = entries.reshape(-1) & 7
    assert classes[ord("a")] == basic_tokenizer.ORDINARY
    assert classes[ord(" ")] == basic_tokenizer.WHITESPACE
    assert classes[ord(",")] == basic_tokenizer.ISOLATED
    # Stored relative to the code point: "A" lower-cases to "a".
    shift = basic_tokenizer.VALUE_SHIFT
    assert (entries.reshape(-1)[ord("A")] >> shift) + ord("A") == ord("a")


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_inside_and_restored(enabled):
    states = []

    @basic_tokenizer._without_collection_pauses
    def build(fail):
        states.append(gc.isenabled())
        if fail:
            raise ValueError("a bad table")

    (gc.enable if enabled else gc.disable)()
    try:
        build(False)
        with pytest.raises(ValueError):
            build(True)
        assert states == [False, False]
        assert gc.isenabled() == enabled
    finally:
        gc.enable()
