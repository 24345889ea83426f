"""Pieces the endpoint builders share (see `keras_bert.serving.endpoints`).

A raw-text endpoint is a text function of `keras_bert.decoding` (what a
model's `predict` on raw text runs too); what serving adds is the ids
endpoint beside it.
"""

import tensorflow as tf

from keras_bert.decoding.text_functions import packed_text_function
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS

IDS_INPUTS = BACKBONE_INPUTS


def ids_signature(windows=False):
    """The backbone inputs as int32 `(batch, sequence)` tensor specs
    (`windows=True`: `(batch, windows, sequence)`, documents read in
    windows)."""
    shape = [None, None, None] if windows else [None, None]
    return [tf.TensorSpec(shape, tf.int32, name=name) for name in IDS_INPUTS]


def text_and_ids_endpoints(
    preprocessor, outputs_fn, ids_name, pair=False, trim=True, windows=False
):
    """A raw-text `serving_default` and an ids endpoint over one function.

    The text endpoint packs the texts with `preprocessor`, then runs
    `outputs_fn` on them cut to the request's longest row
    (`keras_bert.decoding.packed_text_function`); the ids endpoint runs it
    on the ids as they come, at any sequence length up to the model's
    maximum.

    Args:
        preprocessor: `keras_bert.BertPreprocessor` (or what else packs a
            text batch into the inputs, e.g.
            `keras_bert.text.document_windows.DocumentWindows`).
        outputs_fn: callable `(inputs, text) -> dict of tensors`, given
            the backbone inputs and whether they came from text.
        ids_name: str. Name of the endpoint on ids.
        pair: bool. Whether the text endpoint takes `text_a` and `text_b`
            (sentence pairs) instead of `text`.
        trim: bool. Whether the text endpoint cuts the packed inputs to
            the request's longest row. `False` runs the model on all
            `preprocessor.sequence_length` columns (the same outputs,
            slower: for comparisons).
        windows: bool. Whether the ids endpoint takes documents' windows
            `(batch, windows, sequence)`.

    Returns a dict `name -> (function, input_signature)`.
    """

    def serve_ids(token_ids, segment_ids, padding_mask):
        inputs = {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": padding_mask,
        }
        return outputs_fn(inputs, text=False)

    return {
        "serving_default": packed_text_function(
            preprocessor, outputs_fn, pair=pair, trim=trim
        ),
        ids_name: (serve_ids, ids_signature(windows)),
    }
