"""Whole documents → overlapping `[CLS] window [SEP]` rows, per document.

A document longer than the model's `sequence_length` is read in windows
of `sequence_length - 2` tokens that start every `stride` tokens (the
windows of `keras_bert.text.token_windows`, which question answering and
token classification read long texts with); a classifier scores each
window and aggregates the scores per document (`BertClassifier(...,
doc_stride=...)`). `DocumentWindows` cuts them with TensorFlow and
tensorflow-text ops only, so the same code makes the training batches in
`tf.data`, the inputs of `predict` and those of the exported SavedModel.
"""

import numpy as np
import tensorflow as tf

from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.text.token_windows import window_tokens


class DocumentWindows:
    """Cuts a batch of documents into windows, stacked per document.

    Each document is tokenized by the preprocessor's tokenizer and cut
    into windows of `sequence_length - 2` tokens starting at tokens `0,
    stride, 2 * stride, ...` up to the first window that reaches its end
    (at most `max_windows` of them), each `[CLS] tokens [SEP]` padded to
    `sequence_length`. A document that fits one window gives the row the
    preprocessor packs for it (truncation and windows agree on it).

    A plain object, not a layer: it holds no state of its own beyond its
    arguments, which the model that reads the windows saves
    (`BertClassifier`'s `doc_stride` and `max_windows`).

    Args:
        preprocessor: `keras_bert.BertPreprocessor`: the tokenizer and
            the window length (`sequence_length`).
        stride: int. Tokens between the starts of consecutive windows, in
            `[1, sequence_length - 2]` (not the overlap, which is
            `sequence_length - 2 - stride`).
        max_windows: int or `None`. Windows kept per document, the first
            ones; `None` (the default): as many as cover it.

    Call arguments:
        texts: string tensor `(batch_size,)`. Every document must hold a
            token: an empty (or whitespace-only) one fails with an
            `InvalidArgumentError` naming its index in the batch.

    Returns:
        A dict of int32 tensors `token_ids`, `segment_ids`, `padding_mask`
        `(batch_size, max_windows_in_batch, sequence_length)`; a document's
        windows come first in order, then windows of padding only
        (`padding_mask` 0 throughout, `[CLS]` included: how a model tells
        them apart).

    Example:
    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "a", "b", "c", "d", "e"]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=5
    )
    windows = DocumentWindows(preprocessor, stride=2)
    windows(tf.constant(["a b c d e", "a"]))["token_ids"]
    # [[[2, 5, 6, 7, 3], [2, 7, 8, 9, 3]],   a b c | c d e
    #  [[2, 5, 3, 0, 0], [0, 0, 0, 0, 0]]]   a     | (padding)
    ```
    """

    def __init__(self, preprocessor, stride, max_windows=None):
        self.preprocessor = preprocessor
        self.tokenizer = preprocessor.tokenizer
        self.sequence_length = preprocessor.sequence_length
        check_doc_stride(stride, self.sequence_length)
        check_max_windows(max_windows)
        self.stride = int(stride)
        self.max_windows = max_windows
        self._functions = {}

    def __call__(self, texts):
        texts = tf.convert_to_tensor(texts, tf.string)
        windows = self.flat(texts)
        return stack_windows(windows, tf.shape(texts, tf.int64)[0])

    # Plain TensorFlow ops: AutoGraph has nothing to convert.
    @tf.autograph.experimental.do_not_convert
    def flat(self, texts):
        """The windows of `texts` one after the other.

        Returns:
            A dict of int32 tensors: `token_ids`, `segment_ids`,
            `padding_mask` `(num_windows, sequence_length)`, and
            `document` `(num_windows,)`, each window's row in `texts`
            (non-decreasing).
        """
        token_ids = self.tokenizer.tokenize_batch(texts)
        lengths = token_ids.row_lengths()
        empty = tf.where(tf.equal(lengths, 0))[:, 0]
        check = tf.debugging.Assert(
            tf.equal(tf.size(empty), 0),
            [
                "Every document needs at least one token to be read in "
                "windows (doc_stride); these rows of the batch are empty "
                "or whitespace only:",
                empty,
            ],
            summarize=20,
        )
        with tf.control_dependencies([check]):
            token_ids = tf.identity(token_ids)
        if self.max_windows is not None:
            room = self.sequence_length - 2
            token_ids = token_ids[
                :, : room + (self.max_windows - 1) * self.stride
            ]
        # Every token its own word: a classifier reads no word labels.
        positions = tf.ragged.range(token_ids.row_lengths())
        windows = window_tokens(
            self.tokenizer,
            token_ids,
            positions,
            self.sequence_length,
            self.stride,
        )
        flat = {name: windows[name] for name in BACKBONE_INPUTS}
        flat["document"] = windows["example_index"]
        return flat

    def batch_function(self, num_texts=1):
        """`__call__` as a `tf.function` of a 1-D string tensor, traced
        once and kept (as `BertPreprocessor.batch_function`)."""
        if num_texts != 1:
            raise ValueError(
                "Documents read in windows (doc_stride) are single texts; "
                f"received {num_texts} texts per example (sentence pairs). "
                "Pass a list of texts, or build the classifier with "
                "doc_stride=None to read pairs truncated."
            )
        if "stacked" not in self._functions:
            self._functions["stacked"] = tf.function(
                self.__call__,
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
        return self._functions["stacked"]

    def flat_function(self):
        """`flat` as a `tf.function` of a 1-D string tensor, traced once."""
        if "flat" not in self._functions:
            self._functions["flat"] = tf.function(
                self.flat, input_signature=[tf.TensorSpec([None], tf.string)]
            )
        return self._functions["flat"]


def stack_windows(windows, num_documents):
    """`(num_documents, max_windows, sequence_length)` tensors from flat
    windows with a `document` row each (padding windows: all 0)."""
    document = tf.cast(windows["document"], tf.int64)
    return {
        name: tf.RaggedTensor.from_value_rowids(
            windows[name], document, nrows=num_documents
        ).to_tensor()
        for name in BACKBONE_INPUTS
    }


def check_doc_stride(stride, sequence_length):
    """Raises a `ValueError` unless `stride` is an int in `[1,
    sequence_length - 2]`: windows of `sequence_length - 2` tokens that
    overlap or touch."""
    room = sequence_length - 2
    if isinstance(stride, bool) or not (
        isinstance(stride, (int, np.integer)) and 1 <= stride <= room
    ):
        raise ValueError(
            "Received an invalid value for argument `doc_stride` "
            "(tokens between window starts), expected an integer in "
            f"[1, sequence_length - 2 = {room}] for the preprocessor's "
            f"sequence_length={sequence_length}, so that windows "
            f"overlap or touch. Received: doc_stride={stride!r}"
        )


def check_max_windows(max_windows):
    """Raises a `ValueError` unless `max_windows` is `None` or an int >= 1."""
    if max_windows is not None and (
        isinstance(max_windows, bool)
        or not isinstance(max_windows, (int, np.integer))
        or max_windows < 1
    ):
        raise ValueError(
            "Received an invalid value for argument `max_windows`, expected "
            "a positive integer (windows read per document, the first "
            f"ones) or None (all). Received: max_windows={max_windows!r}"
        )


def check_documents(texts, argument="x"):
    """Raises a `ValueError` naming the empty documents of `texts` (a 1-D
    array of str or bytes): windows need at least one token each."""
    empty = [
        index
        for index, text in enumerate(texts)
        if not (text.decode("utf-8", "replace") if isinstance(text, bytes)
                else text).strip()
    ]  # fmt: skip
    if empty:
        shown = ", ".join(str(index) for index in empty[:10])
        more = f" (and {len(empty) - 10} more)" if len(empty) > 10 else ""
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: the "
            f"documents at indices [{shown}]{more} are empty or whitespace "
            "only, and a classifier reading windows (doc_stride) has no "
            "token of them to score. Drop them, or give each some text."
        )
