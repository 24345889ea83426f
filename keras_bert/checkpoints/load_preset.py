"""`from_preset` on every model class: a name, with or without its weights.

A preset is anything `from_checkpoint` takes (a trained preset name such
as `bert_base_en_uncased`, a Hugging Face Hub id, `hf://` — keras-hub
presets hosted there, `hf://keras/bert_base_en_uncased`, included — a
Hugging Face, Google or keras-hub directory, a `kaggle://` handle) or an
architecture-only name (`bert_tiny` ... `bert_large`, random weights).
`load_weights=False` builds a checkpoint's architecture with random
weights, reading its config and vocabulary but not its weights.
"""

import os

from keras_bert.checkpoints.hub import parse_hub_id
from keras_bert.checkpoints.load_checkpoint import checkpoint_preprocessor
from keras_bert.checkpoints.load_checkpoint import load_checkpoint
from keras_bert.checkpoints.load_checkpoint import split_arguments
from keras_bert.files import exists
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.presets import BACKBONE_PRESETS
from keras_bert.models.presets import get_preset_config
from keras_bert.models.presets import preset_hub_id
from keras_bert.text.bert_tokenizer import BertTokenizer


def load_preset(name, model_class=BertBackbone, load_weights=True, **kwargs):
    """Builds `model_class` from preset `name` (see `Task.from_preset`).

    Args:
        name: str. A trained or architecture-only preset name, or anything
            `load_checkpoint` takes.
        model_class: `BertBackbone` or a task model class.
        load_weights: bool. Load the checkpoint's weights, or build its
            architecture with random ones. Defaults to `True`.
        **kwargs: what `model_class.from_checkpoint` takes; with an
            architecture-only name, also `vocabulary` and `lowercase` (a
            task model's preprocessor).

    Raises:
        ValueError: an unknown preset name (naming the closest), a `.keras`
            file, or an argument `model_class` does not take.

    Example:
    ```python
    load_preset("bert_tiny", keras_bert.BertClassifier, num_classes=2)
    ```
    """
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(
            "Received an invalid value for argument `name`, expected a "
            "preset name, a Hugging Face Hub id or a checkpoint path. "
            f"Received: name={name!r}"
        )
    name = os.fspath(name)
    if name.endswith(".keras"):
        raise ValueError(_keras_file_message(name, model_class, load_weights))
    if name in BACKBONE_PRESETS:
        return _architecture(name, model_class, **kwargs)
    hub_id = preset_hub_id(name)
    if hub_id is not None:
        _check_fixed_architecture(name, kwargs)
        path = "hf://" + hub_id
    elif _is_preset_name(name):
        get_preset_config(name)  # fails naming the closest preset
    else:
        path = name
    split_arguments(model_class, kwargs, "from_preset")  # named as called
    return load_checkpoint(path, model_class, load_weights, **kwargs)


def _architecture(name, model_class, vocabulary=None, lowercase=True, **kw):
    """An architecture-only preset: random weights, a preprocessor only
    when a vocabulary is given."""
    tokenizer = None
    if vocabulary is not None:
        if issubclass(model_class, BertBackbone):
            raise ValueError(
                f"BertBackbone.from_preset({name!r}) received a vocabulary, "
                "but BertBackbone has no preprocessor. Pass "
                "`vocabulary_size=` for its embedding table, or load a task "
                "model, which attaches a preprocessor."
            )
        tokenizer = BertTokenizer(vocabulary, lowercase=lowercase)
        # The embedding table fits the vocabulary, as in the recipes.
        kw.setdefault("vocabulary_size", tokenizer.vocabulary_size())
    backbone_kwargs, head_kwargs, preprocessor_kwargs = split_arguments(
        model_class, kw, "from_preset"
    )
    backbone_config = {**get_preset_config(name), **backbone_kwargs}
    if issubclass(model_class, BertBackbone):
        return model_class(**backbone_config)
    if tokenizer is None:
        if preprocessor_kwargs.get("sequence_length") is not None:
            raise ValueError(
                f"{name!r} is an architecture without a vocabulary, so no "
                "preprocessor is built and `sequence_length` has nothing "
                "to set. Pass `vocabulary=PATH/vocab.txt` (or a list of "
                "tokens) as well, or `preprocessor=`."
            )
        preprocessor = preprocessor_kwargs.get("preprocessor")
    else:
        if "preprocessor" in preprocessor_kwargs:
            raise ValueError(
                "Pass `vocabulary` (a preprocessor is built from it) or "
                "`preprocessor` (your own), not both."
            )
        if tokenizer.vocabulary_size() > backbone_config["vocabulary_size"]:
            raise ValueError(
                f"The vocabulary has {tokenizer.vocabulary_size()} tokens "
                "but the model's embedding table "
                f"{backbone_config['vocabulary_size']}: leave out "
                "`vocabulary_size` (it then fits the vocabulary) or pass a "
                "larger one."
            )
        preprocessor = checkpoint_preprocessor(
            tokenizer, model_class, backbone_config, **preprocessor_kwargs
        )
    return model_class(
        BertBackbone(**backbone_config),
        preprocessor=preprocessor,
        **head_kwargs,
    )


def _check_fixed_architecture(name, kwargs):
    fixed = sorted(set(kwargs) & set(get_preset_config(name)))
    if fixed:
        raise ValueError(
            f"Preset {name!r} loads trained weights, whose architecture "
            "is fixed. Received: "
            f"{', '.join(f'{k}={kwargs[k]!r}' for k in fixed)}. For "
            "random weights of another size use an architecture-only "
            "preset (bert_tiny ... bert_large)."
        )


def _is_preset_name(name):
    """A bare name (no folder, scheme or `@revision`) that is no path:
    meant as a preset, since a Hub id needs `org/name` or `hf://`."""
    return (
        "/" not in name
        and "\\" not in name
        and ":" not in name
        and parse_hub_id(name) is None
        and not exists(name)
    )


def _keras_file_message(path, model_class, load_weights):
    fix = (
        f"`model = keras.models.load_model({path!r})`, then "
        "`type(model).from_config(model.get_config())` for the same "
        "architecture with fresh weights"
        if not load_weights
        else f"`keras.models.load_model({path!r})`"
    )
    return (
        f"{model_class.__name__}.from_preset(load_weights={load_weights}) "
        f"received {path!r}, a Keras model file: `from_preset` reads "
        "presets and checkpoints (config, weights and vocabulary), and a "
        ".keras file holds a whole saved model, preprocessor included. "
        f"Load it with {fix}."
    )
