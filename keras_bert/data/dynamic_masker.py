"""Masked-LM masking as a `tf.data` transformation (new masks every epoch)."""

import numpy as np
import tensorflow as tf

from keras_bert.data import masking
from keras_bert.validation import check_positive_int


class DynamicMasker:
    """Draws BERT's masked-LM predictions inside a `tf.data` pipeline.

    The same rule as the TFRecord pipeline (`keras_bert.data.masking`):
    `masked_lm_prob` of the maskable tokens (not `[CLS]`, `[SEP]`, `[PAD]`
    or padding), stochastically rounded and capped at
    `max_predictions_per_seq`; 80% `[MASK]`, 10% a random non-special
    token, 10% unchanged; optionally whole words. Whole words are taken in
    random order while they fit the budget (the TFRecord pipeline also
    tries shorter words after one overshoots, so it can mask slightly
    more).

    Randomness comes from stateless ops keyed by a per-batch seed, which
    `apply` draws from `tf.data.Dataset.random(seed,
    rerandomize_each_iteration=True)`: a fixed `seed` gives the same masks
    on the first pass each run, and every new pass over the dataset (every
    epoch) gives new masks.

    Args:
        vocabulary: list of str. The WordPiece vocabulary in id order.
        mask_token_id: int. Id of `[MASK]`.
        max_predictions_per_seq: int. Defaults to `20`.
        masked_lm_prob: float. Defaults to `0.15`.
        do_whole_word_mask: bool. Defaults to `False`.

    Call arguments (of `mask`):
        features: dict with int32 `token_ids`, `segment_ids`,
            `padding_mask` of shape `(batch_size, sequence_length)`, the
            unmasked sequences.
        next_sentence_labels: int32 `(batch_size,)`.
        seed: int32 tensor of shape `(2,)`.

    Example:
    ```python
    masker = DynamicMasker(tokenizer.vocabulary, tokenizer.mask_token_id)
    dataset = masker.apply(unmasked_batches, seed=1)  # (features, labels)
    ```
    """

    def __init__(
        self,
        vocabulary,
        mask_token_id,
        max_predictions_per_seq=20,
        masked_lm_prob=0.15,
        do_whole_word_mask=False,
    ):
        check_positive_int("max_predictions_per_seq", max_predictions_per_seq)
        if not 0.0 <= masked_lm_prob <= 1.0:
            raise ValueError(
                "Received an invalid value for argument `masked_lm_prob`, "
                "expected a probability in [0, 1]. Received: "
                f"masked_lm_prob={masked_lm_prob!r}"
            )
        vocabulary = list(vocabulary)
        self.mask_token_id = int(mask_token_id)
        self.max_predictions_per_seq = max_predictions_per_seq
        self.masked_lm_prob = masked_lm_prob
        self.do_whole_word_mask = do_whole_word_mask
        never = np.zeros(len(vocabulary), dtype=bool)
        never[masking.never_masked_ids(vocabulary)] = True
        self._never_masked = tf.constant(never)
        self._replacements = tf.constant(masking.replacement_ids(vocabulary))
        self._is_continuation = tf.constant(
            masking.continuation_flags(vocabulary)
        )

    def mask(self, features, next_sentence_labels, seed):
        """Masks one batch; returns `(features, labels)` for `BertMaskedLM`."""
        token_ids = tf.cast(features["token_ids"], tf.int32)
        padding_mask = tf.cast(features["padding_mask"], tf.bool)
        batch_size = tf.shape(token_ids)[0]
        length = tf.shape(token_ids)[1]
        seeds = tf.random.experimental.stateless_split(seed, 4)

        candidate = padding_mask & ~tf.gather(self._never_masked, token_ids)
        word_start = candidate
        if self.do_whole_word_mask:
            previous = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
            continues = tf.gather(self._is_continuation, token_ids) & previous
            word_start = candidate & ~continues
        # Index of the word each token belongs to, (batch, length).
        word_index = tf.cumsum(tf.cast(word_start, tf.int32), axis=1) - 1
        word_index = tf.maximum(word_index, 0)

        num_candidates = tf.reduce_sum(tf.cast(candidate, tf.float32), 1)
        expected = num_candidates * self.masked_lm_prob
        rounding = tf.random.stateless_uniform([batch_size], seeds[0])
        budget = tf.floor(expected + rounding)  # stochastic rounding
        budget = tf.minimum(budget, float(self.max_predictions_per_seq))

        # Words in random order; take them while the budget allows.
        flat_word = word_index + tf.range(batch_size)[:, None] * length
        word_length = tf.math.unsorted_segment_sum(
            tf.reshape(tf.cast(candidate, tf.float32), [-1]),
            tf.reshape(flat_word, [-1]),
            batch_size * length,
        )
        word_length = tf.reshape(word_length, [batch_size, length])
        score = tf.random.stateless_uniform([batch_size, length], seeds[1])
        score = tf.where(word_length > 0, score, -1.0)
        order = tf.argsort(score, axis=1, direction="DESCENDING")
        cumulative = tf.cumsum(
            tf.gather(word_length, order, batch_dims=1), axis=1
        )
        chosen_sorted = cumulative <= budget[:, None]
        rank = tf.argsort(order, axis=1)
        chosen_word = tf.gather(chosen_sorted, rank, batch_dims=1)
        selected = candidate & tf.gather(chosen_word, word_index, batch_dims=1)

        # 80% [MASK], 10% random token, 10% unchanged.
        draw = tf.random.stateless_uniform([batch_size, length], seeds[2])
        random_ids = tf.gather(
            self._replacements,
            tf.random.stateless_uniform(
                [batch_size, length],
                seeds[3],
                maxval=tf.shape(self._replacements)[0],
                dtype=tf.int32,
            ),
        )
        replaced = tf.where(draw < 0.8, self.mask_token_id, random_ids)
        replaced = tf.where(draw < 0.9, replaced, token_ids)
        masked_token_ids = tf.where(selected, replaced, token_ids)

        positions = tf.ragged.boolean_mask(
            tf.broadcast_to(tf.range(length), [batch_size, length]), selected
        )
        shape = [batch_size, self.max_predictions_per_seq]
        masked_positions = positions.to_tensor(0, shape=shape)
        masked_lm_ids = tf.ragged.boolean_mask(token_ids, selected).to_tensor(
            0, shape=shape
        )
        outputs = {
            "token_ids": masked_token_ids,
            "segment_ids": tf.cast(features["segment_ids"], tf.int32),
            "padding_mask": tf.cast(features["padding_mask"], tf.int32),
            "masked_positions": masked_positions,
        }
        labels = {
            "mlm_logits": masked_lm_ids,
            "nsp_logits": tf.cast(next_sentence_labels, tf.int32),
        }
        return outputs, labels

    def apply(self, dataset, seed=None):
        """Masks a batched dataset of `(features, next_sentence_labels)`.

        Args:
            dataset: `tf.data.Dataset` of batched unmasked
                `(features, next_sentence_labels)`.
            seed: int or `None`. Fixes the masks of each pass.

        Returns:
            A `tf.data.Dataset` of `(features, labels)` for
            `BertMaskedLM.fit`.
        """
        seeds = tf.data.Dataset.random(
            seed=seed, rerandomize_each_iteration=True
        ).batch(2)
        seeds = seeds.map(lambda s: tf.cast(s % (2**31 - 1), tf.int32))
        return tf.data.Dataset.zip((dataset, seeds)).map(
            lambda batch, s: self.mask(batch[0], batch[1], s),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
