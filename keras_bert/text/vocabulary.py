"""Reading, writing, checking and learning WordPiece vocabularies."""

import os

from absl import logging

from keras_bert import files

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def load_vocabulary(path):
    """Reads a `vocab.txt`: one token per line, the line number is the id.

    Trailing whitespace (including `\\r`) is trimmed, as Hugging Face's Rust
    `WordPiece.from_file` does; a final empty line is ignored.
    """
    lines = files.read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip() for line in lines]


def save_vocabulary(vocabulary, path):
    """Writes `vocabulary` (list of str) to `path`, one token per line."""
    vocabulary = check_vocabulary(vocabulary)
    files.write_text(path, "".join(token + "\n" for token in vocabulary))


def check_vocabulary(vocabulary):
    """Returns `vocabulary` as a list of str after checking it is usable."""
    vocabulary = [
        t.decode("utf-8") if isinstance(t, bytes) else t for t in vocabulary
    ]
    if not vocabulary:
        raise ValueError(
            "The vocabulary is empty. Pass a list of tokens or the path of a "
            "vocab.txt with one token per line."
        )
    seen = {}
    for index, token in enumerate(vocabulary):
        if not isinstance(token, str) or not token or token != token.strip():
            raise ValueError(
                f"Vocabulary entry {index} is {token!r}: tokens must be "
                "non-empty strings without surrounding whitespace. Remove "
                "or fix that line of the vocabulary."
            )
        if token in seen:
            raise ValueError(
                f"Token {token!r} appears twice in the vocabulary (ids "
                f"{seen[token]} and {index}). Each token needs one id: remove "
                "the duplicate line."
            )
        seen[token] = index
    return vocabulary


def looks_cased(vocabulary):
    """Guesses whether a vocabulary was built from text that kept capitals."""
    words = [t for t in vocabulary if t.isalpha()]
    capitalised = sum(1 for t in words if t != t.lower())
    return capitalised > 0.05 * max(len(words), 1)


def upper_case_only(vocabulary):
    """Whether the letters of `vocabulary`'s tokens (special `[...]` tokens
    aside) are upper case only, with at least one: a vocabulary that
    lowercasing would leave without a single letter to match (an
    amino-acid vocabulary such as AntiBERTy's, for instance)."""
    letters = {
        character
        for token in vocabulary
        if not (token.startswith("[") and token.endswith("]"))
        for character in token
        if character.lower() != character.upper()
    }
    return bool(letters) and all(c.isupper() for c in letters)


