"""Fill-mask from a `BertMaskedLM`, inside a SavedModel.

`masked_lm_endpoints` is what `BertMaskedLM` serves, and what its
`fill_mask` runs in Python: raw text with `[MASK]` written where a token
is to be guessed → the `top_k` likeliest tokens at each mask, with their
probabilities. As `transformers`' `pipeline("fill-mask")`: every mask of a
text is predicted at once from the same input (the other masks stay
`[MASK]`), and each mask's scores are the softmax over the whole
vocabulary (special tokens included) at its position, then the `top_k`
highest, best first.
"""

import tensorflow as tf

from keras_bert.serving.signatures import text_and_ids_endpoints

# What pads the outputs past a text's last mask (a text with fewer masks
# than the most of its batch, or none).
FILL_MASK_PADDING = {"token": "", "token_id": -1, "score": 0.0}

DEFAULT_TOP_K = 5


def check_top_k(top_k, vocabulary_size):
    """`top_k` as an int in `[1, vocabulary_size]`, or a `ValueError`."""
    if (
        isinstance(top_k, bool)
        or not isinstance(top_k, int)
        or not 1 <= top_k <= vocabulary_size
    ):
        raise ValueError(
            "Received an invalid value for argument `top_k`, expected an "
            f"integer from 1 to the vocabulary size ({vocabulary_size}), the "
            f"number of tokens returned per mask (e.g. {DEFAULT_TOP_K}). "
            f"Received: top_k={top_k!r}"
        )
    return top_k


def masked_lm_endpoints(model, preprocessor, top_k=DEFAULT_TOP_K):
    """`serving_default` on text, `fill_mask_ids` on ids: fill-mask.

    - `serving_default`: `text`, string `(batch,)`, with `[MASK]` (the
      tokenizer's mask token) where tokens are to be guessed →
      - `token`: string `(batch, masks, top_k)`, the guessed tokens as the
        vocabulary writes them (a WordPiece continuation keeps its `##`);
      - `token_id`: int32 `(batch, masks, top_k)`;
      - `score`: float32 `(batch, masks, top_k)`, each token's probability
        (softmax over the vocabulary at that mask), in decreasing order;
      - `num_masks`: int32 `(batch,)`, the masks of each text.

      `masks` is the most masks of a text in the batch; a text's masks
      come in reading order, and the rows past its last one hold
      `FILL_MASK_PADDING` (`""`, `-1`, `0.0`). A text without `[MASK]`
      (an empty string too) gets `num_masks` 0 and only padding, never an
      error: one such text does not fail its batch. A `[MASK]` cut off by
      the preprocessor's `sequence_length` is not predicted.
    - `fill_mask_ids`: `token_ids`, `segment_ids`, `padding_mask` int32
      `(batch, sequence)` → the same, for the ids equal to the mask
      token's.

    Args:
        model: `keras_bert.BertMaskedLM`.
        preprocessor: the `keras_bert.BertPreprocessor` to serve with; its
            tokenizer names the mask token and the tokens.
        top_k: int. Tokens returned per mask, from 1 to the vocabulary
            size. Defaults to `5` (as the `transformers` pipeline).

    Returns a dict `name -> (function, input_signature)`.
    """
    vocabulary_size = model.backbone.vocabulary_size
    top_k = check_top_k(top_k, vocabulary_size)
    tokenizer = preprocessor.tokenizer
    mask_token_id = tokenizer.mask_token_id
    # One string per id of the model; ids the tokenizer's vocabulary does
    # not have (a model larger than its vocabulary) are named "".
    tokens = tokenizer.get_vocabulary()[:vocabulary_size]
    tokens += [""] * (vocabulary_size - len(tokens))

    def fill_mask(inputs, text):
        token_table = tf.constant(tokens)
        token_ids = tf.cast(inputs["token_ids"], tf.int32)
        is_mask = tf.equal(token_ids, mask_token_id)
        num_masks = tf.reduce_sum(tf.cast(is_mask, tf.int32), axis=1)
        positions = tf.broadcast_to(
            tf.range(tf.shape(token_ids)[1]), tf.shape(token_ids)
        )
        # (batch, most masks in the batch); padded with position 0.
        masked_positions = tf.ragged.boolean_mask(positions, is_mask)
        masked_positions = masked_positions.to_tensor(0)
        outputs = model(
            {**inputs, "masked_positions": masked_positions}, training=False
        )
        probabilities = tf.nn.softmax(
            tf.cast(outputs["mlm_logits"], tf.float32), axis=-1
        )
        scores, ids = tf.math.top_k(probabilities, k=top_k)
        # (batch, masks, top_k): whether the slot is one of the text's masks.
        real = tf.sequence_mask(num_masks, tf.shape(masked_positions)[1])
        real = tf.broadcast_to(real[:, :, None], tf.shape(ids))
        return {
            "token": tf.where(
                real,
                tf.gather(token_table, ids),
                FILL_MASK_PADDING["token"],
            ),
            "token_id": tf.where(real, ids, FILL_MASK_PADDING["token_id"]),
            "score": tf.where(real, scores, FILL_MASK_PADDING["score"]),
            "num_masks": num_masks,
        }

    return text_and_ids_endpoints(preprocessor, fill_mask, "fill_mask_ids")
