"""Words → WordPiece windows with labels on each word's first sub-token.

Token classification labels words, BERT sees sub-tokens. As Hugging Face's
`run_ner.py` does (`word_ids()`), each word is tokenized on its own, its
label goes on its first sub-token and every other position (`[CLS]`,
`[SEP]`, padding, the word's other sub-tokens) gets `-100`, which the loss
and metrics leave out; with `label_all_tokens` the other sub-tokens get the
word's label too (a `B-` label as its `I-`).

Unlike `run_ner.py`, nothing is truncated: a sentence longer than the
sequence length is cut into overlapping windows starting every `stride`
tokens, and each word is predicted once, from the window where its first
sub-token has the most context (`keras_bert.tasks.windows`). A word that
tokenizes to nothing (only characters BERT's text cleaning drops) has no
position; it is predicted as the outside label `O`.

Everything here is TensorFlow ops on batches (eager, `tf.data`, and inside
the SavedModel that serves raw text), except the numpy helpers at the end
that gather a corpus' features and read predictions back per word.
"""

import numpy as np
import tensorflow as tf

from keras_bert.tasks.windows import gather_or_zero
from keras_bert.tasks.windows import is_max_context
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.training.losses import IGNORED_LABEL

# The model's inputs among the feature fields.
INPUT_NAMES = BACKBONE_INPUTS


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


@tf.autograph.experimental.do_not_convert
def make_windows(
    tokenizer,
    words,
    label_ids=None,
    sequence_length=128,
    stride=None,
    label_all_tokens=False,
    continuation_label_ids=None,
):
    """Tokenizes a batch of pre-split sentences into labelled windows.

    Each word is tokenized on its own, as Hugging Face's fast tokenizer with
    `is_split_into_words=True` does; see `window_tokens` for the windows.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        words: string `tf.RaggedTensor` `(batch_size, (num_words))`.
        label_ids: optional int `tf.RaggedTensor` of the same shape: each
            word's label id; a negative id labels nothing (e.g. a tag the
            model does not know).
        sequence_length: int. Positions per window. Defaults to `128`.
        stride: int. Tokens between window starts. Defaults to half a
            window (`default_stride`).
        label_all_tokens: bool. Label every sub-token of a word, not only
            the first (the others with `continuation_label_ids`).
        continuation_label_ids: int list, with `label_all_tokens`: the
            label of a word's later sub-tokens for each label id (e.g. the
            id of `I-PER` for `B-PER`). Defaults to the same label.

    Returns:
        `window_tokens`' dict, plus with `label_ids` a `labels` int32
        `(num_windows, sequence_length)`, `-100` where nothing is labelled.

    Example:
    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "john", "lives", "in", "new", "york", "##er"]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    windows = make_windows(
        tokenizer,
        tf.ragged.constant([["John", "lives", "in", "New", "Yorker"]]),
        tf.ragged.constant([[1, 0, 0, 3, 4]]),
        sequence_length=8,
    )
    windows["token_ids"]  # [[2, 5, 6, 7, 8, 9, 10, 3]]
    windows["labels"]     # [[-100, 1, 0, 0, 3, 4, -100, -100]]
    ```
    """
    stride = default_stride(sequence_length) if stride is None else stride
    check_window_arguments(sequence_length, stride)
    if not isinstance(words, tf.RaggedTensor):
        raise ValueError(
            "`words` must be a string tf.RaggedTensor (batch_size, "
            f"(num_words)); received {type(words).__name__}. Build it with "
            "tf.ragged.constant(list_of_word_lists)."
        )
    pieces = tokenizer(words.flat_values)  # (num_words, (num_pieces))
    # Each piece's word, counted from 0 in its sentence.
    word_of_piece = pieces.value_rowids()
    sentence_of_word = words.value_rowids()
    word_start = tf.gather(words.row_starts(), sentence_of_word)
    local_word = word_of_piece - tf.gather(word_start, word_of_piece)
    pieces_per_sentence = tf.math.unsorted_segment_sum(
        pieces.row_lengths(),
        sentence_of_word,
        num_segments=words.nrows(),
    )
    token_ids = tf.RaggedTensor.from_row_lengths(
        pieces.values, pieces_per_sentence
    )
    word_index = tf.RaggedTensor.from_row_lengths(
        local_word, pieces_per_sentence
    )
    features = window_tokens(
        tokenizer, token_ids, word_index, sequence_length, stride
    )
    if label_ids is None:
        return features

    label_ids = tf.cast(label_ids, tf.int64)
    ignored = tf.constant(IGNORED_LABEL, tf.int64)
    # Each position's word, as an index into the batch's flat words.
    word_row = tf.gather(words.row_starts(), features["example_index"])
    flat_word = tf.where(
        features["word_index"] >= 0,
        word_row[:, None] + tf.cast(features["word_index"], tf.int64),
        0,
    )
    word_label = gather_or_zero(label_ids.flat_values, flat_word)
    word_label = tf.where(word_label < 0, ignored, word_label)
    labels = tf.where(features["first_token"] > 0, word_label, ignored)
    if label_all_tokens:
        later = (features["word_index"] >= 0) & (features["first_token"] == 0)
        later_label = word_label
        if continuation_label_ids is not None:
            table = tf.constant(continuation_label_ids, tf.int64)
            later_label = tf.where(
                word_label >= 0,
                tf.gather(table, tf.maximum(word_label, 0)),
                ignored,
            )
        labels = tf.where(later, later_label, labels)
    features["labels"] = tf.cast(labels, tf.int32)
    return features