def build_vocabulary(
    texts,
    vocabulary_size,
    lowercase=True,
    strip_accents=None,
    special_tokens=None,
    reserved_tokens=0,
    batch_size=1024,
):
    """Learns a WordPiece vocabulary from a corpus.

    The text is split into words by `BertTokenizer`'s own normaliser and
    pre-tokenizer (so the vocabulary sees exactly what tokenization will),
    then tensorflow-text's WordPiece learner (the library behind
    `bert_vocab_from_dataset`) learns the pieces from the word counts.

    The result follows BERT's layout: `[PAD]`, `reserved_tokens`
    `[unusedN]` slots, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`, then the
    learned tokens (every single character seen, whole words and `##`
    pieces).

    Args:
        texts: iterable of str, or a `tf.data.Dataset` of strings.
        vocabulary_size: int. Target size; the learner may stop a little
            short of it.
        lowercase: bool. As in `BertTokenizer`. Defaults to `True`.
        strip_accents: bool or None. As in `BertTokenizer`.
        special_tokens: list of str. Defaults to BERT's five.
        reserved_tokens: int. `[unusedN]` slots after `[PAD]`. Defaults to
            `0`.
        batch_size: int. Strings per tokenization batch.

    Returns:
        The vocabulary, a list of str.
    """
    import collections

    import numpy as np
    import tensorflow as tf
    from tensorflow_text.tools.wordpiece_vocab import (
        wordpiece_tokenizer_learner_lib as learner,
    )

    from keras_bert.text.basic_tokenizer import BasicTokenizer

    if not isinstance(vocabulary_size, int) or vocabulary_size < 8:
        raise ValueError(
            "Received an invalid value for argument `vocabulary_size`, "
            "expected an integer of at least 8. Received: "
            f"vocabulary_size={vocabulary_size!r}"
        )
    special_tokens = list(special_tokens or SPECIAL_TOKENS)
    if "[PAD]" in special_tokens:
        head = ["[PAD]"] + [f"[unused{i}]" for i in range(reserved_tokens)]
        head += [t for t in special_tokens if t != "[PAD]"]
    else:
        head = [f"[unused{i}]" for i in range(reserved_tokens)]
        head += special_tokens
    do_strip = lowercase if strip_accents is None else strip_accents
    basic = BasicTokenizer(lowercase=lowercase, strip_accents=bool(do_strip))
    split = tf.function(
        lambda strings: basic.split(strings)[0].flat_values,
        input_signature=[tf.TensorSpec([None], tf.string)],
    )

    if isinstance(texts, tf.data.Dataset):
        batches = texts.batch(batch_size).as_numpy_iterator()
    else:
        texts = list(texts)
        batches = (
            texts[start : start + batch_size]
            for start in range(0, len(texts), batch_size)
        )
    # Count words on the exact split tokenization will use.
    counts = collections.Counter()
    for batch in batches:
        words = split(tf.constant(np.asarray(batch, dtype=object)))
        counts.update(words.numpy().tolist())
    counts = {word.decode("utf-8"): n for word, n in counts.items()}
    if not counts:
        raise ValueError(
            "The corpus has no words to learn from. Pass non-empty texts."
        )
    learned = learner.learn(
        counts,
        vocab_size=vocabulary_size,
        reserved_tokens=head,
        max_token_length=100,
        max_unique_chars=5000,
    )
    vocabulary = head + [t for t in learned if t not in head]
    logging.info("Learned a vocabulary of %d tokens.", len(vocabulary))
    return check_vocabulary(vocabulary)


def read_casing(directory, vocabulary, name=None):
    """The casing settings of a checkpoint directory, as tokenizer kwargs,
    and where they come from (for the log).

    Hugging Face's `tokenizer.json` normaliser or `tokenizer_config.json`;
    else, without either, a vocabulary whose letters are upper case only
    is cased (lowercased text would match none of its letters); else
    "uncased"/"cased" in `name` (Google's naming; defaults to the
    directory's name, which for a Hub snapshot is a commit hash, hence
    the repo's name is passed); else a guess from the vocabulary
    (`looks_cased`: cased when over 5% of its words hold capitals).

    Returns:
        `(casing, source)`: a dict of `BertTokenizer` arguments
        (`lowercase`, maybe `strip_accents`) and a phrase saying what
        decided it.
    """
    tokenizer_json = files.join(directory, "tokenizer.json")
    if files.exists(tokenizer_json):
        normalizer = files.read_json(tokenizer_json).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            casing = dict(
                lowercase=bool(normalizer.get("lowercase", True)),
                strip_accents=normalizer.get("strip_accents"),
            )
            return casing, "tokenizer.json's normalizer"
    config_json = files.join(directory, "tokenizer_config.json")
    if files.exists(config_json):
        config = files.read_json(config_json)
        casing = dict(lowercase=bool(config.get("do_lower_case", True)))
        if config.get("strip_accents") is not None:
            casing["strip_accents"] = bool(config["strip_accents"])
        return casing, "tokenizer_config.json"
    if upper_case_only(vocabulary):
        return dict(lowercase=False), (
            "no tokenizer config; the vocabulary's letters are upper case "
            "only, so text keeps its case"
        )
    if name is None:
        name = os.path.basename(os.path.normpath(directory))
    for word, lowercase in (("uncased", True), ("cased", False)):
        if word in name.lower():
            source = f"no tokenizer config; {word!r} in {name!r}"
            return dict(lowercase=lowercase), source
    cased = looks_cased(vocabulary)
    return dict(lowercase=not cased), (
        "no tokenizer config; "
        + ("over" if cased else "at most")
        + " 5% of the vocabulary's words hold capitals"
    )
