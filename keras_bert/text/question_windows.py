"""Question + context → overlapping windows, with answer-span labels.

A context longer than a window is read in overlapping windows, as the
original BERT `run_squad.py` does: each window is
`[CLS] question [SEP] context tokens [SEP]`, padded to `max_seq_length`.
`make_windows` builds them for a batch of `(question, context)` strings with
TensorFlow and tensorflow-text ops only, so the same code makes training
features in `tf.data` (`keras_bert.fine_tuning.squad.features`) and splits
contexts for `BertQuestionAnswerer.predict` and inside its exported
SavedModel (`keras_bert.decoding.answers`).
"""

import numpy as np
import tensorflow as tf

from keras_bert.text.windows import gather_or_zero
from keras_bert.text.windows import is_max_context


def check_window_arguments(max_seq_length, doc_stride, max_query_length):
    """Raises `ValueError` unless the three window sizes fit together.

    A window holds `[CLS]`, up to `max_query_length` question tokens,
    `[SEP]`, context tokens and `[SEP]`: at least one context token must
    fit after the longest question, and consecutive windows start
    `doc_stride` context tokens apart, which must not skip tokens even
    for the longest question.
    """
    for name, value in (
        ("max_seq_length", max_seq_length),
        ("doc_stride", doc_stride),
        ("max_query_length", max_query_length),
    ):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(
                f"Received an invalid value for argument `{name}`, expected "
                f"a positive integer. Received: {name}={value!r}"
            )
    room = max_seq_length - max_query_length - 3
    if room < 1:
        raise ValueError(
            "Received an invalid value for argument `max_seq_length`: it "
            "must leave room for [CLS], a question of `max_query_length` "
            "tokens, two [SEP] and at least one context token, i.e. be at "
            f"least max_query_length + 4 = {max_query_length + 4}. Received: "
            f"max_seq_length={max_seq_length}, "
            f"max_query_length={max_query_length}. Raise max_seq_length or "
            "lower max_query_length."
        )
    if doc_stride > room:
        raise ValueError(
            "Received an invalid value for argument `doc_stride`: windows "
            "would skip context tokens. It can be at most the context "
            "tokens a window holds after the longest question, "
            f"max_seq_length - max_query_length - 3 = {room}. Received: "
            f"doc_stride={doc_stride} (max_seq_length={max_seq_length}, "
            f"max_query_length={max_query_length})."
        )