def ner_features(
    tokenizer,
    sentences,
    label_ids=None,
    sequence_length=128,
    stride=None,
    label_all_tokens=False,
    continuation_label_ids=None,
    batch_size=512,
):
    """`make_windows` over a whole corpus, as numpy arrays.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sentences: list of lists of str: each sentence's words.
        label_ids: optional list of lists of int, one per word.
        sequence_length, stride, label_all_tokens, continuation_label_ids:
            see `make_windows`.
        batch_size: int. Sentences tokenized per TensorFlow call.

    Returns:
        `make_windows`' dict as numpy int32 arrays, windows of all
        sentences in order; `example_index` is the sentence's index in
        `sentences`.
    """
    stride = default_stride(sequence_length) if stride is None else stride
    check_window_arguments(sequence_length, stride)
    with_labels = label_ids is not None

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string),
            tf.TensorSpec([None], tf.int64),
            tf.TensorSpec([None], tf.int64),
        ]
    )
    def windows(flat_words, row_lengths, flat_labels):
        words = tf.RaggedTensor.from_row_lengths(flat_words, row_lengths)
        labels = None
        if with_labels:
            labels = tf.RaggedTensor.from_row_lengths(flat_labels, row_lengths)
        return make_windows(
            tokenizer,
            words,
            labels,
            sequence_length=sequence_length,
            stride=stride,
            label_all_tokens=label_all_tokens,
            continuation_label_ids=continuation_label_ids,
        )

    parts = []
    for first in range(0, len(sentences), batch_size):
        chunk = sentences[first : first + batch_size]
        flat_words = [word for sentence in chunk for word in sentence]
        flat_labels = [0] * len(flat_words)
        if with_labels:
            flat_labels = [
                label
                for labels in label_ids[first : first + batch_size]
                for label in labels
            ]
        result = windows(
            tf.constant(flat_words, tf.string, shape=[len(flat_words)]),
            tf.constant([len(s) for s in chunk], tf.int64),
            tf.constant(flat_labels, tf.int64, shape=[len(flat_labels)]),
        )
        result = {name: value.numpy() for name, value in result.items()}
        result["example_index"] += first
        parts.append(result)
    if not parts:
        raise ValueError("`sentences` is empty: there is nothing to window.")
    return {
        name: np.concatenate([part[name] for part in parts])
        for name in parts[0]
    }


def word_predictions(features, logits, sentence_lengths, outside_id):
    """Each word's predicted label id and probability, per sentence.

    Args:
        features: `ner_features`' dict (numpy).
        logits: float array `(num_windows, sequence_length, num_classes)`
            (columns beyond a row's last token may be missing).
        sentence_lengths: list of int: words per sentence.
        outside_id: int. The label of a word that has no position (it
            tokenizes to nothing).

    Returns:
        `(labels, scores)`: lists (one per sentence) of int arrays and of
        float arrays (the softmax probability of the predicted label).
    """
    predict = features["predict"][:, : logits.shape[1]] > 0
    rows, columns = np.nonzero(predict)
    chosen = logits[rows, columns].astype(np.float64)
    chosen -= chosen.max(axis=-1, keepdims=True)
    probabilities = np.exp(chosen)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    label = probabilities.argmax(axis=-1)
    score = probabilities.max(axis=-1)
    sentence = features["example_index"][rows]
    word = features["word_index"][rows, columns]
    offsets = np.concatenate([[0], np.cumsum(sentence_lengths)])
    flat_labels = np.full(offsets[-1], outside_id, np.int64)
    flat_scores = np.ones(offsets[-1], np.float64)
    flat = offsets[sentence] + word
    if len(np.unique(flat)) != len(flat):
        raise AssertionError("a word was predicted in two windows")
    flat_labels[flat] = label
    flat_scores[flat] = score
    return (
        [flat_labels[a:b] for a, b in zip(offsets[:-1], offsets[1:])],
        [flat_scores[a:b] for a, b in zip(offsets[:-1], offsets[1:])],
    )
