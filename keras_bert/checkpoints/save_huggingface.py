"""Exports a model (and its vocabulary) as a Hugging Face BERT directory."""

import os

import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.checkpoints.checkpoint_config import (
    huggingface_config_from_backbone,
)
from keras_bert.checkpoints.heads import checkpoint_head
from keras_bert.checkpoints.weight_map import weight_map
from keras_bert.models.backbone_of import backbone_of
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.text.vocabulary import save_vocabulary

_SPECIAL_TOKENS = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}


def save_huggingface(model, tokenizer, path):
    """Writes `model` as a Hugging Face BERT checkpoint directory.

    Writes `config.json` and `model.safetensors` and, from the tokenizer,
    `vocab.txt` and `tokenizer_config.json` (casing and accent stripping).
    The architecture follows the model: a `BertBackbone` becomes a
    `BertModel`; a task model writes its head and its own config entries
    (as its `keras_bert.checkpoints.CheckpointHead` declares): a
    `BertMaskedLM` becomes a `BertForPreTraining` (masked-LM and NSP heads;
    the tied decoder matrix is not duplicated, as `transformers` saves it),
    a `BertClassifier` a `BertForSequenceClassification`, a
    `BertQuestionAnswerer` a `BertForQuestionAnswering`, a
    `BertMultipleChoice` a `BertForMultipleChoice`. The directory loads
    with `transformers`' `from_pretrained` with no missing or unexpected
    weights.

    Args:
        model: `BertBackbone` or a task model.
        tokenizer: `keras_bert.BertTokenizer` or `None`. Its `vocabulary`,
            `lowercase` and `strip_accents` are written; with `None` only
            the model files are written.
        path: str. The output directory; created if needed, files in it
            overwritten.

    Returns:
        The sorted list of file names in `path`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=8, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    tokenizer = keras_bert.BertTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    )
    keras_bert.checkpoints.save_huggingface(backbone, tokenizer, "tiny_bert")
    # transformers.BertModel.from_pretrained("tiny_bert") loads it.
    ```
    """
    import safetensors.numpy

    groups = weight_map(model)  # raises TypeError for other models
    vocabulary = None if tokenizer is None else _vocabulary(tokenizer)
    backbone = backbone_of(model)
    config = huggingface_config_from_backbone(backbone)
    if not isinstance(model, BertBackbone):
        head = checkpoint_head(model)
        config["architectures"] = [head.huggingface_architecture or "BertModel"]
        config.update(head.huggingface_config(model))
        if not head.uses_pooler:
            del groups["pooler"]
    tensors = {}
    for specs in groups.values():
        for spec in specs:
            tensors.update(spec.from_keras())
    if isinstance(model, BertBackbone):
        # BertModel's own names have no `bert.` prefix.
        tensors = {name[len("bert.") :]: t for name, t in tensors.items()}

    path = os.fspath(path)
    files.makedirs(path)
    files.write_json(files.join(path, "config.json"), config, sort_keys=True)
    files.write_bytes(
        files.join(path, "model.safetensors"),
        safetensors.numpy.save(tensors, metadata={"format": "pt"}),
    )
    if tokenizer is None:
        logging.warning(
            "save_huggingface: no tokenizer given, so %s has no vocab.txt; "
            "transformers can load the model but not a tokenizer from it.",
            path,
        )
    else:
        _save_tokenizer(
            tokenizer, vocabulary, path, backbone.max_sequence_length
        )
    return sorted(name.rstrip("/") for name in tf.io.gfile.listdir(path))


def _vocabulary(tokenizer):
    vocabulary = [str(token) for token in tokenizer.vocabulary]
    for token in _SPECIAL_TOKENS.values():
        if token not in vocabulary:
            raise ValueError(
                f"The tokenizer's vocabulary has no {token}, which Hugging "
                "Face's BertTokenizer needs. Add it to the vocabulary."
            )
    return vocabulary


def _save_tokenizer(tokenizer, vocabulary, path, max_length):
    save_vocabulary(vocabulary, files.join(path, "vocab.txt"))
    tokenizer_config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": bool(tokenizer.lowercase),
        "strip_accents": tokenizer.strip_accents,
        "tokenize_chinese_chars": True,
        "do_basic_tokenize": True,
        "model_max_length": max_length,
        **_SPECIAL_TOKENS,
    }
    files.write_json(
        files.join(path, "tokenizer_config.json"),
        tokenizer_config,
        sort_keys=True,
    )
