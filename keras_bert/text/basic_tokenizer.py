"""BERT's basic tokenizer (normalise, split words) as batched TensorFlow ops.

`BasicTokenizer` reproduces Hugging Face's Rust `BertNormalizer` followed by
`BertPreTokenizer`, character for character:

1. text cleaning: drop NUL, U+FFFD and control, format and private-use
   characters; map every whitespace character to a space;
2. put spaces around CJK ideographs;
3. when `strip_accents`: NFD decomposition, then drop non-spacing marks;
4. when `lowercase`: per-character full lower-casing;
5. split on whitespace and split punctuation off as one-character words.

Steps 1-4 act on each code point independently (canonical reordering in NFD
only moves the marks that step 3 then drops), so they fold into one lookup
per code point: a two-level table gives each code point a class and what it
becomes. The classes come from the reference tokenizer itself
(`unicode_tables.py`), not from a Unicode version, because Hugging Face
mixes several. The whole batch is handled as flat code point vectors with no
Python per example, so it runs in `tf.data` and in a SavedModel.
"""

import functools
import gc

import numpy as np
import tensorflow as tf

from keras_bert.text import unicode_tables

# Character classes (low three bits of a table entry).
ORDINARY = 0
REMOVED = 1
WHITESPACE = 2
ISOLATED = 3  # punctuation and CJK ideographs: a word on their own
SPECIAL = 4  # stands for a special token found in the raw text
# Bit 3 set: the value (bits 4+) indexes a multi-character expansion
# instead of being the replacement code point.
EXPANDS = 8
VALUE_SHIFT = 4

BLOCK_BITS = 7
BLOCK_SIZE = 1 << BLOCK_BITS
NUM_CODE_POINTS = 0x110000
HANGUL_FIRST = 0xAC00
HANGUL_LAST = 0xD7A3

# Special tokens written in the text are swapped for these private-use code
# points before the per-character pass (which would split `[CLS]` into three
# words), and turned back into the token afterwards. Real occurrences of
# these code points are private-use characters that text cleaning drops
# anyway; they are first replaced by another dropped character so they
# cannot be mistaken for a token.
SENTINEL_BASE = 0x10FF00
MAX_SPECIAL_TOKENS = 0xF0
SENTINEL_PATTERN = "[\\x{10FF00}-\\x{10FFEF}]"


def _parse_mapping(text):
    mapping = {}
    for entry in text.split():
        code_point, mapped = entry.split(":")
        mapping[int(code_point, 16)] = [int(c, 16) for c in mapped.split(".")]
    return mapping


def _code_points_in(ranges):
    return np.concatenate(
        [np.arange(first, last + 1) for first, last in ranges]
    )


