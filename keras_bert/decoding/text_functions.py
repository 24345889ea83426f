"""A head's raw-text function: strings in, packed, trimmed, the model, out.

A *text function* is the pair `(function, input_signature)` that a
SavedModel serves as `serving_default` and that a model's `predict` on raw
text runs in Python (`keras_bert.decoding.run_text`): `function` takes
string tensors `(batch,)` named by `input_signature` and returns a dict of
tensors. `packed_text_function` makes one for a head that reads one
packed row per text (or pair); the heads that cut long texts into windows
build theirs in `answers` and `entities` from the same pieces.
"""

import tensorflow as tf

from keras_bert.data.trim_batch import trim_batch
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS


def string_signature(names):
    """String tensor specs `(batch,)`, one per input name."""
    return [tf.TensorSpec([None], tf.string, name=name) for name in names]


def trim_to_longest_row(inputs):
    """Drops the padding columns that every row of a request has.

    What every raw-text function runs its model on: the packed inputs cut
    to the request's longest row (`keras_bert.data.trim_batch` with
    `multiple=1`), so that a short request costs what its tokens cost, not
    what the export's `sequence_length` does. Padding is masked, so no
    output changes (to float rounding; tests/serving/test_trim.py).
    The width is not rounded up (to a multiple of 8, say): in a graph
    whose shapes are dynamic nothing is traced again per width, so extra
    columns would only be work.

    Args:
        inputs: dict of `(batch, sequence_length)` tensors with a
            `"padding_mask"` (e.g. `BertPreprocessor`'s outputs, or the
            windows of a long text); tensors that are not 2-D are kept.

    Returns:
        The same dict, 2-D tensors cut to `(batch, longest_row)`.

    Example:
    ```python
    inputs = preprocessor(tf.constant(["a short text"]))  # (1, 128)
    trim_to_longest_row(inputs)["token_ids"].shape  # (1, 5)
    ```
    """
    return trim_batch(inputs, multiple=1)


def call_on_windows(model, windows, trim=True):
    """`(windows, outputs)`: `model` run on the windows of long texts.

    Args:
        model: callable from the ids dict to the head's outputs.
        windows: dict of `(num_windows, sequence_length)` tensors holding
            the backbone inputs (and what decoding reads: offsets, ...).
        trim: bool. Whether to cut the windows to the request's longest
            first (`trim_to_longest_row`).

    Returns:
        The windows, trimmed when `trim`, and the model's outputs on them.
    """
    if trim:
        windows = trim_to_longest_row(windows)
    inputs = {name: windows[name] for name in BACKBONE_INPUTS}
    return windows, model(inputs, training=False)


def same_batch_size(**inputs):
    """The string batches `inputs`, checked to hold as many strings each.

    Fails with `InvalidArgumentError` naming the inputs and both sizes, and
    the check runs before anything reads the inputs (so the error is this
    one, not one from deep inside the tokenizer).

    Returns the inputs, in order.
    """
    (first_name, first), *others = inputs.items()
    checks = [
        tf.debugging.assert_equal(
            tf.shape(first)[0],
            tf.shape(value)[0],
            message=(
                f"{first_name} and {name} must hold the same number of "
                f"strings (one {name} per {first_name}); the sizes are"
            ),
        )
        for name, value in others
    ]
    with tf.control_dependencies(checks):
        return [tf.identity(value) for value in inputs.values()]


def packed_text_function(preprocessor, outputs_fn, pair=False, trim=True):
    """The text function of a head that reads one packed row per text.

    Packs the texts with `preprocessor`, cuts them to the request's
    longest row (`trim_to_longest_row`) and returns `outputs_fn` of them.

    Args:
        preprocessor: `keras_bert.BertPreprocessor`.
        outputs_fn: callable `(inputs, text) -> dict of tensors`, given
            the backbone inputs and `text=True` (an ids endpoint built on
            the same `outputs_fn` passes `text=False`).
        pair: bool. Whether the function takes `text_a` and `text_b`
            (sentence pairs) instead of `text`.
        trim: bool. Whether the packed inputs are cut to the request's
            longest row. `False` runs the model on all
            `preprocessor.sequence_length` columns (the same outputs,
            slower: for comparisons).

    Returns:
        `(function, input_signature)`.
    """

    def text_inputs(texts):
        inputs = preprocessor(texts)
        return trim_to_longest_row(inputs) if trim else inputs

    if pair:

        def serve_text(text_a, text_b):
            text_a, text_b = same_batch_size(text_a=text_a, text_b=text_b)
            return outputs_fn(text_inputs((text_a, text_b)), text=True)

        return serve_text, string_signature(("text_a", "text_b"))

    def serve_text(text):
        return outputs_fn(text_inputs(text), text=True)

    return serve_text, string_signature(("text",))
