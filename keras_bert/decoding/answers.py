"""Answers to questions about raw contexts, with TensorFlow ops.

`answer_text_function` is what `BertQuestionAnswerer` runs on raw text,
in its SavedModel's `serving_default` and in its `predict`: the whole
pipeline — tokenizing with offsets, cutting long contexts into windows
(`keras_bert.text.question_windows`), the model, and choosing the answer
span — as TensorFlow and tensorflow-text ops. The span choice
(`best_answers`) is the graph twin of the evaluation's numpy
post-processing, `keras_bert.fine_tuning.squad.postprocess.compute_predictions`
(and so of `run_squad.py`), exactly for the top answer: the `n_best_size`
best starts and ends of each window, a start only where its token has the
most context, both ends in the context, at most `max_answer_length` tokens,
the best `start_logit + end_logit` over the example's windows (the first on
a tie).
"""

import tensorflow as tf

from keras_bert.decoding.text_functions import call_on_windows
from keras_bert.decoding.text_functions import same_batch_size
from keras_bert.decoding.text_functions import string_signature
from keras_bert.text.question_windows import check_window_arguments
from keras_bert.text.question_windows import make_windows

# The score of "no span found" (an empty context, or no valid span).
NO_ANSWER_SCORE = -1e9


def answer_text_function(
    model,
    preprocessor,
    doc_stride=128,
    max_query_length=64,
    max_answer_length=30,
    n_best_size=20,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
    trim=True,
):
    """The text function of a question answerer: questions → answers.

    The function takes `question` and `context`, string `(batch,)`, and
    returns `answer` string `(batch,)`, its `start` and `end` int32
    `(batch,)` in the context in Unicode code points
    (`context[start:end] == answer` in Python), and `score` float32
    `(batch,)`: the answer's `start_logit + end_logit` (`-1e9` when the
    context has no possible answer, with `answer` `""` and
    `start == end == 0`). With `version_2_with_negative`, `answer` is `""`
    when the null score beats the best span by more than
    `null_score_diff_threshold`.

    Args:
        model: callable from the ids dict to `start_logits` and
            `end_logits` (`keras_bert.BertQuestionAnswerer`).
        preprocessor: `keras_bert.BertPreprocessor`: its tokenizer and its
            `sequence_length` (the window length, `max_seq_length`).
        doc_stride: int. Context tokens between window starts.
        max_query_length: int. Question tokens kept.
        max_answer_length: int. Longest answer, in tokens.
        n_best_size: int. Starts and ends considered per window.
        version_2_with_negative: bool. Allow "no answer" (SQuAD v2.0).
        null_score_diff_threshold: float. See above.
        trim: bool. Whether the model runs only up to the request's
            longest window (`trim_to_longest_row`; the same answers,
            faster) instead of all `max_seq_length` positions.

    Returns `(function, input_signature)`, a text function
    (`keras_bert.decoding.text_functions`).
    """
    max_seq_length = preprocessor.sequence_length
    check_window_arguments(max_seq_length, doc_stride, max_query_length)
    tokenizer = preprocessor.tokenizer

    def serve_text(question, context):
        question, context = same_batch_size(question=question, context=context)
        windows = make_windows(
            tokenizer,
            question,
            context,
            max_seq_length=max_seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
        )
        windows, outputs = call_on_windows(model, windows, trim)
        return best_answers(
            windows,
            tf.cast(outputs["start_logits"], tf.float32),
            tf.cast(outputs["end_logits"], tf.float32),
            context,
            n_best_size=n_best_size,
            max_answer_length=max_answer_length,
            version_2_with_negative=version_2_with_negative,
            null_score_diff_threshold=null_score_diff_threshold,
        )

    return serve_text, string_signature(("question", "context"))


