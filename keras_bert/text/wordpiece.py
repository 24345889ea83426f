"""WordPiece on split words: each word's pieces, and their spans in the text.

`BertTokenizer` tokenizes in two steps: `BasicTokenizer` cleans the text
and splits it into words (with each character's span in the original
string), then `WordPiece` splits each word into the longest vocabulary
pieces from the left with tensorflow-text's `FastWordpieceTokenizer` (the
linear algorithm of Song et al., 2021) and regroups the pieces by row. A
word longer than `max_input_chars_per_word` characters is `[UNK]`, and a
special token written in the text is its own id, as in Hugging Face.
"""

import tensorflow as tf
import tensorflow_text as tf_text


class WordPiece:
    """Greedy longest-match-first WordPiece over `BasicTokenizer`'s words.

    Args:
        vocabulary: list of str. The tokens, by id.
        unk_token: str. The token of a word that cannot be split.
        max_input_chars_per_word: int. Longer words become `unk_token`.
        special_tokens: list of str. The special tokens, in the order of
            `BasicTokenizer`'s `special_index`; empty where special tokens
            in the text are split as words.
    """

    def __init__(
        self, vocabulary, unk_token, max_input_chars_per_word, special_tokens
    ):
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self.special_tokens = list(special_tokens)
        # Words are split and length-checked by us (in characters, as
        # Hugging Face); the byte limit only has to let them through.
        self.tokenizer = tf_text.FastWordpieceTokenizer(
            vocab=vocabulary,
            suffix_indicator="##",
            max_bytes_per_word=4 * max_input_chars_per_word + 4,
            token_out_type=tf.int32,
            unknown_token=unk_token,
            no_pretokenization=True,
            support_detokenization=False,
        )

    def tokenize(self, words, word_lengths, special_index):
        """Ids `(batch_size, (num_tokens))` of `BasicTokenizer.split`'s
        words."""
        word_strings, _ = self._inputs(words, word_lengths, special_index)
        pieces = self.tokenizer.tokenize(word_strings)
        return regroup_by_row(pieces.row_lengths(), words, pieces.values)[0]

    def tokenize_with_offsets(
        self, words, word_lengths, special_index, chars, starts, ends
    ):
        """`(ids, starts, ends)` `(batch_size, (num_tokens))` of
        `BasicTokenizer.split_with_offsets`'s words and character spans."""
        word_strings, replaced = self._inputs(
            words, word_lengths, special_index
        )
        pieces, byte_starts, byte_ends = self.tokenizer.tokenize_with_offsets(
            word_strings
        )
        # A piece's offsets are bytes of its word's UTF-8 string. Lay the
        # words' bytes end to end, map each byte to the character holding
        # it, and read the source spans of the piece's first and last
        # characters.
        code_points = chars.flat_values
        char_bytes = (
            1
            + tf.cast(code_points >= 0x80, tf.int64)
            + tf.cast(code_points >= 0x800, tf.int64)
            + tf.cast(code_points >= 0x10000, tf.int64)
        )
        char_of_byte = tf.repeat(
            tf.range(tf.size(char_bytes, tf.int64)), char_bytes
        )
        word_bytes = tf.cast(tf.strings.length(words.flat_values), tf.int64)
        piece_word = pieces.value_rowids()
        first_byte = tf.gather(
            tf.cumsum(word_bytes, exclusive=True), piece_word
        )
        # `[UNK]` for a too-long word and a special token's own string were
        # split in place of the word: their piece covers the whole word.
        piece_replaced = tf.gather(replaced, piece_word)
        byte_starts = tf.where(
            piece_replaced, tf.constant(0, tf.int64), byte_starts.flat_values
        )
        byte_ends = tf.where(
            piece_replaced,
            tf.gather(word_bytes, piece_word),
            byte_ends.flat_values,
        )
        first_char = tf.gather(char_of_byte, first_byte + byte_starts)
        last_char = tf.gather(char_of_byte, first_byte + byte_ends - 1)
        return regroup_by_row(
            pieces.row_lengths(),
            words,
            pieces.flat_values,
            tf.gather(starts.flat_values, first_char),
            tf.gather(ends.flat_values, last_char),
        )

    def _inputs(self, words, word_lengths, special_index):
        """The string WordPiece splits for each word, and if it was swapped.

        A too-long word is swapped for `[UNK]`, a special token for its own
        string (its one sentinel character is not in the vocabulary).
        """
        word_strings = words.flat_values
        replaced = word_lengths.flat_values > self.max_input_chars_per_word
        word_strings = tf.where(replaced, self.unk_token, word_strings)
        if self.special_tokens:
            is_special = special_index.flat_values >= 0
            word_strings = tf.where(
                is_special,
                tf.gather(
                    tf.constant(self.special_tokens),
                    tf.maximum(special_index.flat_values, 0),
                ),
                word_strings,
            )
            replaced |= is_special
        return word_strings, replaced


def regroup_by_row(tokens_per_word, words, *flat_values):
    """Ragged `(batch_size, (num_tokens))` tensors from tokens per word."""
    tokens_per_row = tf.math.segment_sum(tokens_per_word, words.value_rowids())
    # segment_sum drops trailing rows without words: pad back.
    tokens_per_row = tf.pad(
        tokens_per_row,
        [[0, words.nrows() - tf.size(tokens_per_row, tf.int64)]],
    )
    return tuple(
        tf.RaggedTensor.from_row_lengths(values, tokens_per_row, validate=False)
        for values in flat_values
    )
