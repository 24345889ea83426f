"""More text for the teacher to label: distillation's data augmentation.

A student distilled on the teacher's outputs alone can learn from any
text, labelled or not. On a small task the train file is soon learnt, and
variants of its texts, labelled by the teacher, carry more of what the
teacher knows (TinyBERT, Jiao et al. 2020, section 3.3). TinyBERT
replaces words with BERT's masked-LM guesses and GloVe neighbours; a
fine-tuned teacher ships with neither, so a variant here is one of three
word-level edits of a text, chosen at random: a crop (a run of at least
half its words, like SST's phrases), deleted words, or words replaced by
words drawn from all the texts.
"""

import numpy as np

EDITS = ("crop", "delete", "replace")


def augment_texts(texts, copies, seed=0, word_rate=0.2):
    """`copies` edited variants of every text, for the teacher to label.

    Each variant is made by one edit drawn at random (see the module
    docstring): a crop to a run of at least half the words; deletion
    of each word with probability `word_rate` (at least one word is
    kept); replacement of each word, with probability `word_rate`, by a
    word drawn uniformly from all of `texts`' words. Words are split at
    whitespace and joined with one space. A text of one word gives no
    variants, and a variant equal to its text is dropped.

    Args:
        texts: list (or array) of str, or a tuple of two lists for text
            pairs (each side edited on its own; a pair is dropped only
            when neither side changed).
        copies: int >= 0. Variants made of each text (or pair).
        seed: int. The draws' seed: the same arguments give the same
            variants.
        word_rate: float in (0, 1). How many words deletion and
            replacement touch. Defaults to `0.2`.

    Returns:
        A list of str (a tuple of two lists for pairs): the variants,
        text by text (the variants of `texts[0]` first). Up to
        `copies * len(texts)` of them.

    Example:
    ```python
    augment_texts(["a gripping , funny film", "dull"], copies=2, seed=0)
    # ['a film film funny film', 'a gripping funny']
    ```
    """
    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 0:
        raise ValueError(
            "Received an invalid value for argument `copies`: expected an "
            f"int >= 0 (e.g. 4). Received: copies={copies!r}"
        )
    if not 0.0 < word_rate < 1.0:
        raise ValueError(
            "Received an invalid value for argument `word_rate`: expected "
            f"a number between 0 and 1 (e.g. 0.2). Received: {word_rate!r}"
        )
    pairs = isinstance(texts, tuple)
    sides = [list(side) for side in (texts if pairs else (texts,))]
    words = [[str(text).split() for text in side] for side in sides]
    vocabulary = sorted({w for side in words for text in side for w in text})
    rng = np.random.default_rng(seed)
    variants = [[] for _ in sides]
    for row in range(len(sides[0])):
        for _ in range(copies):
            edited = [
                _edit(side[row], vocabulary, rng, word_rate) for side in words
            ]
            if any(new != side[row] for new, side in zip(edited, words)):
                for kept, new in zip(variants, edited):
                    kept.append(" ".join(new))
    return tuple(variants) if pairs else variants[0]


def _edit(words, vocabulary, rng, word_rate):
    """One random edit of a text's words (unchanged: under two words)."""
    if len(words) < 2:
        return words
    edit = EDITS[rng.integers(len(EDITS))]
    if edit == "crop":
        length = int(rng.integers(max(1, len(words) // 2), len(words)))
        start = int(rng.integers(0, len(words) - length + 1))
        return words[start : start + length]
    touched = rng.random(len(words)) < word_rate
    if edit == "delete":
        kept = [word for word, drop in zip(words, touched) if not drop]
        return kept or [words[int(rng.integers(len(words)))]]
    drawn = rng.integers(len(vocabulary), size=len(words))
    return [
        vocabulary[index] if swap else word
        for word, swap, index in zip(words, touched, drawn)
    ]
