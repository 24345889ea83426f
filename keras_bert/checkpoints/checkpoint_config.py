"""Translates checkpoint configs into `BertBackbone` arguments and back.

Hugging Face (`config.json`) and Google (`bert_config.json`) describe the
same architecture with the same keys, with two differences that matter for
the numbers: the meaning of `hidden_act="gelu"` (exact erf for Hugging Face,
the tanh approximation in Google's original code) and the LayerNorm epsilon
(Hugging Face stores `layer_norm_eps`; Google's code hard-codes `1e-12`).
Anything `BertBackbone` does not implement is refused here, before a model
is built, so that a checkpoint never loads into the wrong function.
"""

import json

from keras_bert import files

# Hugging Face's activation names -> ours. "gelu_fast" and "gelu_new" are the
# tanh approximation written two ways.
HUGGINGFACE_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_python_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
}
# Google's modeling.py implements "gelu" as the tanh approximation.
GOOGLE_ACTIVATIONS = {"gelu": "gelu_approximate"}
# Ours -> the Hugging Face name written by `save_huggingface`.
ACTIVATIONS_TO_HUGGINGFACE = {"gelu": "gelu", "gelu_approximate": "gelu_new"}

# Google's original LayerNorm (tf.contrib.layers.layer_norm) uses 1e-12.
GOOGLE_LAYER_NORM_EPSILON = 1e-12

# Config key -> BertBackbone argument, shared by both formats.
_ARCHITECTURE_KEYS = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
}


def read_config_file(config_path):
    """Parses a checkpoint's JSON config, naming the file if it is broken."""
    text = files.read_text(config_path)
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{config_path} is not valid JSON ({error}); the file is "
            "truncated or corrupt. Restore it from the checkpoint's release."
        ) from error
    if not isinstance(config, dict):
        raise ValueError(
            f"{config_path} holds a JSON {type(config).__name__}, not the "
            "object of a BERT config."
        )
    return config


def backbone_config_from_checkpoint_config(config, source, config_path):
    """Returns `BertBackbone` keyword arguments for a checkpoint's config.

    Args:
        config: dict. The parsed `config.json` or `bert_config.json`.
        source: str. `"huggingface"` or `"google"`; decides what
            `hidden_act="gelu"` means.
        config_path: str. The file `config` came from, named in errors.

    Raises:
        ValueError: if a key is missing or has a value `BertBackbone` does
            not implement (another model type, relative positions, a decoder,
            a non-GELU activation, heads that do not divide the hidden size).

    Example:
    ```python
    backbone_config_from_checkpoint_config(
        {"vocab_size": 10, "num_hidden_layers": 1, "num_attention_heads": 2,
         "hidden_size": 8, "intermediate_size": 16, "hidden_act": "gelu",
         "max_position_embeddings": 16, "type_vocab_size": 2},
        "huggingface", "config.json",
    )["activation"]  # "gelu"
    ```
    """
    _refuse_unsupported(config, source, config_path)
    arguments = {}
    for key, argument in _ARCHITECTURE_KEYS.items():
        value = config.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(
                f"{config_path}: `{key}` must be a positive integer, but it "
                f"is {value!r}. The file does not describe a BERT model; "
                "check that it is the config saved with these weights."
            )
        arguments[argument] = value
    hidden, heads = arguments["hidden_dim"], arguments["num_heads"]
    if hidden % heads:
        raise ValueError(
            f"{config_path}: hidden_size={hidden} is not divisible by "
            f"num_attention_heads={heads}, so the heads cannot have equal "
            "widths. The config is inconsistent with any BERT checkpoint; "
            "fix `hidden_size` or `num_attention_heads` in the file."
        )
    arguments["activation"] = _activation(config, source, config_path)
    arguments["dropout"] = float(config.get("hidden_dropout_prob", 0.1))
    arguments["attention_dropout"] = float(
        config.get("attention_probs_dropout_prob", arguments["dropout"])
    )
    arguments["initializer_range"] = float(
        config.get("initializer_range", 0.02)
    )
    if source == "huggingface":
        epsilon = config.get("layer_norm_eps", 1e-12)
    else:
        epsilon = GOOGLE_LAYER_NORM_EPSILON
    arguments["layer_norm_epsilon"] = float(epsilon)
    return arguments


