"""Pieces the endpoint builders share (see `keras_bert.serving.endpoints`)."""

import tensorflow as tf

from keras_bert.data.trim_batch import trim_batch

IDS_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def ids_signature():
    """The backbone inputs as int32 `(batch, sequence)` tensor specs."""
    return [
        tf.TensorSpec([None, None], tf.int32, name=name) for name in IDS_INPUTS
    ]


def trim_to_longest_row(inputs):
    """Drops the padding columns that every row of a request has.

    What every raw-text endpoint runs its model on: the packed inputs cut
    to the request's longest row (`keras_bert.data.trim_batch` with
    `multiple=1`), so that a short request costs what its tokens cost, not
    what the export's `sequence_length` does. Padding is masked, so no
    output changes (to float rounding, ≤ 1e-6; tests/serving/test_trim.py).
    Rounding the width up to a multiple of 8 was not measured to pay
    (`benchmarks/serving_profile.py`, `multiple_8` vs `multiple_1`): in a
    graph whose shapes are dynamic nothing is traced again per width, and
    the extra columns are only work.

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


def text_and_ids_endpoints(
    preprocessor, outputs_fn, ids_name, pair=False, trim=True
):
    """A raw-text `serving_default` and an ids endpoint over one function.

    The text endpoint packs the texts with `preprocessor`, then runs
    `outputs_fn` on them cut to the request's longest row
    (`trim_to_longest_row`); the ids endpoint runs it on the ids as they
    come, at any sequence length up to the model's maximum.

    Args:
        preprocessor: `keras_bert.BertPreprocessor`.
        outputs_fn: callable `(inputs, text) -> dict of tensors`, given
            the backbone inputs and whether they came from text.
        ids_name: str. Name of the endpoint on ids.
        pair: bool. Whether the text endpoint takes `text_a` and `text_b`
            (sentence pairs) instead of `text`.
        trim: bool. Whether the text endpoint cuts the packed inputs to
            the request's longest row. `False` runs the model on all
            `preprocessor.sequence_length` columns, as exports did before
            (the same outputs, slower: for comparisons).

    Returns a dict `name -> (function, input_signature)`.
    """
    text_names = ("text_a", "text_b") if pair else ("text",)
    text_signature = [
        tf.TensorSpec([None], tf.string, name=name) for name in text_names
    ]

    def text_inputs(texts):
        inputs = preprocessor(texts)
        return trim_to_longest_row(inputs) if trim else inputs

    if pair:

        def serve_text(text_a, text_b):
            text_a, text_b = same_batch_size(text_a=text_a, text_b=text_b)
            return outputs_fn(text_inputs((text_a, text_b)), text=True)

    else:

        def serve_text(text):
            return outputs_fn(text_inputs(text), text=True)

    def serve_ids(token_ids, segment_ids, padding_mask):
        inputs = {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": padding_mask,
        }
        return outputs_fn(inputs, text=False)

    return {
        "serving_default": (serve_text, text_signature),
        ids_name: (serve_ids, ids_signature()),
    }


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
