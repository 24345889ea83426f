"""Reads a keras-hub BERT preset directory into a `Checkpoint`.

keras-hub itself (imported only here) builds its model from the preset and
loads the weights; its variables are then renamed to Hugging Face tensors
through `keras_bert.checkpoints.keras_hub_weights`. The activation and the
LayerNorm epsilon are those keras-hub's layers run: its `BertBackbone`
uses the tanh approximation of GELU, so the loaded backbone has
`activation="gelu_approximate"`. The preset's files are described in
`keras_bert.checkpoints.keras_hub_files`.
"""

import math
import os

import keras
import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.checkpoint_config import read_config_file
from keras_bert.checkpoints.keras_hub_files import BERT_BACKBONES
from keras_bert.checkpoints.keras_hub_files import CONFIG_FILE
from keras_bert.checkpoints.keras_hub_files import SHARDED_WEIGHTS_FILE
from keras_bert.checkpoints.keras_hub_files import TASK_FILE
from keras_bert.checkpoints.keras_hub_files import TASK_WEIGHTS_FILE
from keras_bert.checkpoints.keras_hub_files import WEIGHTS_FILE
from keras_bert.checkpoints.keras_hub_files import import_keras_hub
from keras_bert.checkpoints.keras_hub_weights import CLASSIFIER
from keras_bert.checkpoints.keras_hub_weights import keras_hub_table
from keras_bert.checkpoints.keras_hub_weights import to_huggingface
from keras_bert.checkpoints.keras_hub_weights import variables_by_path


def read_keras_hub_preset(path):
    """Reads a keras-hub BERT preset directory.

    The backbone comes from `config.json` and `model.weights.h5`; a
    `BertTextClassifier` task preset (`task.json`, `task.weights.h5`) adds
    its classifier (`classifier.*`). A `BertMaskedLM` task's head is not
    read: keras-hub's masked-LM head normalises with epsilon 1e-5 and an
    exact GELU while keras_bert's follows the backbone, so only its
    backbone is loaded (a warning says so).

    Args:
        path: str. The preset directory (local or any `tf.io.gfile` path).

    Returns a `keras_bert.checkpoints.Checkpoint` with `format`
    `"keras_hub"` and `activation="gelu_approximate"` in its backbone
    config (what keras-hub runs).

    Raises:
        ValueError: if the preset is not of a keras-hub BERT backbone, or
            its files disagree with its config.
        FileNotFoundError: if `model.weights.h5` is missing.
        ImportError: if keras-hub is not installed.

    Example:
    ```python
    import keras_hub
    keras_hub.models.BertBackbone(
        vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=4,
        intermediate_dim=8, max_sequence_length=8,
    ).save_to_preset("tiny_preset")
    checkpoint = read_keras_hub_preset("tiny_preset")
    checkpoint.backbone_config["activation"]  # "gelu_approximate"
    ```
    """
    path = os.fspath(path)
    config_path = files.join(path, CONFIG_FILE)
    config = read_config_file(config_path)
    _check_backbone_class(config, config_path, path)
    weights_path = files.join(path, WEIGHTS_FILE)
    if not files.exists(weights_path):
        raise FileNotFoundError(_missing_weights(path))
    keras_hub = import_keras_hub(f"Reading the keras-hub preset {path}")

    task_config, heads = _task_config(path, keras_hub)
    if task_config is None:
        backbone = model = _deserialize(_float32(config), config_path)
    else:
        # The task's own backbone config may be stale: config.json's is
        # the one saved with model.weights.h5.
        task_config["config"]["backbone"] = _float32(config)
        task_config["config"]["preprocessor"] = None
        model = _deserialize(task_config, files.join(path, TASK_FILE))
        backbone = model.backbone
        task_weights_path = files.join(path, TASK_WEIGHTS_FILE)
        if not files.exists(task_weights_path):
            raise FileNotFoundError(
                f"{path} has a {TASK_FILE} for a {type(model).__name__} but "
                f"no {TASK_WEIGHTS_FILE} with its head. Copy the preset "
                f"again completely, or delete {TASK_FILE} to read the "
                "backbone alone."
            )
        _load(
            model.load_task_weights,
            task_weights_path,
            len(model.weights) - len(backbone.weights),
        )
    if not isinstance(backbone, keras_hub.models.BertBackbone):
        raise ValueError(
            f"{config_path} built a {type(backbone).__name__}, not a "
            "keras-hub BertBackbone; keras_bert reads BERT presets only."
        )
    _load(backbone.load_weights, weights_path, len(backbone.weights))

    tensors, source_names, transposed = {}, {}, set()
    for variable, name, layout in variables_by_path(
        model, backbone.num_layers, heads
    ):
        tensors[name] = to_huggingface(variable.numpy(), layout)
        source_names[name] = variable.path
        if layout != "copy" and layout != "bias":
            transposed.add(name)
    backbone_config = _backbone_config(backbone, config_path)
    logging.info(
        "Read the keras-hub preset %s (%s%s): activation=%r, as keras-hub's "
        "BertBackbone runs it.",
        path,
        type(backbone).__name__,
        f" + {type(model).__name__} head" if model is not backbone else "",
        backbone_config["activation"],
    )
    table = {
        name: variable_path
        for variable_path, name, _ in keras_hub_table(
            backbone.num_layers, heads
        )
    }

    def name_in_source(name):
        if name in table:
            return table[name], False
        return f"{name} (keras-hub BERT presets have no such tensor)", False

    return Checkpoint(
        path=path,
        format="keras_hub",
        config_path=config_path,
        backbone_config=backbone_config,
        tensors=tensors,
        source_names=source_names,
        transposed=transposed,
        name_in_source=name_in_source,
    )


