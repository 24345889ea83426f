"""The tokenizer of a keras-hub BERT preset, as `BertTokenizer` arguments."""

import os

from keras_bert import files
from keras_bert.checkpoints.checkpoint_config import read_config_file
from keras_bert.checkpoints.keras_hub_files import TOKENIZER_FILE
from keras_bert.checkpoints.keras_hub_files import VOCABULARY_FILE
from keras_bert.checkpoints.keras_hub_files import is_keras_hub_config
from keras_bert.checkpoints.keras_hub_files import is_keras_hub_preset
from keras_bert.checkpoints.keras_hub_files import resolve_kaggle_handle


def keras_hub_tokenizer_arguments(path):
    """The vocabulary and settings of a keras-hub preset's tokenizer.

    Reads `tokenizer.json` (keras-hub's `BertTokenizer` config) and
    `assets/tokenizer/vocabulary.txt`; a `kaggle://` handle fetches those
    two files through keras-hub.

    Args:
        path: str. A preset directory, a file in it, or a `kaggle://`
            handle.

    Returns `(vocabulary, arguments)`, the `keras_bert.BertTokenizer`
    arguments that tokenize as keras-hub's tokenizer does (`lowercase`,
    `strip_accents`, `special_tokens_in_strings`, `unk_token`), or `None`
    when `path` is no keras-hub preset.

    Example:
    ```python
    keras_hub_tokenizer_arguments("tiny_bert")  # None: Hugging Face's
    ```
    """
    path = resolve_kaggle_handle(path, names=(TOKENIZER_FILE, VOCABULARY_FILE))
    directory = path if files.isdir(path) else os.path.dirname(path)
    tokenizer_path = files.join(directory, TOKENIZER_FILE)
    config = None
    if files.exists(tokenizer_path):
        config = read_config_file(tokenizer_path)
        if not is_keras_hub_config(config):
            return None  # Hugging Face's tokenizer.json
    elif not is_keras_hub_preset(directory):
        return None
    else:
        raise FileNotFoundError(
            f"{directory} is a keras-hub preset without a tokenizer (no "
            f"{TOKENIZER_FILE}). Save one into it with "
            "`keras_hub.models.BertTokenizer(...).save_to_preset(directory)`"
            ", or pass the model's vocab.txt to keras_bert.BertTokenizer."
        )
    name = config.get("registered_name")
    arguments = config["config"]
    if name not in ("keras_hub>BertTokenizer", "keras_nlp>BertTokenizer"):
        raise ValueError(
            f"{tokenizer_path} is the config of a {name!r}, not of keras-hub's "
            "BertTokenizer (WordPiece); keras_bert's BertTokenizer reads BERT "
            "vocabularies only. Load this one with "
            f"`keras_hub.tokenizers.Tokenizer.from_preset({directory!r})`."
        )
    for key, expected in (("suffix_indicator", "##"), ("split", True)):
        if arguments.get(key, expected) != expected:
            raise ValueError(
                f"{tokenizer_path}: {key}={arguments[key]!r}; keras_bert's "
                f"BertTokenizer implements {key}={expected!r} only (BERT's "
                "WordPiece)."
            )
    vocabulary = arguments.get("vocabulary")
    if not isinstance(vocabulary, list):
        vocabulary_path = files.join(directory, VOCABULARY_FILE)
        if not files.exists(vocabulary_path):
            raise FileNotFoundError(
                f"{directory} has a keras-hub {TOKENIZER_FILE} but no "
                f"{VOCABULARY_FILE}, where keras-hub keeps the tokenizer's "
                "vocabulary. Copy the preset again completely (with its "
                "assets/ folder)."
            )
        from keras_bert.text.vocabulary import load_vocabulary

        vocabulary = load_vocabulary(vocabulary_path)
    return vocabulary, {
        # keras-hub's defaults when the config omits them.
        "lowercase": bool(arguments.get("lowercase", False)),
        "strip_accents": bool(arguments.get("strip_accents", False)),
        "special_tokens_in_strings": bool(
            arguments.get("special_tokens_in_strings", False)
        ),
        "unk_token": arguments.get("oov_token") or "[UNK]",
    }
