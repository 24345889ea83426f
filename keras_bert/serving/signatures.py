"""Endpoint builders shared by the models' `serving_endpoints`."""

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
            tf.debugging.assert_equal(
                tf.shape(text_a),
                tf.shape(text_b),
                message="text_a and text_b must have the same batch size",
            )
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