def read_keras_hub_config(path):
    """The `BertBackbone` arguments of a keras-hub preset, without weights.

    keras-hub builds its backbone from `config.json` (random weights; no
    `model.weights.h5` needed), whose layers say what `read_keras_hub_preset`
    would give: `activation="gelu_approximate"` and its LayerNorm epsilon.

    Args:
        path: str. The preset directory.

    Returns `(backbone_config, config_path)`.

    Example:
    ```python
    import keras_hub
    keras_hub.models.BertBackbone(
        vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=4,
        intermediate_dim=8, max_sequence_length=8,
    ).save_to_preset("tiny_preset")
    read_keras_hub_config("tiny_preset")[0]["num_layers"]  # 1
    ```
    """
    path = os.fspath(path)
    config_path = files.join(path, CONFIG_FILE)
    config = read_config_file(config_path)
    _check_backbone_class(config, config_path, path)
    import_keras_hub(f"Reading the keras-hub preset {path}")
    backbone = _deserialize(_float32(config), config_path)
    return _backbone_config(backbone, config_path), config_path


def _check_backbone_class(config, config_path, path):
    name = config.get("registered_name")
    if name in BERT_BACKBONES:
        return
    raise ValueError(
        f"{config_path} is a keras-hub preset of {name!r} (class "
        f"{config.get('class_name')!r}), not of a BERT backbone: keras_bert "
        f"reads keras-hub presets whose registered_name is one of "
        f"{list(BERT_BACKBONES)}. Load this one with keras-hub itself, "
        f"`keras_hub.models.Backbone.from_preset({path!r})`, or pass a "
        "BERT preset (e.g. kaggle://keras/bert/keras/bert_base_en_uncased) "
        "or a Hugging Face / Google BERT directory."
    )


def _missing_weights(path):
    found = sorted(tf.io.gfile.listdir(path))[:10]
    hint = (
        " It has sharded weights (model.weights.json), which keras_bert "
        "does not read; BERT presets are far below keras-hub's 10 GB shard "
        "size, so save the backbone again with "
        "`save_to_preset(directory, max_shard_size=None)`."
        if SHARDED_WEIGHTS_FILE in found
        else " Copy or download the preset again completely (keras-hub's "
        "`save_to_preset` writes config.json and model.weights.h5 together)."
    )
    return (
        f"{path} is a keras-hub BERT preset ({CONFIG_FILE} names a "
        f"BertBackbone) but has no {WEIGHTS_FILE}. Found: {found}.{hint}"
    )