def labels_from_config(config, num_classes):
    """The class names in a Hugging Face config's `id2label`, or `None`.

    `None` also when they are `transformers`' placeholders (`LABEL_<i>`),
    incomplete or not distinct.

    Args:
        config: dict. A parsed `config.json`.
        num_classes: int. The head's number of classes.

    Example:
    ```python
    labels_from_config({"id2label": {"0": "neg", "1": "pos"}}, 2)
    # ["neg", "pos"]
    labels_from_config({"id2label": {"0": "LABEL_0", "1": "LABEL_1"}}, 2)
    # None
    ```
    """
    id2label = config.get("id2label") or {}
    try:
        labels = [str(id2label[str(i)]) for i in range(num_classes)]
    except (KeyError, TypeError):
        return None
    if labels == [f"LABEL_{i}" for i in range(num_classes)]:
        return None
    if len(set(labels)) != num_classes:
        return None
    return labels


def huggingface_config_from_backbone(backbone):
    """Returns the Hugging Face `config.json` dict of a `BertBackbone`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
    huggingface_config_from_backbone(backbone)["hidden_size"]  # 128
    ```
    """
    attention_dropout = backbone.attention_dropout
    if attention_dropout is None:
        attention_dropout = backbone.dropout
    return {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "vocab_size": backbone.vocabulary_size,
        "num_hidden_layers": backbone.num_layers,
        "num_attention_heads": backbone.num_heads,
        "hidden_size": backbone.hidden_dim,
        "intermediate_size": backbone.intermediate_dim,
        "max_position_embeddings": backbone.max_sequence_length,
        "type_vocab_size": backbone.num_segments,
        "hidden_act": ACTIVATIONS_TO_HUGGINGFACE[backbone.activation],
        "hidden_dropout_prob": backbone.dropout,
        "attention_probs_dropout_prob": attention_dropout,
        "initializer_range": backbone.initializer_range,
        "layer_norm_eps": backbone.layer_norm_epsilon,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
        "tie_word_embeddings": True,
        "is_decoder": False,
        "add_cross_attention": False,
    }


def _activation(config, source, config_path):
    name = config.get("hidden_act", "gelu")
    table = (
        HUGGINGFACE_ACTIVATIONS
        if source == "huggingface"
        else (GOOGLE_ACTIVATIONS)
    )
    if name not in table:
        raise ValueError(
            f"{config_path}: hidden_act={name!r} is not supported. keras_bert "
            "implements exact GELU and its tanh approximation only; in a "
            f"{_SOURCE_NAMES[source]} config these are spelled "
            f"{sorted(table)}. A model trained with another activation "
            "cannot be loaded without changing its outputs."
        )
    return table[name]


_SOURCE_NAMES = {"huggingface": "Hugging Face", "google": "Google BERT"}


def _refuse_unsupported(config, source, config_path):
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(
            f"{config_path}: model_type={model_type!r} is not supported; "
            "keras_bert loads BERT checkpoints (model_type='bert') only. "
            "Other families differ in ways that change the outputs."
        )
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(
            f"{config_path}: position_embedding_type={position_type!r} is "
            "not supported; keras_bert implements BERT's learned absolute "
            "positions only ('absolute')."
        )
    for key in ("is_decoder", "add_cross_attention"):
        if config.get(key):
            raise ValueError(
                f"{config_path}: {key}={config[key]!r} is not supported; "
                "keras_bert implements the bidirectional BERT encoder only. "
                f"Set {key} to false if the weights are an encoder's."
            )
    embedding_size = config.get("embedding_size")
    if embedding_size is not None and embedding_size != config.get(
        "hidden_size"
    ):
        raise ValueError(
            f"{config_path}: embedding_size={embedding_size!r} differs from "
            f"hidden_size={config.get('hidden_size')!r}; factorised "
            "embeddings are not part of BERT and are not supported."
        )
