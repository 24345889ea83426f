"""Detects a checkpoint directory's format and reads it."""

import os

import tensorflow as tf

from keras_bert import files
from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.checkpoint_config import (
    backbone_config_from_checkpoint_config,
)
from keras_bert.checkpoints.checkpoint_config import read_config_file
from keras_bert.checkpoints.google_reader import CONFIG_FILE as GOOGLE_CONFIG
from keras_bert.checkpoints.google_reader import find_google_checkpoint
from keras_bert.checkpoints.google_reader import read_google_checkpoint
from keras_bert.checkpoints.hub import preset_hint
from keras_bert.checkpoints.hub import resolve_checkpoint
from keras_bert.checkpoints.huggingface_reader import (
    read_huggingface_checkpoint,
)
from keras_bert.checkpoints.keras_hub_files import CONFIG_FILE
from keras_bert.checkpoints.keras_hub_files import is_keras_hub_preset
from keras_bert.checkpoints.keras_hub_files import resolve_kaggle_handle
from keras_bert.checkpoints.keras_hub_reader import read_keras_hub_config
from keras_bert.checkpoints.keras_hub_reader import read_keras_hub_preset


def read_checkpoint(path):
    """Reads a Hugging Face or original Google BERT checkpoint directory.

    The format is detected from the files: `config.json` with
    `model.safetensors` or `pytorch_model.bin` is Hugging Face;
    `bert_config.json` with `bert_model.ckpt.index` is Google's; a
    `config.json` that is a serialised keras-hub `BertBackbone` (with
    `model.weights.h5`) is a keras-hub preset, and a `kaggle://` handle is
    fetched through keras-hub first (see
    `keras_bert.checkpoints.keras_hub_reader`). A Hugging
    Face Hub id (`google-bert/bert-base-uncased`, `hf://org/name@revision`)
    or a trained preset name (`bert_base_en_uncased`) is fetched into
    `huggingface_hub`'s cache first (config and weights only); see
    `keras_bert.checkpoints.hub`.

    Args:
        path: str or `os.PathLike`. The checkpoint directory, or the prefix
            of a Google checkpoint in it (`dir/bert_model.ckpt`, as Google's
            scripts take `--init_checkpoint`), or a Hub id.

    Returns a `keras_bert.checkpoints.Checkpoint`: the config translated
    into `BertBackbone` arguments and every tensor under its Hugging Face
    name.

    Raises:
        FileNotFoundError: if `path` is not a directory or holds neither
            format.
        ValueError: if a file is corrupt or the config describes something
            `BertBackbone` does not implement.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    keras_bert.checkpoints.save_huggingface(backbone, None, "tiny_bert")
    checkpoint = keras_bert.checkpoints.read_checkpoint("tiny_bert")
    checkpoint.format  # "huggingface"
    ```
    """
    path = os.fspath(resolve_checkpoint(path, tokenizer=False))
    path = resolve_kaggle_handle(path)
    if not files.isdir(path) and files.exists(path + ".index"):
        return read_google_checkpoint(os.path.dirname(path), prefix=path)
    _check_directory(path)
    if files.exists(files.join(path, CONFIG_FILE)):
        if is_keras_hub_preset(path):
            return read_keras_hub_preset(path)
        return read_huggingface_checkpoint(path)
    if files.exists(files.join(path, GOOGLE_CONFIG)):
        return read_google_checkpoint(path)
    _no_checkpoint(path)


def read_checkpoint_config(path):
    """Reads a checkpoint's architecture only: its config, no weights.

    What `from_preset(..., load_weights=False)` builds: the sources are
    those of `read_checkpoint`, but only the config file is read (a Hub id
    or `kaggle://` handle fetches the config, not the weights; the weight
    files need not exist). A keras-hub preset's architecture is read
    through keras-hub, as `read_keras_hub_preset` reads it.

    Args:
        path: str or `os.PathLike`. What `read_checkpoint` takes.

    Returns a `keras_bert.checkpoints.Checkpoint` without tensors.

    Example:
    ```python
    keras_bert.checkpoints.save_huggingface(
        keras_bert.BertBackbone.from_preset("bert_tiny"), None, "tiny_bert"
    )
    checkpoint = read_checkpoint_config("tiny_bert")
    checkpoint.backbone_config["num_layers"], checkpoint.tensors  # 2, {}
    ```
    """
    path = os.fspath(
        resolve_checkpoint(path, weights=False, tokenizer=False, config=True)
    )
    path = resolve_kaggle_handle(path, names=())
    if not files.isdir(path) and files.exists(path + ".index"):
        path = os.path.dirname(path)  # a Google checkpoint's prefix
    _check_directory(path)
    if files.exists(files.join(path, CONFIG_FILE)):
        if is_keras_hub_preset(path):
            backbone_config, config_path = read_keras_hub_config(path)
            return _config_only(path, "keras_hub", config_path, backbone_config)
        source, config_path = "huggingface", files.join(path, CONFIG_FILE)
    elif files.exists(files.join(path, GOOGLE_CONFIG)):
        source, config_path = "google", files.join(path, GOOGLE_CONFIG)
    else:
        _no_checkpoint(path)
    backbone_config = backbone_config_from_checkpoint_config(
        read_config_file(config_path), source, config_path
    )
    return _config_only(path, source, config_path, backbone_config)


def _config_only(path, source, config_path, backbone_config):
    return Checkpoint(
        path=path,
        format=source,
        config_path=config_path,
        backbone_config=backbone_config,
        tensors={},
        source_names={},
        transposed=set(),
        name_in_source=lambda name: (name, False),
    )


def _check_directory(path):
    if not files.isdir(path):
        what = "is not a directory" if files.exists(path) else "does not exist"
        raise FileNotFoundError(
            f"Checkpoint path {path!r} {what}. Pass the directory "
            "that holds config.json (Hugging Face) or bert_config.json "
            "(Google), or a Hugging Face Hub id (org/name, or "
            f"hf://name).{preset_hint(path)}"
        )


def _no_checkpoint(path):
    found = sorted(tf.io.gfile.listdir(path))[:10]
    hint = ""
    if find_google_checkpoint(path):
        hint = (
            f" It holds a TensorFlow checkpoint but no {GOOGLE_CONFIG}; put "
            "the config released with the weights next to it."
        )
    raise FileNotFoundError(
        f"{path} is not a BERT checkpoint directory: it has neither "
        f"config.json (Hugging Face) nor {GOOGLE_CONFIG} (Google). Found: "
        f"{found}.{hint}"
    )
