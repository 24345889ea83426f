"""Fill-mask with TensorFlow ops: the likeliest tokens at each `[MASK]`.

`fill_mask_outputs` is what `BertMaskedLM` runs on packed text, in its
SavedModel's endpoints and in its `fill_mask`
(`fill_mask_text_function`): raw text with `[MASK]` written where a token
is to be guessed → the `top_k` likeliest tokens at each mask, with their
probabilities. As `transformers`' `pipeline("fill-mask")`: every mask of a
text is predicted at once from the same input (the other masks stay
`[MASK]`), and each mask's scores are the softmax over the whole
vocabulary (special tokens included) at its position, then the `top_k`
highest, best first.
"""

import tensorflow as tf

from keras_bert.decoding.text_functions import packed_text_function

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


def fill_mask_outputs(model, preprocessor, top_k=DEFAULT_TOP_K):
    """`outputs_fn(inputs, text)`: the best tokens at each mask of `inputs`.

    The function takes the backbone inputs (`token_ids`, `segment_ids`,
    `padding_mask`, `(batch, sequence)`) and returns
    - `token`: string `(batch, masks, top_k)`, the guessed tokens as the
      vocabulary writes them (a WordPiece continuation keeps its `##`);
    - `token_id`: int32 `(batch, masks, top_k)`;
    - `score`: float32 `(batch, masks, top_k)`, each token's probability
      (softmax over the vocabulary at that mask), in decreasing order;
    - `num_masks`: int32 `(batch,)`, the masks of each text.

    `masks` is the most masks of a text in the batch; a text's masks come
    in reading order, and the rows past its last one hold
    `FILL_MASK_PADDING` (`""`, `-1`, `0.0`). A text without `[MASK]` (an
    empty string too) gets `num_masks` 0 and only padding, never an
    error: one such text does not fail its batch.

    Args:
        model: callable from the backbone inputs and `masked_positions`
            to `mlm_logits` (`keras_bert.BertMaskedLM`), with a
            `backbone.vocabulary_size`.
        preprocessor: `keras_bert.BertPreprocessor`; its tokenizer names
            the mask token and the tokens.
        top_k: int. Tokens returned per mask, from 1 to the vocabulary
            size. Defaults to `5` (as the `transformers` pipeline).
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

    return fill_mask


def fill_mask_text_function(
    model, preprocessor, top_k=DEFAULT_TOP_K, trim=True
):
    """The text function of a masked LM: texts with `[MASK]` → tokens.

    Takes `text`, string `(batch,)`, with `[MASK]` (the tokenizer's mask
    token) where tokens are to be guessed, and returns `fill_mask_outputs`
    of the packed texts. A `[MASK]` cut off by the preprocessor's
    `sequence_length` is not predicted.

    Args:
        model, preprocessor, top_k: as `fill_mask_outputs`.
        trim: bool. Whether the model runs only up to the request's
            longest row (the default; the same outputs). `False` runs all
            `sequence_length` positions.

    Returns `(function, input_signature)`, a text function
    (`keras_bert.decoding.text_functions`).
    """
    return packed_text_function(
        preprocessor,
        fill_mask_outputs(model, preprocessor, top_k),
        trim=trim,
    )