# Plain TensorFlow ops, no Python control flow on tensors: AutoGraph has
# nothing to convert here or in the tokenizer, and converting them takes
# tens of seconds per trace.
@tf.autograph.experimental.do_not_convert
def make_windows(
    tokenizer,
    questions,
    contexts,
    answer_starts=None,
    answer_texts=None,
    max_seq_length=384,
    doc_stride=128,
    max_query_length=64,
):
    """Tokenizes a batch of examples and cuts each into windows.

    The question keeps its first `max_query_length` tokens. Its context
    tokens are cut into windows of
    `max_seq_length - len(question) - 3` tokens starting at context tokens
    `0, doc_stride, 2 * doc_stride, ...`, up to the first window that
    reaches the end of the context; an empty context gives one window with
    no context tokens. Each window is `[CLS] question [SEP] window [SEP]`,
    padded to `max_seq_length`.

    With answers, each window is labelled as Hugging Face's `run_qa.py`
    does: the start label is the last context token starting at or before
    the answer's first character, the end label the first context token
    ending at or after its last one (so the tokens holding them; for an
    answer with a space or dropped character at either end, the token next
    to it). Both labels are 0 (`[CLS]`) when the window's context does not
    hold the whole answer, and for an example without an answer
    (`answer_start < 0`, or an empty answer text). One deliberate
    difference: when the answer starts in the window's last context token,
    `run_qa.py` runs past the context and labels the last position of the
    window (a `[SEP]` or padding); this labels that context token.

    Pure TensorFlow and tensorflow-text ops on the whole batch: works
    eagerly, in `tf.data.Dataset.map` and inside a SavedModel.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        questions: string tensor `(batch_size,)`.
        contexts: string tensor `(batch_size,)`.
        answer_starts: optional int tensor `(batch_size,)`: code-point
            offset of each answer in its context; negative for none.
        answer_texts: optional string tensor `(batch_size,)`, with
            `answer_starts`: each answer's text (only its length is used).
        max_seq_length: int. Tokens per window. Defaults to `384`.
        doc_stride: int. Context tokens between the starts of consecutive
            windows (not the overlap). Defaults to `128`.
        max_query_length: int. Question tokens kept. Defaults to `64`.

    Returns:
        A dict of int32 tensors, one row per window (windows of an example
        adjacent and in order), `num_windows >= batch_size`:
        `token_ids`, `segment_ids`, `padding_mask`: `(num_windows,
        max_seq_length)`; `offset_start`, `offset_end`: `(num_windows,
        max_seq_length)`, each context token's code-point span in its
        context (`context[start:end]`), -1 elsewhere; `max_context`:
        `(num_windows, max_seq_length)`, 1 on the context tokens that have
        the most context in this window (`run_squad.py`'s
        `_check_is_max_context`: the largest `min(left, right) + 0.01 *
        window_length`, the first window on a tie); `example_index`:
        `(num_windows,)`, each window's row in the batch; with answers,
        `start_positions` and `end_positions`: `(num_windows,)`.

    Example:

    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "the", "quick", "brown", "fox", "##es", "."]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    windows = make_windows(
        tokenizer,
        ["The fox?"],
        ["The quick brown foxes."],
        answer_starts=[10],
        answer_texts=["brown"],
        max_seq_length=8,
        doc_stride=2,
        max_query_length=2,
    )
    # Question "the fox", 3 context tokens a window, starting at tokens
    # 0, 2 and 4 of "the quick brown fox ##es .":
    windows["token_ids"]
    # [[2, 5, 8, 3, 5, 6, 7, 3],   [CLS] the fox [SEP] the quick brown [SEP]
    #  [2, 5, 8, 3, 7, 8, 9, 3],   ... [SEP] brown fox ##es [SEP]
    #  [2, 5, 8, 3, 9, 10, 3, 0]]  ... [SEP] ##es . [SEP] [PAD]
    windows["offset_start"][1]      # [-1, -1, -1, -1, 10, 16, 19, -1]
    windows["max_context"][1]       # [0, 0, 0, 0, 0, 1, 1, 0]
    windows["start_positions"]      # [6, 4, 0]: "brown" is not in window 2
    ```
    """
    check_window_arguments(max_seq_length, doc_stride, max_query_length)
    questions = _strings(questions, "questions")
    contexts = _strings(contexts, "contexts")
    with_answers = answer_starts is not None
    if with_answers != (answer_texts is not None):
        raise ValueError(
            "Pass `answer_starts` and `answer_texts` together (an answer's "
            "end is its start plus the length of its text), or neither."
        )

    question_ids, _, _ = tokenizer.tokenize_with_offsets(questions)
    question_ids = question_ids[:, :max_query_length]
    # SQuAD asks several questions about each paragraph: tokenize each
    # distinct context of the batch once.
    unique_contexts, context_of_example = tf.unique(contexts)
    context_ids, context_starts, context_ends = (
        tf.gather(tokens, context_of_example)
        for tokens in tokenizer.tokenize_with_offsets(unique_contexts)
    )
    question_length = question_ids.row_lengths()  # (batch,), int64
    context_length = context_ids.row_lengths()
    # Context tokens each window of an example holds (>= 1, see checks).
    room = max_seq_length - 3 - question_length
    # Windows start every doc_stride tokens until one reaches the end.
    overhang = tf.maximum(context_length - room, 0)
    num_windows = 1 + (overhang + doc_stride - 1) // doc_stride

    # One row per window: its example, its rank among the example's
    # windows, and the context tokens it holds.
    example = tf.repeat(tf.range(tf.size(num_windows, tf.int64)), num_windows)
    window = tf.ragged.range(num_windows).flat_values  # (num_windows,)
    window_start = window * doc_stride
    window_room = tf.gather(room, example)
    window_context_length = tf.gather(context_length, example)
    window_length = tf.minimum(
        window_room, window_context_length - window_start
    )

    # Every output is built position by position on a
    # (num_windows, max_seq_length) grid; columns are [..., None] below.
    position = tf.range(max_seq_length, dtype=tf.int64)[None, :]
    num_question = tf.gather(question_length, example)[:, None]
    context_begin = num_question + 2
    context_end = context_begin + window_length[:, None]  # the last [SEP]
    is_question = (position >= 1) & (position <= num_question)
    is_context = (position >= context_begin) & (position < context_end)
    # Index of each context position's token among its example's tokens.
    context_token = window_start[:, None] + position - context_begin

    question_index = tf.gather(question_ids.row_starts(), example)[:, None]
    question_index = tf.where(is_question, question_index + position - 1, 0)
    context_index = tf.gather(context_ids.row_starts(), example)[:, None]
    context_index = tf.where(is_context, context_index + context_token, 0)

    cls_id, sep_id, pad_id = (
        tf.constant(token, tf.int64)
        for token in (
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.pad_token_id,
        )
    )
    token_ids = tf.where(position == 0, cls_id, pad_id)
    token_ids = tf.where(
        is_question,
        gather_or_zero(question_ids.values, question_index),
        token_ids,
    )
    is_separator = (position == num_question + 1) | (position == context_end)
    token_ids = tf.where(is_separator, sep_id, token_ids)
    token_ids = tf.where(
        is_context, gather_or_zero(context_ids.values, context_index), token_ids
    )
    segment_ids = is_context | (position == context_end)
    padding_mask = position <= context_end
    offset_start = tf.where(
        is_context, gather_or_zero(context_starts.values, context_index), -1
    )
    offset_end = tf.where(
        is_context, gather_or_zero(context_ends.values, context_index), -1
    )
    max_context = is_context & is_max_context(
        context_token,
        window=window[:, None],
        last_window=tf.gather(num_windows, example)[:, None] - 1,
        room=window_room[:, None],
        length=window_context_length[:, None],
        stride=doc_stride,
    )

    features = {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
        "offset_start": offset_start,
        "offset_end": offset_end,
        "max_context": max_context,
        "example_index": example,
    }
    if with_answers:
        answer_starts = tf.cast(answer_starts, tf.int64)
        answer_lengths = tf.strings.length(
            _strings(answer_texts, "answer_texts"), unit="UTF8_CHAR"
        )
        answer_ends = answer_starts + tf.cast(answer_lengths, tf.int64)
        start_positions, end_positions = _labels(
            answer_start=tf.gather(answer_starts, example)[:, None],
            answer_end=tf.gather(answer_ends, example)[:, None],
            position=position,
            is_context=is_context,
            context_begin=context_begin,
            context_end=context_end,
            offset_start=offset_start,
            offset_end=offset_end,
        )
        features["start_positions"] = start_positions
        features["end_positions"] = end_positions
    return {name: tf.cast(value, tf.int32) for name, value in features.items()}


