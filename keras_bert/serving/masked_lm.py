"""The SavedModel endpoints of a `BertMaskedLM`: fill-mask.

The outputs are `keras_bert.decoding.fill_mask.fill_mask_outputs`, what
`BertMaskedLM.fill_mask` runs in Python too, so the export answers as
`fill_mask` does.
"""

from keras_bert.decoding.fill_mask import DEFAULT_TOP_K
from keras_bert.decoding.fill_mask import fill_mask_outputs
from keras_bert.serving.signatures import text_and_ids_endpoints


def masked_lm_endpoints(model, preprocessor, top_k=DEFAULT_TOP_K, trim=True):
    """`serving_default` on text, `fill_mask_ids` on ids: fill-mask.

    - `serving_default`: `text`, string `(batch,)`, with `[MASK]` (the
      tokenizer's mask token) where tokens are to be guessed → `token`,
      `token_id`, `score` `(batch, masks, top_k)` and `num_masks`
      `(batch,)` (see `keras_bert.decoding.fill_mask.fill_mask_outputs`).
      A `[MASK]` cut off by the preprocessor's `sequence_length` is not
      predicted.
    - `fill_mask_ids`: `token_ids`, `segment_ids`, `padding_mask` int32
      `(batch, sequence)` → the same, for the ids equal to the mask
      token's.

    Args:
        model: `keras_bert.BertMaskedLM`.
        preprocessor: the `keras_bert.BertPreprocessor` to serve with; its
            tokenizer names the mask token and the tokens.
        top_k: int. Tokens returned per mask, from 1 to the vocabulary
            size. Defaults to `5` (as the `transformers` pipeline).
        trim: bool. Whether the text endpoint runs the model only up to
            the request's longest row (the default; the same outputs).
            `False` runs all `sequence_length` positions.

    Returns a dict `name -> (function, input_signature)`.
    """
    return text_and_ids_endpoints(
        preprocessor,
        fill_mask_outputs(model, preprocessor, top_k),
        "fill_mask_ids",
        trim=trim,
    )