def _hangul_decomposition(code_point):
    index = code_point - HANGUL_FIRST
    jamo = [0x1100 + index // 588, 0x1161 + (index % 588) // 28]
    if index % 28:
        jamo.append(0x11A7 + index % 28)
    return jamo


def _without_collection_pauses(function):
    """Runs `function` with Python's cyclic garbage collector paused.

    `build_tables` allocates about 100,000 small lists; in a process that
    has imported TensorFlow, the full collections they trigger walk
    millions of objects and took 0.35 s of its 0.41 s (0.05 s paused, on
    a 2-core AMD EPYC), paid by every process that builds a tokenizer.
    The collector is restored as it was when the function returns.
    """

    @functools.wraps(function)
    def paused(*args):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@functools.lru_cache(maxsize=8)
@_without_collection_pauses
def build_tables(lowercase, strip_accents, num_special_tokens):
    """Builds the per-code-point tables for one casing configuration.

    Returns a dict of numpy arrays, each in the narrowest integer dtype
    that holds it: `block_index` and `blocks` (the two-level table,
    `blocks[block_index[c >> 7] * 128 + (c & 127)]` is the entry of code
    point `c`, less `c << VALUE_SHIFT` unless it has `EXPANDS` set), and
    `expansion_starts`, `expansion_lengths`, `expansion_values` (a flat
    table of multi-character results).
    """
    entries = np.arange(NUM_CODE_POINTS, dtype=np.int64) << VALUE_SHIFT
    classes = np.zeros(NUM_CODE_POINTS, dtype=np.int64)

    decompositions = {}
    if strip_accents:
        decompositions = _parse_mapping(unicode_tables.DECOMPOSITIONS)
        for code_point in _code_points_in(unicode_tables.STRIPPED):
            decompositions[int(code_point)] = []
        for code_point in range(HANGUL_FIRST, HANGUL_LAST + 1):
            decompositions[code_point] = _hangul_decomposition(code_point)
    lower = _parse_mapping(unicode_tables.LOWERCASE) if lowercase else {}

    punctuation = set(_code_points_in(unicode_tables.PUNCTUATION).tolist())
    split_whitespace = set(
        _code_points_in(unicode_tables.SPLIT_WHITESPACE).tolist()
    )

    def output_class(code_point):
        if code_point in split_whitespace:
            return WHITESPACE
        if code_point in punctuation:
            return ISOLATED
        return ORDINARY

    expansions = [[]]  # index 0 unused so that a zero value never expands
    changed = set(decompositions) | set(lower)
    for code_point in sorted(changed):
        result = decompositions.get(code_point, [code_point])
        result = [c for r in result for c in lower.get(r, [r])]
        if len(result) == 1:
            entries[code_point] = result[0] << VALUE_SHIFT
            classes[code_point] = output_class(result[0])
        elif len(result) == 0:
            classes[code_point] = REMOVED
        else:
            if any(output_class(c) != ORDINARY for c in result):
                raise AssertionError(
                    f"The expansion of U+{code_point:04X} contains a word "
                    "boundary, which BasicTokenizer does not support."
                )
            entries[code_point] = (len(expansions) << VALUE_SHIFT) | EXPANDS
            expansions.append(result)
    unchanged = np.ones(NUM_CODE_POINTS, dtype=bool)
    unchanged[list(changed)] = False
    for code_point in punctuation:
        if unchanged[code_point]:
            classes[code_point] = ISOLATED
    for code_point in split_whitespace:
        if unchanged[code_point]:
            classes[code_point] = WHITESPACE
    # Text cleaning and CJK spacing act on the original character, first.
    classes[_code_points_in(unicode_tables.CHINESE)] = ISOLATED
    classes[_code_points_in(unicode_tables.WHITESPACE)] = WHITESPACE
    classes[_code_points_in(unicode_tables.REMOVED)] = REMOVED
    classes[0xD800:0xE000] = REMOVED  # never produced by a UTF-8 decoder
    sentinels = slice(SENTINEL_BASE, SENTINEL_BASE + num_special_tokens)
    classes[sentinels] = SPECIAL
    entries |= classes
    # Stored relative to the code point (`entry - (c << VALUE_SHIFT)`, but
    # for an expansion's index): most blocks then hold the same entries
    # (unchanged characters of one class) and are stored once.
    expanding = (entries & EXPANDS) != 0
    entries[~expanding] -= np.arange(NUM_CODE_POINTS)[~expanding] << VALUE_SHIFT

    blocks = entries.reshape(-1, BLOCK_SIZE)
    unique_blocks, block_index = _unique_rows(blocks)
    lengths = np.array([len(e) for e in expansions])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    values = np.array([c for e in expansions for c in e], dtype=np.int64)
    tables = dict(
        block_index=block_index.reshape(-1),
        blocks=unique_blocks.reshape(-1),
        expansion_starts=starts,
        expansion_lengths=lengths,
        expansion_values=values,
    )
    return {name: _narrowest(array) for name, array in tables.items()}


def _unique_rows(rows):
    """The distinct rows of `rows` in first-seen order, and each row's
    index among them: `np.unique(rows, axis=0, return_inverse=True)` up
    to the order, but by hashing each row's bytes instead of sorting the
    rows, which took about 20x longer (0.13 s against 0.006 s on the
    8,704 blocks of 128 entries, timed once by hand on a 2-core AMD EPYC;
    `tests/text/test_tokenizer_tables.py` checks the rows against
    `np.unique`'s)."""
    first_index = {}
    index = np.array(
        [
            first_index.setdefault(row.tobytes(), len(first_index))
            for row in rows
        ]
    )
    firsts = np.zeros(len(first_index), dtype=np.int64)
    firsts[index[::-1]] = np.arange(len(rows))[::-1]
    return rows[firsts], index


def _narrowest(array):
    """`array` in the narrowest integer dtype that holds its values (the
    tables are constants of every graph that tokenizes; `_lookup` widens
    what it gathers to int32)."""
    for dtype in (np.uint8, np.int8, np.uint16, np.int16, np.int32):
        info = np.iinfo(dtype)
        if array.size == 0 or (
            info.min <= array.min() and array.max() <= info.max
        ):
            return array.astype(dtype)
    raise AssertionError(f"A table entry does not fit in int32: {array}")


def _lookup(table, indices):
    """`table[indices]` as int32, whatever the table's stored dtype."""
    return tf.cast(tf.gather(table, indices), tf.int32)


class BasicTokenizer:
    """Splits a batch of strings into normalised words, in graph.

    Args:
        lowercase: bool. Lower-case the text.
        strip_accents: bool. Decompose (NFD) and drop non-spacing marks.
        special_tokens: list of str. Tokens (e.g. `"[MASK]"`) recognised
            verbatim in the raw text and kept as one word each.

    Call `split(strings)` with a 1-D string tensor; it returns a
    `tf.RaggedTensor` of words `(batch_size, (words))`, their lengths in
    characters `(batch_size, (words))`, and for each word the index of the
    special token it stands for, or -1. `split_with_offsets(strings)` also
    says where each character of each word comes from.
    """

    def __init__(self, lowercase, strip_accents, special_tokens=()):
        if len(special_tokens) > MAX_SPECIAL_TOKENS:
            raise ValueError(
                f"At most {MAX_SPECIAL_TOKENS} special tokens can be "
                f"recognised in text. Received: {len(special_tokens)}."
            )
        self.special_tokens = list(special_tokens)
        self.tables = build_tables(
            bool(lowercase), bool(strip_accents), len(self.special_tokens)
        )

    def _mark_special_tokens(self, strings):
        # One pass per token, longest first. This equals Hugging Face's
        # leftmost-longest matching whenever no special token can overlap
        # another, which holds for bracketed tokens such as BERT's `[...]`.
        strings = tf.strings.regex_replace(strings, SENTINEL_PATTERN, "\ue000")
        order = sorted(
            range(len(self.special_tokens)),
            key=lambda i: -len(self.special_tokens[i]),
        )
        for index in order:
            pattern = "".join(
                f"\\x{{{ord(c):X}}}" for c in self.special_tokens[index]
            )
            strings = tf.strings.regex_replace(
                strings, pattern, chr(SENTINEL_BASE + index)
            )
        return strings

    def split(self, strings):
        """Words, their lengths and special-token indices; see the class."""
        words, word_lengths, special_index, _ = self._split(strings, False)
        return words, word_lengths, special_index

    def split_with_offsets(self, strings):
        """`split`, plus the source of every character of every word.

        Args:
            strings: 1-D string tensor `(batch_size,)`.

        Returns:
            `(words, word_lengths, special_index, chars, starts, ends)`: the
            first three as `split`; `chars`, int32 `(batch_size, (words),
            (characters))`, the normalised code points of each word; and
            `starts`, `ends`, int64, same shape: the span `[start, end)` in
            code points of the original string that each character comes
            from. Characters of one expansion (`"İ"` lower-cased to two)
            share their source's span; a special token's one character
            spans the whole token as written; a dropped character (control
            character, stripped accent) belongs to no span, as in Hugging
            Face's alignments.
        """
        words, word_lengths, special_index, (chars, spans) = self._split(
            strings, True
        )
        starts = spans.with_flat_values(spans.flat_values[:, 0])
        ends = spans.with_flat_values(spans.flat_values[:, 1])
        return words, word_lengths, special_index, chars, starts, ends

    def _source_spans(self, code_points, row_ids, char_class):
        """`(num_code_points, 2)`: `[start, end)` in the unmarked string."""
        # Marking swapped each special token for one code point; undo that
        # shift by giving the sentinel the token's length.
        lengths = tf.ones_like(code_points.flat_values, dtype=tf.int64)
        if self.special_tokens:
            token_lengths = tf.constant(
                [len(token) for token in self.special_tokens], tf.int64
            )
            is_special = tf.equal(char_class, SPECIAL)
            lengths = tf.where(
                is_special,
                tf.gather(
                    token_lengths,
                    tf.where(
                        is_special,
                        code_points.flat_values - SENTINEL_BASE,
                        0,
                    ),
                ),
                lengths,
            )
        ends = tf.cumsum(lengths)
        # Make the running sum restart at every row.
        before_row = tf.gather(
            tf.concat([[0], ends], axis=0), code_points.row_starts()
        )
        ends -= tf.gather(before_row, row_ids)
        return tf.stack([ends - lengths, ends], axis=1)

    def _split(self, strings, with_offsets):
        tables = self.tables
        if self.special_tokens:
            strings = self._mark_special_tokens(strings)
        code_points = tf.strings.unicode_decode(
            strings, "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        num_rows = tf.shape(strings, out_type=tf.int64)[0]
        chars = code_points.flat_values

        block = _lookup(
            tables["block_index"], tf.bitwise.right_shift(chars, BLOCK_BITS)
        )
        entry = _lookup(
            tables["blocks"],
            block * BLOCK_SIZE + tf.bitwise.bitwise_and(chars, BLOCK_SIZE - 1),
        )
        # Entries are stored relative to their code point, but expansions'.
        entry += tf.where(
            tf.equal(tf.bitwise.bitwise_and(entry, EXPANDS), 0),
            tf.bitwise.left_shift(chars, VALUE_SHIFT),
            0,
        )
        char_class = tf.bitwise.bitwise_and(entry, 7)
        # Per-character values that follow each character through removal
        # and expansion: its row, and when asked, its source span.
        row_ids = code_points.value_rowids()
        carried = [row_ids]
        if with_offsets:
            carried.append(self._source_spans(code_points, row_ids, char_class))
        kept = tf.not_equal(char_class, REMOVED)
        entry = tf.boolean_mask(entry, kept)
        char_class = tf.boolean_mask(char_class, kept)
        carried = [tf.boolean_mask(c, kept) for c in carried]
        value = tf.bitwise.right_shift(entry, VALUE_SHIFT)
        expands = tf.not_equal(tf.bitwise.bitwise_and(entry, EXPANDS), 0)

        def expand():
            index = tf.where(expands, value, 0)
            lengths = tf.where(
                expands, _lookup(tables["expansion_lengths"], index), 1
            )
            source = tf.repeat(tf.range(tf.size(value)), lengths)
            ends = tf.cumsum(lengths)
            offset = tf.range(tf.size(source)) - tf.gather(
                ends - lengths, source
            )
            start = _lookup(tables["expansion_starts"], index)
            expanded = _lookup(
                tables["expansion_values"],
                tf.gather(tf.where(expands, start, 0), source)
                + tf.where(tf.gather(expands, source), offset, 0),
            )
            out = tf.where(
                tf.gather(expands, source), expanded, tf.gather(value, source)
            )
            return (
                out,
                tf.gather(char_class, source),
                [tf.gather(c, source) for c in carried],
            )

        value, char_class, carried = tf.cond(
            tf.reduce_any(expands),
            expand,
            lambda: (value, char_class, carried),
        )
        row_ids = carried[0]

        # A word starts at every non-space character that follows a space,
        # an isolated character or a row boundary, and at every isolated
        # character.
        is_space = tf.equal(char_class, WHITESPACE)
        isolated = char_class >= ISOLATED
        previous_ends_word = tf.concat(
            [
                [True],
                (is_space | isolated)[:-1]
                | tf.not_equal(row_ids[1:], row_ids[:-1]),
            ],
            axis=0,
        )
        starts = ~is_space & (isolated | previous_ends_word)
        in_word = ~is_space
        word_chars = tf.boolean_mask(value, in_word)
        word_ids = tf.cumsum(tf.cast(starts, tf.int64))
        word_ids = tf.boolean_mask(word_ids, in_word) - 1
        num_words = tf.reduce_sum(tf.cast(starts, tf.int64))
        word_lengths = tf.math.bincount(
            word_ids, minlength=num_words, maxlength=num_words, dtype=tf.int64
        )
        words_per_row = tf.math.bincount(
            tf.boolean_mask(row_ids, starts),
            minlength=num_rows,
            maxlength=num_rows,
            dtype=tf.int64,
        )

        def by_word(values):
            return tf.RaggedTensor.from_row_lengths(
                values, word_lengths, validate=False
            )

        words = tf.strings.unicode_encode(by_word(word_chars), "UTF-8")
        first_chars = tf.boolean_mask(value, starts)
        special_index = tf.where(
            tf.equal(tf.boolean_mask(char_class, starts), SPECIAL),
            first_chars - SENTINEL_BASE,
            -1,
        )

        def by_row(values):
            return tf.RaggedTensor.from_row_lengths(
                values, words_per_row, validate=False
            )

        sources = None
        if with_offsets:
            spans = tf.boolean_mask(carried[1], in_word)
            sources = (by_row(by_word(word_chars)), by_row(by_word(spans)))
        return (
            by_row(words),
            by_row(word_lengths),
            by_row(special_index),
            sources,
        )
