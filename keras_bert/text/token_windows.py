"""One token sequence → overlapping `[CLS] window [SEP]` rows.

A sequence longer than the window is cut into windows starting every
`stride` tokens, and each token is read from the window where it has the
most context (`keras_bert.text.windows`). Token classification windows its
sentences so (`keras_bert.training.ner_features` for training, with labels;
`keras_bert.decoding.entities` in `predict` and inside the SavedModel
that tags raw text).

TensorFlow ops on batches: eager, in `tf.data` and inside a SavedModel.
"""

import tensorflow as tf

from keras_bert.text.windows import gather_or_zero
from keras_bert.text.windows import is_max_context


def default_stride(sequence_length):
    """Tokens between window starts by default: half a window's tokens."""
    return max((sequence_length - 2) // 2, 1)


def check_window_arguments(sequence_length, stride):
    """Raises a `ValueError` naming the bad value unless windows are valid."""
    if not isinstance(sequence_length, int) or sequence_length < 3:
        raise ValueError(
            "`sequence_length` must be an int >= 3 ([CLS], a token, [SEP]). "
            f"Received: sequence_length={sequence_length!r}"
        )
    if not isinstance(stride, int) or not 1 <= stride <= sequence_length - 2:
        raise ValueError(
            "`stride` (tokens between window starts) must be an int in "
            f"[1, sequence_length - 2 = {sequence_length - 2}], so that "
            f"windows overlap or touch. Received: stride={stride!r}"
        )


# Plain TensorFlow ops, no Python control flow on tensors: AutoGraph has
# nothing to convert here or in the tokenizer.
@tf.autograph.experimental.do_not_convert
def window_tokens(tokenizer, token_ids, word_index, sequence_length, stride):
    """Cuts each row's tokens into `[CLS] window [SEP]` rows.

    Windows of `sequence_length - 2` tokens start at tokens `0, stride,
    2 * stride, ...`, up to the first window that reaches the end; a row
    without tokens gives one window `[CLS] [SEP]`.

    Args:
        tokenizer: `keras_bert.BertTokenizer` (for the special tokens).
        token_ids: int `tf.RaggedTensor` `(batch_size, (num_tokens))`.
        word_index: int `tf.RaggedTensor` of the same shape: each token's
            word, counted from 0 in its row, non-decreasing.
        sequence_length: int. Positions per window.
        stride: int. Tokens between the starts of consecutive windows.

    Returns:
        A dict of int32 tensors, one row per window (windows of a row
        adjacent and in order): `token_ids`, `segment_ids`, `padding_mask`,
        `word_index` (-1 off tokens), `token_index` (the token's index in
        its row, -1 off tokens), `first_token` (1 on the first sub-token of
        a word), `predict` (1 on a first sub-token in the window where it
        has the most context: each word's one prediction), all
        `(num_windows, sequence_length)`, and `example_index`
        `(num_windows,)`.
    """
    check_window_arguments(sequence_length, stride)
    token_ids = tf.cast(token_ids, tf.int64)
    word_index = tf.cast(word_index, tf.int64)
    length = token_ids.row_lengths()
    room = tf.constant(sequence_length - 2, tf.int64)
    overhang = tf.maximum(length - room, 0)
    num_windows = 1 + (overhang + stride - 1) // stride

    example = tf.repeat(tf.range(tf.size(num_windows, tf.int64)), num_windows)
    window = tf.ragged.range(num_windows).flat_values
    window_start = window * stride
    row_length = tf.gather(length, example)
    window_length = tf.minimum(room, row_length - window_start)

    position = tf.range(sequence_length, dtype=tf.int64)[None, :]
    is_token = (position >= 1) & (position <= window_length[:, None])
    token = window_start[:, None] + position - 1  # index in the row
    flat = tf.where(
        is_token, tf.gather(token_ids.row_starts(), example)[:, None] + token, 0
    )
    # A token starts a word when its word differs from the token before.
    words = word_index.values
    previous = tf.concat([tf.constant([-1], tf.int64), words], axis=0)[:-1]
    first = (words != previous) | tf.equal(
        tf.range(tf.size(words, tf.int64)), _row_starts_of(word_index)
    )
    cls_id, sep_id, pad_id = (
        tf.constant(token_id, tf.int64)
        for token_id in (
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.pad_token_id,
        )
    )
    ids = tf.where(position == 0, cls_id, pad_id)
    ids = tf.where(position == window_length[:, None] + 1, sep_id, ids)
    ids = tf.where(is_token, gather_or_zero(token_ids.values, flat), ids)
    first_token = is_token & (gather_or_zero(first, flat) > 0)
    most_context = is_max_context(
        token,
        window=window[:, None],
        last_window=tf.gather(num_windows, example)[:, None] - 1,
        room=room,
        length=row_length[:, None],
        stride=stride,
    )
    features = {
        "token_ids": ids,
        "segment_ids": tf.zeros_like(ids),
        "padding_mask": position <= window_length[:, None] + 1,
        "word_index": tf.where(is_token, gather_or_zero(words, flat), -1),
        "token_index": tf.where(is_token, token, -1),
        "first_token": first_token,
        "predict": first_token & most_context,
        "example_index": example,
    }
    return {name: tf.cast(value, tf.int32) for name, value in features.items()}


def _row_starts_of(ragged):
    """Each value's row start (1-D int64): a row's first value starts it."""
    return tf.gather(ragged.row_starts(), ragged.value_rowids())