def best_answers(
    windows,
    start_logits,
    end_logits,
    contexts,
    n_best_size=20,
    max_answer_length=30,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
):
    """The best answer span of each example, with TensorFlow ops.

    The graph twin of `keras_bert.fine_tuning.squad.postprocess`'s
    `compute_predictions` (its top answer).

    Only real positions (`padding_mask` 1) are ranked, so padding never
    changes an answer, however many columns the windows have (the export
    trims them to the request's longest window). `run_squad.py` and
    `compute_predictions` rank padding positions too; the top answer
    differs only where a padding logit ranks among a window's
    `n_best_size`, which then pushes out a real candidate.

    Args:
        windows: dict from `make_windows`: `example_index`,
            `padding_mask`, `offset_start`, `offset_end`, `max_context`,
            each 2-D one `(num_windows, width)`.
        start_logits: float32 `(num_windows, width)`.
        end_logits: float32 `(num_windows, width)`.
        contexts: string `(batch,)`: the examples' contexts.
        n_best_size, max_answer_length, version_2_with_negative,
        null_score_diff_threshold: see `answer_text_function`.

    Returns a dict of `answer`, `start`, `end`, `score`, each `(batch,)`.
    """
    num_examples = tf.shape(contexts)[0]
    offset_start = windows["offset_start"]
    offset_end = windows["offset_end"]
    top = tf.minimum(n_best_size, tf.shape(start_logits)[1])
    # The lowest float, not -inf: segment maxima start from it.
    invalid = tf.float32.min
    real = windows["padding_mask"] > 0
    # Equal logits keep position order in top_k, as in postprocess.py.
    top_start_logits, starts = tf.math.top_k(
        tf.where(real, start_logits, invalid), top
    )
    top_end_logits, ends = tf.math.top_k(
        tf.where(real, end_logits, invalid), top
    )
    start_ok = (tf.gather(offset_start, starts, batch_dims=1) >= 0) & tf.equal(
        tf.gather(windows["max_context"], starts, batch_dims=1), 1
    )
    end_ok = tf.gather(offset_end, ends, batch_dims=1) >= 0
    length = ends[:, None, :] - starts[:, :, None] + 1  # (windows, top, top)
    valid = (
        start_ok[:, :, None]
        & end_ok[:, None, :]
        & (length >= 1)
        & (length <= max_answer_length)
    )
    scores = top_start_logits[:, :, None] + top_end_logits[:, None, :]
    scores = tf.where(valid, scores, invalid)
    # Start-major order within a window, then window order: the first
    # maximum is the one postprocess.py ranks first.
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    window_best = tf.argmax(flat, axis=1, output_type=tf.int32)
    window_score = tf.reduce_max(flat, axis=1)
    window_start = tf.gather(starts, window_best // top, batch_dims=1)
    window_end = tf.gather(ends, window_best % top, batch_dims=1)

    example_index = windows["example_index"]
    best_score = tf.math.unsorted_segment_max(
        window_score, example_index, num_examples
    )
    # The first window reaching its example's best score.
    num_windows = tf.shape(example_index)[0]
    is_best = tf.equal(window_score, tf.gather(best_score, example_index))
    best_window = tf.math.unsorted_segment_min(
        tf.where(is_best, tf.range(num_windows), num_windows),
        example_index,
        num_examples,
    )
    found = best_score > invalid
    safe_window = tf.where(found, best_window, 0)
    start = tf.where(
        found,
        tf.gather_nd(
            offset_start,
            tf.stack([safe_window, tf.gather(window_start, safe_window)], 1),
        ),
        0,
    )
    end = tf.where(
        found,
        tf.gather_nd(
            offset_end,
            tf.stack([safe_window, tf.gather(window_end, safe_window)], 1),
        ),
        0,
    )
    score = tf.where(found, best_score, NO_ANSWER_SCORE)
    if version_2_with_negative:
        null_score = tf.math.unsorted_segment_min(
            start_logits[:, 0] + end_logits[:, 0], example_index, num_examples
        )
        no_answer = ~found | (null_score - score > null_score_diff_threshold)
        start = tf.where(no_answer, 0, start)
        end = tf.where(no_answer, 0, end)
        score = tf.where(no_answer & found, null_score, score)
    answer = tf.strings.substr(contexts, start, end - start, unit="UTF8_CHAR")
    return {"answer": answer, "start": start, "end": end, "score": score}
