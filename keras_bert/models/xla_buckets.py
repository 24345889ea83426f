"""Padding to power-of-two buckets, so that XLA compiles few shapes.

Under XLA (`model.jit_compile`) every new input shape compiles the model
again. A small call (`keras_bert.models.small_calls`) pads its batch to a
power of two and its texts' length to a power of two (at least
`SMALLEST_LENGTH`, at most the preprocessor's `sequence_length`): padding
that the attention mask hides and that `first_rows` drops from the
outputs.
"""

import tensorflow as tf

# The shortest sequence bucket under XLA.
SMALLEST_LENGTH = 8


def bucket(size):
    """The least power of two at least `size` (an int32 scalar tensor)."""
    bits = tf.maximum(size, 1) - 1
    for shift in (1, 2, 4, 8, 16):
        bits = tf.bitwise.bitwise_or(bits, tf.bitwise.right_shift(bits, shift))
    return bits + 1


def pad_axis(value, axis, size):
    padding = [[0, 0]] * len(value.shape)
    padding[axis] = [0, size - tf.shape(value)[axis]]
    return tf.pad(value, padding)


def padded(features, longest):
    """Features padded to bucketed sizes: rows (empty ones: all padding)
    to a power of two, columns to a power of two in
    `[SMALLEST_LENGTH, longest]`."""
    rows = bucket(tf.shape(features["token_ids"])[0])
    length = tf.shape(features["token_ids"])[1]
    columns = tf.minimum(
        tf.maximum(bucket(length), SMALLEST_LENGTH), max(longest, 1)
    )
    columns = tf.maximum(columns, length)
    return {
        name: pad_axis(pad_axis(value, 0, rows), 1, columns)
        for name, value in features.items()
    }


def first_rows(outputs, count, padded):
    """`outputs` cut back to their first `count` rows where the batch was
    `padded`."""
    if not padded:
        return outputs
    return tf.nest.map_structure(lambda value: value[:count], outputs)
