"""Reads an original Google BERT (TensorFlow 1) directory into a
`Checkpoint`."""

import os
import re

import tensorflow as tf

from keras_bert import files
from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.checkpoint_config import (
    backbone_config_from_checkpoint_config,
)
from keras_bert.checkpoints.checkpoint_config import read_config_file
from keras_bert.checkpoints.heads import registered_heads

CONFIG_FILE = "bert_config.json"
# Optimizer state and counters saved alongside the weights.
_IGNORED = re.compile(
    r"(/adam_m|/adam_v|/Adam|/Adam_1|/LAMB|/LAMB_1)$"
    r"|^(global_step|beta1_power|beta2_power|good_steps|bad_steps|"
    r"loss_scale)$"
)
# Whole names that do not follow the scope -> dotted-name rule; task heads
# add theirs (`CheckpointHead.google_names`, e.g. run_classifier.py's
# `output_weights`).
_BACKBONE_SPECIAL_NAMES = {
    "bert/embeddings/word_embeddings": "bert.embeddings.word_embeddings.weight",
    "bert/embeddings/token_type_embeddings": (
        "bert.embeddings.token_type_embeddings.weight"
    ),
    "bert/embeddings/position_embeddings": (
        "bert.embeddings.position_embeddings.weight"
    ),
}


def _special_names():
    names = dict(_BACKBONE_SPECIAL_NAMES)
    for head in registered_heads().values():
        names.update(head.google_names)
    return names


_SUFFIXES = {"kernel": "weight", "gamma": "weight", "beta": "bias"}


def google_to_huggingface_name(name):
    """Maps a Google variable name to `(huggingface_name, transposed)`.

    `transposed` is true for dense kernels, which Google stores `(in, out)`
    and Hugging Face `(out, in)`.

    Example:
    ```python
    google_to_huggingface_name("bert/encoder/layer_0/output/dense/kernel")
    # ("bert.encoder.layer.0.output.dense.weight", True)
    ```
    """
    special = _special_names()
    if name in special:
        return special[name], False
    scopes = name.split("/")
    last = scopes[-1]
    if scopes[-2:-1] == ["LayerNorm"] or last == "kernel":
        scopes[-1] = _SUFFIXES.get(last, last)
    dotted = ".".join(scopes)
    dotted = re.sub(r"(^|\.)layer_(\d+)(\.|$)", r"\1layer.\2\3", dotted)
    return dotted, last == "kernel"


def huggingface_to_google_name(name):
    """The inverse of `google_to_huggingface_name`.

    Example:
    ```python
    huggingface_to_google_name("bert.pooler.dense.weight")
    # ("bert/pooler/dense/kernel", True)
    ```
    """
    sources = {value: key for key, value in _special_names().items()}
    if name in sources:
        return sources[name], False
    scopes = re.sub(r"(^|\.)layer\.(\d+)(\.|$)", r"\1layer_\2\3", name).split(
        "."
    )
    if scopes[-2:-1] == ["LayerNorm"]:
        scopes[-1] = {"weight": "gamma", "bias": "beta"}[scopes[-1]]
        return "/".join(scopes), False
    if scopes[-1] == "weight":
        scopes[-1] = "kernel"
        return "/".join(scopes), True
    return "/".join(scopes), False


def find_google_checkpoint(path):
    """The TF checkpoint prefix in directory `path`, or `None`.

    Prefers the `checkpoint` state file, then `bert_model.ckpt`, then a
    single `*.index` file.
    """
    latest = tf.train.latest_checkpoint(path)
    if latest and files.exists(latest + ".index"):
        return latest
    default = files.join(path, "bert_model.ckpt")
    if files.exists(default + ".index"):
        return default
    indexes = sorted(tf.io.gfile.glob(files.join(path, "*.index")))
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    if len(indexes) > 1:
        raise ValueError(
            f"{path} holds several TensorFlow checkpoints "
            f"({', '.join(os.path.basename(i) for i in indexes)}) and no "
            "`checkpoint` file saying which is current. Pass the prefix of "
            "the one to load, e.g. "
            f"{indexes[-1][: -len('.index')]!r}."
        )
    return None


def read_google_checkpoint(path, prefix=None):
    """Reads `bert_config.json` and `bert_model.ckpt.*` from `path`.

    Variables are read with `tf.train.load_checkpoint` and renamed to their
    Hugging Face names (`bert/encoder/layer_0/attention/self/query/kernel`
    becomes `bert.encoder.layer.0.attention.self.query.weight`, transposed).
    Optimizer slots (`adam_m`, `adam_v`) and `global_step` are skipped
    without being read.

    Args:
        path: str. The directory.
        prefix: str. The TF checkpoint prefix (e.g.
            `path/model.ckpt-100000`). Defaults to the one `path` holds.

    Returns a `keras_bert.checkpoints.Checkpoint`.

    Example:
    ```python
    checkpoint = read_google_checkpoint("uncased_L-2_H-128_A-2/")
    checkpoint.source_name("bert.pooler.dense.weight")
    # "bert/pooler/dense/kernel"
    ```
    """
    config_path = files.join(path, CONFIG_FILE)
    config = read_config_file(config_path)
    backbone_config = backbone_config_from_checkpoint_config(
        config, "google", config_path
    )
    prefix = prefix or find_google_checkpoint(path)
    if prefix is None:
        raise FileNotFoundError(
            f"{path} has {CONFIG_FILE} but no TensorFlow checkpoint: expected "
            "bert_model.ckpt.index and bert_model.ckpt.data-*."
        )
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        tensors, source_names, transposed = {}, {}, set()
        for source_name in sorted(shapes):
            if _IGNORED.search(source_name):
                continue
            name, transpose = google_to_huggingface_name(source_name)
            tensor = reader.get_tensor(source_name)
            tensors[name] = tensor.T if transpose else tensor
            source_names[name] = source_name
            if transpose:
                transposed.add(name)
    except (
        tf.errors.OpError,
        ValueError,
        IndexError,
        RuntimeError,
        OSError,
    ) as error:
        raise ValueError(
            f"Could not read the TensorFlow checkpoint {prefix}: {error}. "
            "The .index or .data-* file is truncated or corrupt; download "
            "or copy the checkpoint again."
        ) from error
    return Checkpoint(
        path=path,
        format="google",
        config_path=config_path,
        backbone_config=backbone_config,
        tensors=tensors,
        source_names=source_names,
        transposed=transposed,
        name_in_source=huggingface_to_google_name,
    )