def _labels(
    answer_start,
    answer_end,
    position,
    is_context,
    context_begin,
    context_end,
    offset_start,
    offset_end,
):
    """Token labels of the answer span `[answer_start, answer_end)`.

    Hugging Face `run_qa.py`'s rule, without relying on sorted offsets: the
    window holds the answer when its first context token starts at or
    before the answer and its last one ends at or after it; the start label
    is the token before the first context token that starts after the
    answer's start (the last context token if none does); the end label is
    the token after the last context token that ends before the answer's
    end (the first context token if none does).
    """
    has_tokens = context_end > context_begin
    first_start = _column(offset_start, context_begin)
    last_end = _column(offset_end, tf.maximum(context_end - 1, 0))
    holds_answer = (
        has_tokens
        & (answer_start >= 0)
        & (answer_end > answer_start)
        & (first_start <= answer_start)
        & (last_end >= answer_end)
    )[:, 0]
    after_start = is_context & (offset_start > answer_start)
    start = tf.reduce_min(
        tf.where(after_start, position, context_end), axis=1
    ) - 1  # fmt: skip
    before_end = is_context & (offset_end < answer_end)
    end = tf.reduce_max(
        tf.where(before_end, position, context_begin - 1), axis=1
    ) + 1  # fmt: skip
    return tf.where(holds_answer, start, 0), tf.where(holds_answer, end, 0)


def _column(values, index):
    """`values[i, index[i, 0]]` as a column `(rows, 1)`."""
    return tf.gather(values, index, batch_dims=1)


def _strings(values, name):
    values = tf.convert_to_tensor(values, dtype_hint=tf.string)
    if values.dtype != tf.string or values.shape.rank != 1:
        raise ValueError(
            f"`{name}` should be strings of shape (batch_size,); received "
            f"dtype {values.dtype.name} and shape {values.shape}."
        )
    return values
