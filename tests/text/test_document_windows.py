"""DocumentWindows: documents cut into the windows a classifier reads."""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.text.document_windows import DocumentWindows
from keras_bert.text.document_windows import check_documents

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefgh")


def _preprocessor(sequence_length=6):
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=sequence_length
    )


def test_windows_start_every_stride_tokens_up_to_the_end():
    windows = DocumentWindows(_preprocessor(), stride=2)  # 4 tokens each
    outputs = windows(tf.constant(["a b c d e f g", "h"]))
    ids = {"a": 5, "b": 6, "c": 7, "d": 8, "e": 9, "f": 10, "g": 11}
    a, b, c, d, e, f, g = ids.values()
    np.testing.assert_array_equal(
        outputs["token_ids"],
        [
            [[2, a, b, c, d, 3], [2, c, d, e, f, 3], [2, e, f, g, 3, 0]],
            [[2, 12, 3, 0, 0, 0], [0] * 6, [0] * 6],
        ],
    )
    np.testing.assert_array_equal(outputs["segment_ids"], 0)
    np.testing.assert_array_equal(
        outputs["padding_mask"][:, :, 0], [[1, 1, 1], [1, 0, 0]]
    )


def test_a_document_of_one_window_is_the_preprocessors_row():
    preprocessor = _preprocessor()
    texts = tf.constant(["a b c", "d", "a b c d"])
    windows = DocumentWindows(preprocessor, stride=3)(texts)
    packed = preprocessor(texts)
    assert windows["token_ids"].shape[1] == 1
    for name, values in packed.items():
        np.testing.assert_array_equal(windows[name][:, 0], values)


def test_max_windows_keeps_the_first_windows():
    texts = tf.constant(["a b c d e f g h a b"])
    everything = DocumentWindows(_preprocessor(), stride=2)(texts)
    first_two = DocumentWindows(_preprocessor(), 2, max_windows=2)(texts)
    assert everything["token_ids"].shape[1] == 4
    np.testing.assert_array_equal(
        first_two["token_ids"], everything["token_ids"][:, :2]
    )


def test_an_empty_document_fails_naming_its_row():
    windows = DocumentWindows(_preprocessor(), stride=2).batch_function()
    with pytest.raises(tf.errors.InvalidArgumentError, match="empty"):
        windows(tf.constant(["a b", " \t", "c"]))
    with pytest.raises(ValueError, match=r"indices \[1, 3\]"):
        check_documents(np.array(["a", " ", "b", ""], dtype=object))


def test_bad_arguments_name_the_fix():
    with pytest.raises(ValueError, match=r"doc_stride.*- 2 = 4"):
        DocumentWindows(_preprocessor(), stride=5)
    with pytest.raises(ValueError, match="max_windows=0"):
        DocumentWindows(_preprocessor(), stride=2, max_windows=0)
    with pytest.raises(ValueError, match="single texts"):
        DocumentWindows(_preprocessor(), stride=2).batch_function(2)
