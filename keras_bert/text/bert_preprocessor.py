"""Raw text to BERT's three inputs: tokenize, truncate, pack and pad."""

import keras
import tensorflow as tf

from keras_bert.keras_workarounds import keep_string_inputs
from keras_bert.text import eager_chunks
from keras_bert.text.bert_tokenizer import BertTokenizer
from keras_bert.text.bert_tokenizer import EagerFunctions
from keras_bert.text.bert_tokenizer import to_string_tensor
from keras_bert.text.eager_chunks import is_long_string_list

# What `BertPreprocessor` produces and `BertBackbone` takes, in this order;
# the one spelling of these names (re-exported as
# `keras_bert.models.bert_backbone.BACKBONE_INPUTS`).
BACKBONE_INPUTS = ("token_ids", "segment_ids", "padding_mask")
TRUNCATION_STRATEGIES = ("longest_first", "round_robin")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs one or two texts into BERT's fixed-length inputs.

    Each example becomes `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`,
    truncated to `sequence_length` and padded with `[PAD]`. `segment_ids`
    are 0 up to and including the first `[SEP]` and 1 for `B [SEP]`;
    `padding_mask` is 1 on real tokens and 0 on padding.

    Truncation with `"longest_first"` (the default) reproduces Hugging
    Face's Rust tokenizer (`truncation="longest_first"`): if the pair does
    not fit, the shorter text is kept whole when it takes at most half the
    budget and the longer one gets the rest; otherwise each gets half (the
    second text the extra token of an odd budget). `"round_robin"` gives the
    texts one token each in turn, the first text first. A single text keeps
    its first `sequence_length - 2` tokens.

    Works on a batch, fully in graph: use it in `tf.data.Dataset.map` or
    inside an exported SavedModel.

    Args:
        tokenizer: `keras_bert.BertTokenizer`.
        sequence_length: int. Length of every output row. Defaults to `128`.
        truncate: str. `"longest_first"` or `"round_robin"`.

    Call arguments:
        x: strings `(batch_size,)` (or one string), or a tuple
            `(texts_a, texts_b)` of two such for sentence pairs. A Python
            tuple always means a pair; a list means a batch.
        y: optional labels, passed through (for `tf.data` pipelines that
            map `(text, label)` elements).
        sample_weight: optional, passed through.

    Returns:
        A dict of int32 tensors `token_ids`, `segment_ids`, `padding_mask`,
        each `(batch_size, sequence_length)` (or `(sequence_length,)` for
        one string); with `y`, the tuple `(dict, y[, sample_weight])`.

    Example:

    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "the", "quick", "brown", "fox", "##es", "."]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=8)
    inputs = preprocessor(["The fox."])
    inputs["token_ids"]     # [[2, 5, 8, 10, 3, 0, 0, 0]]
    inputs["padding_mask"]  # [[1, 1, 1, 1, 1, 0, 0, 0]]
    # Two texts of 4 tokens, room for 5: A keeps 2 and B keeps 3.
    inputs = preprocessor((["The quick fox."], ["The foxes."]))
    inputs["token_ids"]     # [[2, 5, 6, 3, 5, 8, 9, 3]]
    inputs["segment_ids"]   # [[0, 0, 0, 0, 1, 1, 1, 1]]
    ```
    """

    def __init__(
        self,
        tokenizer,
        sequence_length=128,
        truncate="longest_first",
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        keep_string_inputs(self)
        self.built = True
        if not isinstance(tokenizer, BertTokenizer):
            raise ValueError(
                "Received an invalid value for argument `tokenizer`, "
                "expected a keras_bert.BertTokenizer. Received: "
                f"tokenizer={tokenizer!r}"
            )
        if not isinstance(sequence_length, int) or sequence_length < 3:
            raise ValueError(
                "Received an invalid value for argument `sequence_length`, "
                "expected an integer of at least 3 ([CLS], a token, [SEP]). "
                f"Received: sequence_length={sequence_length!r}"
            )
        if truncate not in TRUNCATION_STRATEGIES:
            raise ValueError(
                "Received an invalid value for argument `truncate`, expected "
                f"one of {TRUNCATION_STRATEGIES}. Received: "
                f"truncate={truncate!r}"
            )
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.truncate = truncate
        # A plain object: neither Keras nor SavedModel should track these.
        self._compiled = EagerFunctions()

    def __call__(self, x, *args, **kwargs):
        texts = list(x) if isinstance(x, tuple) else [x]
        if all(is_long_string_list(t) for t in texts) and not kwargs:
            # Keras' __call__ would first turn the lists into NumPy arrays
            # of fixed-width strings: every line as wide as the longest.
            return self.call(x, *args)
        return super().__call__(x, *args, **kwargs)

    def call(self, x, y=None, sample_weight=None):
        texts = list(x) if isinstance(x, tuple) else [x]
        if len(texts) not in (1, 2):
            raise ValueError(
                "BertPreprocessor packs one text or a pair of texts; "
                f"received a tuple of {len(texts)}. Pass `texts` or "
                "`(texts_a, texts_b)`."
            )
        if all(is_long_string_list(t) for t in texts) and (
            len({len(t) for t in texts}) == 1
        ):
            # Python lists of many strings, converted a chunk at a time.
            outputs = eager_chunks.concat_chunks(
                lambda *chunk: self.call(
                    tuple(chunk) if len(chunk) > 1 else chunk[0]
                ),
                *texts,
            )
            return keras.utils.pack_x_y_sample_weight(outputs, y, sample_weight)
        texts = [to_string_tensor(t) for t in texts]
        ranks = [t.shape.rank for t in texts]
        if any(rank not in (0, 1) for rank in ranks):
            raise ValueError(
                "BertPreprocessor takes a string or a 1-D batch of strings "
                f"per text; received rank {ranks}. Reshape the texts to "
                "`(batch_size,)`."
            )
        if len(set(ranks)) > 1 or (
            tf.executing_eagerly() and len({int(tf.size(t)) for t in texts}) > 1
        ):
            raise ValueError(
                "The two texts of a pair need the same batch size; received "
                f"shapes {[tuple(t.shape) for t in texts]}."
            )
        outputs = self._preprocess(texts, unbatched=ranks[0] == 0)
        return keras.utils.pack_x_y_sample_weight(outputs, y, sample_weight)

    def preprocess_batch(self, *texts):
        """Tokenizes and packs 1-D string tensors, one per text."""
        return self.pack([self.tokenizer.tokenize_batch(t) for t in texts])

    def _preprocess_one(self, *texts):
        outputs = self.preprocess_batch(*[t[tf.newaxis] for t in texts])
        return {key: value[0] for key, value in outputs.items()}

    def batch_function(self, num_texts=1):
        """`preprocess_batch` as a `tf.function`, traced once.

        Takes `num_texts` 1-D string tensors and returns the packed dict.
        Traced on its first call and kept with the preprocessor, so that
        every `tf.data.Dataset.map` (or eager call) after the first
        reuses the tokenizer's graph instead of building it again, which
        is what costs most on small inputs.

        Args:
            num_texts: int. `1` for single texts, `2` for pairs.

        Example:
        ```python
        pack = preprocessor.batch_function(2)
        dataset = tf.data.Dataset.from_tensor_slices(
            (["The fox."], ["The quick fox."])
        ).batch(32).map(pack)
        ```
        """
        return self._compiled_function(num_texts, unbatched=False)

    def _compiled_function(self, num_texts, unbatched):
        key = (num_texts, unbatched)
        functions = self._compiled.functions
        if key not in functions:
            function = (
                self._preprocess_one if unbatched else self.preprocess_batch
            )
            shape = [] if unbatched else [None]
            # Without autograph: the tokenizer's code has no tensor-valued
            # Python control flow to convert, and converting it took 5.6 of
            # the 9 s of a fresh model's first `predict` of one sentence
            # (benchmarks/first_call_latency.py --fresh).
            functions[key] = tf.function(
                function,
                input_signature=[tf.TensorSpec(shape, tf.string)] * num_texts,
                autograph=False,
            )
        return functions[key]

    def _preprocess(self, texts, unbatched):
        function = self._preprocess_one if unbatched else self.preprocess_batch
        if not tf.executing_eagerly():
            return function(*texts)
        # Eagerly, one compiled function call beats ~100 op dispatches.
        return eager_chunks.eager_in_chunks(
            self._compiled_function(len(texts), unbatched), *texts
        )

    def pack(self, segments):
        """Packs ragged token ids `[(batch_size, (tokens)), ...]`."""
        budget = self.sequence_length - 1 - len(segments)
        lengths = [s.row_lengths() for s in segments]
        if len(segments) == 1:
            keep = [tf.minimum(lengths[0], tf.constant(budget, tf.int64))]
        elif self.truncate == "longest_first":
            keep = _longest_first(lengths[0], lengths[1], budget)
        else:
            keep = _round_robin(lengths[0], lengths[1], budget)
        # Fill the dense (batch, sequence_length) outputs position by
        # position: [CLS], the kept tokens of A, [SEP], those of B, [SEP],
        # then padding.
        positions = tf.range(self.sequence_length, dtype=tf.int64)[None, :]
        tokenizer = self.tokenizer
        token_ids = tf.fill(
            tf.shape(positions + keep[0][:, None]), tokenizer.pad_token_id
        )
        segment_ids = tf.zeros_like(token_ids)
        token_ids = tf.where(positions == 0, tokenizer.cls_token_id, token_ids)
        start = tf.ones_like(keep[0])[:, None]  # where the segment begins
        for index, (segment, length) in enumerate(zip(segments, keep)):
            end = start + length[:, None]  # where its [SEP] goes
            inside = (positions >= start) & (positions < end)
            flat_index = segment.row_starts()[:, None] + positions - start
            flat_index = tf.where(inside, flat_index, 0)
            values = tf.concat([segment.values, [0]], axis=0)  # never empty
            token_ids = tf.where(
                inside, tf.gather(values, flat_index), token_ids
            )
            token_ids = tf.where(
                positions == end, tokenizer.sep_token_id, token_ids
            )
            in_segment = inside | (positions == end)
            segment_ids = tf.where(in_segment, index, segment_ids)
            start = end + 1
        padding_mask = tf.cast(positions < start, tf.int32)
        return dict(
            token_ids=token_ids,
            segment_ids=segment_ids,
            padding_mask=padding_mask,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            tokenizer=keras.layers.serialize(self.tokenizer),
            sequence_length=self.sequence_length,
            truncate=self.truncate,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config["tokenizer"], dict):
            config["tokenizer"] = keras.layers.deserialize(config["tokenizer"])
        return cls(**config)

    def compute_output_shape(self, input_shape):
        shape = (None, self.sequence_length)
        return dict(token_ids=shape, segment_ids=shape, padding_mask=shape)


def _longest_first(length_a, length_b, budget):
    """Hugging Face's LongestFirst: how many tokens each text keeps."""
    budget = tf.constant(budget, length_a.dtype)
    shorter = tf.minimum(length_a, length_b)
    keep_longer = tf.where(
        shorter > budget, shorter, tf.maximum(shorter, budget - shorter)
    )
    too_long = shorter + keep_longer > budget
    keep_shorter = tf.where(too_long, budget // 2, shorter)
    keep_longer = tf.where(too_long, budget // 2 + budget % 2, keep_longer)
    # Hugging Face swaps only when the first text is strictly longer.
    a_longer = length_a > length_b
    keep_a = tf.where(a_longer, keep_longer, keep_shorter)
    keep_b = tf.where(a_longer, keep_shorter, keep_longer)
    return [tf.minimum(length_a, keep_a), tf.minimum(length_b, keep_b)]


def _round_robin(length_a, length_b, budget):
    """One token to each text in turn, the first text first."""
    budget = tf.constant(budget, length_a.dtype)
    keep_a = tf.minimum(
        length_a, tf.maximum((budget + 1) // 2, budget - length_b)
    )
    keep_b = tf.minimum(length_b, budget - keep_a)
    return [keep_a, keep_b]
