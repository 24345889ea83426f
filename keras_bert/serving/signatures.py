"""Pieces the endpoint builders share (see `keras_bert.serving.endpoints`)."""

import tensorflow as tf

IDS_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def ids_signature():
    """The backbone inputs as int32 `(batch, sequence)` tensor specs."""
    return [
        tf.TensorSpec([None, None], tf.int32, name=name) for name in IDS_INPUTS
    ]


def text_and_ids_endpoints(preprocessor, outputs_fn, ids_name, pair=False):
    """A raw-text `serving_default` and an ids endpoint over one function.

    Args:
        preprocessor: `keras_bert.BertPreprocessor`.
        outputs_fn: callable `(inputs, text) -> dict of tensors`, given
            the backbone inputs and whether they came from text.
        ids_name: str. Name of the endpoint on ids.
        pair: bool. Whether the text endpoint takes `text_a` and `text_b`
            (sentence pairs) instead of `text`.

    Returns a dict `name -> (function, input_signature)`.
    """
    text_names = ("text_a", "text_b") if pair else ("text",)
    text_signature = [
        tf.TensorSpec([None], tf.string, name=name) for name in text_names
    ]
    if pair:

        def serve_text(text_a, text_b):
            text_a, text_b = same_batch_size(text_a=text_a, text_b=text_b)
            return outputs_fn(preprocessor((text_a, text_b)), text=True)

    else:

        def serve_text(text):
            return outputs_fn(preprocessor(text), text=True)

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
