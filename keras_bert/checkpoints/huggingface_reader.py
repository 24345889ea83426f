"""Reads a Hugging Face BERT directory into a `Checkpoint`."""

import json
import os
import pickle
import re

import numpy as np

from keras_bert import files
from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.checkpoint_config import (
    backbone_config_from_checkpoint_config,
)
from keras_bert.checkpoints.checkpoint_config import read_config_file

SAFETENSORS_FILE = "model.safetensors"
PYTORCH_FILE = "pytorch_model.bin"
# Buffers PyTorch saves with the weights; they are not parameters.
_BUFFERS = re.compile(r"(^|\.)(position_ids|token_type_ids)$")
_ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")


def read_huggingface_checkpoint(path):
    """Reads `config.json` and the weights of a Hugging Face BERT directory.

    The weights come from `model.safetensors` (read with `safetensors`, no
    PyTorch needed), a sharded `model.safetensors.index.json`, or
    `pytorch_model.bin` (needs `torch`). Names may carry the `bert.` prefix
    (`BertForPreTraining`, `BertForSequenceClassification`) or not
    (`BertModel`); old checkpoints' `LayerNorm.gamma`/`beta` are accepted.
    Float16 and bfloat16 tensors are read as float32.

    Args:
        path: str. The directory.

    Returns a `keras_bert.checkpoints.Checkpoint`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    keras_bert.checkpoints.save_huggingface(backbone, None, "tiny_bert")
    checkpoint = read_huggingface_checkpoint("tiny_bert")
    checkpoint.backbone_config["num_layers"]  # 2
    ```
    """
    config_path = files.join(path, "config.json")
    config = read_config_file(config_path)
    backbone_config = backbone_config_from_checkpoint_config(
        config, "huggingface", config_path
    )
    raw = _read_tensors(path)
    has_prefix = any(name.startswith("bert.") for name in raw)
    tensors, source_names = {}, {}
    for source_name, tensor in raw.items():
        if _BUFFERS.search(source_name):
            continue
        name = source_name
        if not has_prefix and name.startswith(_ENCODER_PREFIXES):
            name = "bert." + name
        name = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", name)
        name = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)
        tensors[name] = tensor
        source_names[name] = source_name

    def name_in_source(name):
        if not has_prefix and name.startswith("bert."):
            name = name[len("bert.") :]
        return name, False

    return Checkpoint(
        path=path,
        format="huggingface",
        config_path=config_path,
        backbone_config=backbone_config,
        tensors=tensors,
        source_names=source_names,
        transposed=set(),
        name_in_source=name_in_source,
    )


def _read_tensors(path):
    safetensors_path = files.join(path, SAFETENSORS_FILE)
    index_path = safetensors_path + ".index.json"
    pytorch_path = files.join(path, PYTORCH_FILE)
    if files.exists(safetensors_path):
        return _read_safetensors(safetensors_path)
    if files.exists(index_path):
        tensors = {}
        for shard in _shards(index_path):
            tensors.update(_read_safetensors(files.join(path, shard)))
        return tensors
    if files.exists(pytorch_path):
        return _read_pytorch(pytorch_path)
    if files.exists(pytorch_path + ".index.json"):
        tensors = {}
        for shard in _shards(pytorch_path + ".index.json"):
            tensors.update(_read_pytorch(files.join(path, shard)))
        return tensors
    raise FileNotFoundError(
        f"{path} has a config.json but no weights: expected "
        f"{SAFETENSORS_FILE} (or a sharded {SAFETENSORS_FILE}.index.json) or "
        f"{PYTORCH_FILE}. TensorFlow (tf_model.h5) and Flax weights are not "
        "read; convert them with `transformers` first."
    )


def _shards(index_path):
    return sorted(set(files.read_json(index_path)["weight_map"].values()))


def _read_safetensors(file_path):
    """Every tensor of a safetensors file (a remote one through a local
    copy: `safe_open` memory-maps a local file)."""
    from safetensors import SafetensorError
    from safetensors import safe_open

    with files.local_copy(file_path) as local_path:
        try:
            tensors = {}
            with safe_open(local_path, framework="numpy") as file:
                for name in file.keys():
                    if file.get_slice(name).get_dtype() == "BF16":
                        tensors[name] = _read_bfloat16(local_path, name)
                    else:
                        tensors[name] = file.get_tensor(name)
            return tensors
        except (SafetensorError, OSError, ValueError, TypeError) as error:
            size = os.path.getsize(local_path)  # gfile-exempt: a local copy
            raise ValueError(
                f"Could not read {file_path} ({size} bytes) as a safetensors "
                f"file: {error}. The file is truncated or corrupt (an "
                "interrupted download or copy is the usual cause); download "
                "or copy it again."
            ) from error


def _read_bfloat16(file_path, name):
    """Reads a bfloat16 tensor as float32 (NumPy has no bfloat16)."""
    with open(file_path, "rb") as file:  # gfile-exempt: a local copy
        header_size = int.from_bytes(file.read(8), "little")
        entry = json.loads(file.read(header_size))[name]
        start, end = entry["data_offsets"]
        file.seek(8 + header_size + start)
        raw = np.frombuffer(file.read(end - start), dtype="<u2")
    # bfloat16 is the upper half of a float32.
    return (raw.astype("<u4") << 16).view("<f4").reshape(entry["shape"])


def _read_pytorch(file_path):
    try:
        import torch
    except ImportError as error:
        raise ImportError(
            f"Reading {file_path} needs PyTorch (`pip install torch`). "
            "Alternatively convert it to model.safetensors, which keras_bert "
            "reads without PyTorch."
        ) from error
    with files.local_copy(file_path) as local_path:
        try:
            state = torch.load(
                local_path, map_location="cpu", weights_only=True
            )
        except pickle.UnpicklingError as error:
            if "weights_only" not in str(error).replace(" ", "_"):
                raise _corrupt_pytorch_file(file_path, error) from error
            raise ValueError(
                f"{file_path} holds pickled Python objects besides tensors "
                "(e.g. a whole model or custom classes), which keras_bert "
                "does not unpickle: loading them can run arbitrary code. "
                "Save the weights alone (`model.save_pretrained(directory)` "
                "in transformers writes model.safetensors) and load that. "
                f"PyTorch said: {str(error).splitlines()[0]}"
            ) from error
        except Exception as error:  # torch raises many types for bad files
            raise _corrupt_pytorch_file(file_path, error) from error
    return {
        name: tensor.detach().to(torch.float32).numpy()
        if tensor.is_floating_point()
        else np.asarray(tensor.numpy())
        for name, tensor in state.items()
    }


def _corrupt_pytorch_file(file_path, error):
    return ValueError(
        f"Could not read {file_path} as a PyTorch state dict: {error}. "
        "The file is truncated or corrupt; download or copy it again."
    )
