"""Overlapping windows over long token sequences: which window to trust.

SQuAD contexts and NER sentences longer than a model's sequence length are
cut into windows that start every `stride` tokens; a token then sits in
several windows, and its prediction is read from the one where it has the
most context on both sides (`run_squad.py`'s `_check_is_max_context`).
"""

import tensorflow as tf


def is_max_context(token, window, last_window, room, length, stride):
    """Whether `window` is where each token has the most context.

    `run_squad.py` scores token `t` in every window holding it as
    `min(t - start, end - t) + 0.01 * window_length` and keeps the first
    best window. Windows before the last all hold `room` tokens, so among
    them the score peaks where `t` is most central, at window
    `(2t - room + 1) / (2 * stride)`: only the two windows around that
    point (clipped to those holding `t`) and the last window (maybe
    shorter) can win. Scores are float64, as in Python, so ties break the
    same way.

    Args:
        token: int64 tensor. Each position's token index in its sequence.
        window: int64 tensor. Each position's window number (0-based).
        last_window: int64 tensor. The number of the sequence's last
            window.
        room: int64 tensor. Tokens a full window holds.
        length: int64 tensor. Tokens in the sequence.
        stride: int. Tokens between the starts of consecutive windows.

    All tensors broadcast to `(num_windows, sequence_length)`.

    Returns:
        A bool tensor of the broadcast shape (meaningful where the window
        holds the token).
    """
    t = token

    def centrality(w):  # min(left, right) context of t in full window w
        return tf.minimum(t - w * stride, w * stride + room - 1 - t)

    # Full windows (all but the last) holding t: first to last.
    first = tf.maximum(-((room - 1 - t) // stride), 0)  # ceil
    last = tf.minimum(t // stride, last_window - 1)
    peak = (2 * t - room + 1) // (2 * stride)
    below = tf.minimum(tf.maximum(peak, first), last)
    above = tf.minimum(tf.maximum(peak + 1, first), last)
    best = tf.where(centrality(above) > centrality(below), above, below)
    score = _score(centrality(best), room)

    last_start = last_window * stride
    last_score = _score(
        tf.minimum(t - last_start, length - 1 - t), length - last_start
    )
    # The last window wins only if it holds t and strictly beats the best
    # full window, which comes first.
    last_wins = (first > last) | ((t >= last_start) & (last_score > score))
    return tf.where(last_wins, last_window, best) == window


def gather_or_zero(values, index):
    """`tf.gather(values, index)` as int64, also when `values` is empty.

    An empty batch of tokens still needs an element to gather from; the
    positions that read it are masked out by the caller.
    """
    values = tf.concat([tf.cast(values, tf.int64), [0]], axis=0)
    return tf.gather(values, index)


def _score(context, length):
    return tf.cast(context, tf.float64) + 0.01 * tf.cast(length, tf.float64)