def _task_config(path, keras_hub):
    """The task preset's config if it has a head keras_bert reads."""
    task_path = files.join(path, TASK_FILE)
    if not files.exists(task_path):
        return None, ()
    task_config = read_config_file(task_path)
    name = task_config.get("registered_name")
    task_class = keras.saving.get_registered_object(name) if name else None
    if not isinstance(task_class, type):
        task_class = type(None)
    if issubclass(task_class, keras_hub.models.BertTextClassifier):
        return task_config, CLASSIFIER
    if issubclass(task_class, keras_hub.models.BertMaskedLM):
        logging.warning(
            "%s is a keras-hub BertMaskedLM preset; its masked-LM head is "
            "not read (keras-hub's head normalises with epsilon 1e-5 and an "
            "exact GELU, keras_bert's with the backbone's), only the "
            "backbone.",
            path,
        )
    else:
        logging.info(
            "%s: %s is a %s, whose head keras_bert does not read; reading "
            "the backbone.",
            path,
            TASK_FILE,
            name,
        )
    return None, ()


def _float32(config):
    """A backbone config with float32 variables (a preset may be saved in
    bfloat16; a Checkpoint holds float32)."""
    return dict(config, config=dict(config["config"], dtype="float32"))


def _deserialize(config, config_path):
    """Builds a keras-hub object from its config."""
    try:
        return keras.saving.deserialize_keras_object(config)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"keras-hub could not build the model of {config_path}: {error} "
            "The file is corrupt or from a keras-hub version other than "
            "0.32; save the preset again with keras-hub 0.32."
        ) from error


def _load(load_weights, weights_path, expected):
    """Loads a `.weights.h5` file (a remote one through a local copy) that
    must hold exactly `expected` arrays: Keras fails on missing ones but
    ignores extra ones (a config with fewer layers than the weights)."""
    import h5py

    with files.local_copy(weights_path) as local_path:
        try:
            load_weights(local_path)
            with h5py.File(local_path, "r") as file:
                found = _count_arrays(file)
        except Exception as error:  # h5py and Keras raise many types
            raise ValueError(
                f"Could not load {weights_path} into the model its config "
                f"describes: {error} The file is truncated or corrupt, or "
                "from another preset; copy the preset again completely."
            ) from error
    if found != expected:
        raise ValueError(
            f"{weights_path} holds {found} weight arrays, but the model its "
            f"config describes has {expected}: the config and the weights "
            "are of different models (e.g. another layer count). Copy the "
            "preset again completely, with the config saved with them."
        )


def _count_arrays(file):
    """Model weights in a Keras `.weights.h5` (optimizer state aside)."""
    import h5py

    names = []
    file.visititems(
        lambda name, item: (
            names.append(name) if isinstance(item, h5py.Dataset) else None
        )
    )
    return sum(not name.startswith("optimizer/") for name in names)


def _backbone_config(backbone, config_path):
    """`BertBackbone` arguments for what keras-hub's backbone computes."""
    block = backbone.transformer_layers[0]
    epsilons = {backbone.get_layer("embeddings_layer_norm").epsilon} | {
        layer.layer_norm_epsilon for layer in backbone.transformer_layers
    }
    if len(epsilons) != 1:
        raise ValueError(
            f"{config_path}: the LayerNorm epsilons {sorted(epsilons)} "
            "differ between layers; keras_bert uses one for the whole "
            "encoder."
        )
    return {
        "vocabulary_size": backbone.vocabulary_size,
        "num_layers": backbone.num_layers,
        "num_heads": backbone.num_heads,
        "hidden_dim": backbone.hidden_dim,
        "intermediate_dim": backbone.intermediate_dim,
        "dropout": float(backbone.dropout),
        "max_sequence_length": backbone.max_sequence_length,
        "num_segments": backbone.num_segments,
        # keras-hub's attention dropout is its `dropout`.
        "attention_dropout": float(backbone.dropout),
        "activation": _activation_name(block.activation, config_path),
        "layer_norm_epsilon": float(epsilons.pop()),
        "initializer_range": 0.02,  # keras-hub's bert_kernel_initializer
    }


def _activation_name(activation, config_path):
    """Which GELU `activation` computes, told by its value at 1."""
    value = float(keras.ops.convert_to_numpy(activation(keras.ops.ones(1)))[0])
    exact = 0.5 * (1 + math.erf(1 / math.sqrt(2)))  # 0.8413447
    tanh = 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715))
    if abs(value - tanh) < 1e-6:
        return "gelu_approximate"
    if abs(value - exact) < 1e-6:
        return "gelu"
    raise ValueError(
        f"{config_path}: the feed-forward activation gives {value} at 1, "
        f"neither GELU's tanh approximation ({tanh:.7f}) nor exact GELU "
        f"({exact:.7f}); keras_bert implements those two only."
    )
