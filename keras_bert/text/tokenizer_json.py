"""The WordPiece vocabulary of a Hugging Face `tokenizer.json`.

`transformers` 5 saves a BERT tokenizer as `tokenizer.json` (the Rust
`tokenizers` library's whole pipeline) and `tokenizer_config.json`, without
the `vocab.txt` older versions wrote. Its `model` holds the vocabulary as
`{token: id}` with WordPiece's settings:

    {"normalizer": {"type": "BertNormalizer", "lowercase": true, ...},
     "pre_tokenizer": {"type": "BertPreTokenizer"},
     "model": {"type": "WordPiece", "unk_token": "[UNK]",
               "continuing_subword_prefix": "##",
               "max_input_chars_per_word": 100,
               "vocab": {"[PAD]": 0, "[UNK]": 1, ...}}}

`read_wordpiece` turns that into `BertTokenizer`'s vocabulary (a list
indexed by id) and arguments. The normaliser's casing is
`vocabulary.read_casing`'s business, which reads it for any checkpoint.
"""

from absl import logging

from keras_bert import files


class NotWordPieceError(ValueError):
    """A `tokenizer.json` whose model is no WordPiece vocabulary (BPE,
    Unigram, ...): no `BertTokenizer` can tokenize as it does."""


def read_wordpiece(path):
    """The WordPiece vocabulary and settings of a `tokenizer.json`.

    Args:
        path: str. A Hugging Face `tokenizer.json` (any `tf.io.gfile`
            path).

    Returns:
        `(vocabulary, arguments)`: the tokens as a list indexed by id, and
        the `BertTokenizer` arguments the file sets (`unk_token`,
        `max_input_chars_per_word`).

    Raises:
        NotWordPieceError: the model is not WordPiece (BPE, Unigram, ...).
        ValueError: its ids are not exactly `0 ... n - 1`, or its pieces
            continue a word with another prefix than `##`.

    Example:
    ```python
    keras_bert.files.write_json("ram://bert/tokenizer.json", {"model": {
        "type": "WordPiece", "continuing_subword_prefix": "##",
        "vocab": {"[UNK]": 1, "[PAD]": 0, "hello": 2},
    }})
    read_wordpiece("ram://bert/tokenizer.json")
    # (["[PAD]", "[UNK]", "hello"], {})
    ```
    """
    config = files.read_json(path)
    model = config.get("model") or {}
    # Files of old `tokenizers` versions may lack the type: only WordPiece
    # has `max_input_chars_per_word`.
    model_type = model.get(
        "type", "WordPiece" if "max_input_chars_per_word" in model else None
    )
    if model_type != "WordPiece":
        raise NotWordPieceError(
            f"{path} holds a {model_type} tokenizer, not a WordPiece one: "
            "keras_bert's BertTokenizer needs a BERT WordPiece vocabulary "
            "(a vocab.txt, or a tokenizer.json whose model has type "
            "'WordPiece'). Tokenize this model's text with its own "
            "tokenizer (transformers.AutoTokenizer) and pass token ids."
        )
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise ValueError(
            f"{path}: continuing_subword_prefix={prefix!r}; keras_bert's "
            "BertTokenizer marks a piece that continues a word with '##' "
            "only (BERT's WordPiece). Use the model's own tokenizer "
            "(transformers.AutoTokenizer) and pass token ids."
        )
    vocabulary = _tokens_by_id(model.get("vocab"), path)
    arguments = {}
    if model.get("unk_token") is not None:
        arguments["unk_token"] = model["unk_token"]
    if model.get("max_input_chars_per_word") is not None:
        arguments["max_input_chars_per_word"] = model[
            "max_input_chars_per_word"
        ]
    _warn_of_other_pipelines(config, path)
    return vocabulary, arguments


def _tokens_by_id(vocab, path):
    """The tokens of a `{token: id}` map as a list indexed by id."""
    if not isinstance(vocab, dict) or not vocab:
        raise ValueError(
            f"{path}: the WordPiece model has no vocabulary (model.vocab "
            f"is {type(vocab).__name__}, not a map of token to id). Save "
            "the tokenizer again with transformers' save_pretrained."
        )
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < len(vocab)
        ):
            raise ValueError(
                f"{path}: token {token!r} has id {index!r}; the "
                f"{len(vocab)} ids of a vocabulary must be 0 to "
                f"{len(vocab) - 1}, one per token. Repair model.vocab or "
                "save the tokenizer again with transformers' "
                "save_pretrained."
            )
        if tokens[index] is not None:
            raise ValueError(
                f"{path}: tokens {tokens[index]!r} and {token!r} both have "
                f"id {index}; the {len(vocab)} ids of a vocabulary must be "
                f"0 to {len(vocab) - 1}, one per token. Repair model.vocab "
                "or save the tokenizer again with transformers' "
                "save_pretrained."
            )
        tokens[index] = token
    return tokens


def _warn_of_other_pipelines(config, path):
    """Logs where the file's normaliser or pre-tokenizer is not BERT's,
    which `BertTokenizer` always applies: ids may then differ."""
    differences = []
    normalizer = config.get("normalizer") or {}
    if normalizer.get("type") != "BertNormalizer":
        differences.append(f"normalizer {normalizer.get('type')}")
    else:
        for key in ("clean_text", "handle_chinese_chars"):
            if not normalizer.get(key, True):
                differences.append(f"normalizer {key}=False")
    pre_tokenizer = config.get("pre_tokenizer") or {}
    if pre_tokenizer.get("type") != "BertPreTokenizer":
        differences.append(f"pre_tokenizer {pre_tokenizer.get('type')}")
    if differences:
        logging.warning(
            "%s: %s, where keras_bert's BertTokenizer normalises and splits "
            "text as BERT does (BertNormalizer with clean_text and "
            "handle_chinese_chars, BertPreTokenizer). Its ids may differ "
            "from this tokenizer's on some text.",
            path,
            ", ".join(differences),
        )
