"""The files of a keras-hub preset, and where presets come from.

A keras-hub preset (what `keras_hub.models.BertBackbone.save_to_preset`
writes, and what Kaggle serves) holds `config.json` (the backbone's Keras
config: `registered_name` `"keras_hub>BertBackbone"`), `model.weights.h5`,
`metadata.json`, and for its tokenizer `tokenizer.json` (its Keras config:
`lowercase`, `strip_accents`, ...) and `assets/tokenizer/vocabulary.txt`;
a task preset adds `task.json` and `task.weights.h5`. Its `config.json`
shares the name of a Hugging Face one: the content tells them apart
(`registered_name` is Keras', `model_type` Hugging Face's), as keras-hub's
own loader does. keras-hub itself is imported only where a preset is read
or written.
"""

import os

from absl import logging

from keras_bert import files

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
SHARDED_WEIGHTS_FILE = "model.weights.json"
METADATA_FILE = "metadata.json"
TASK_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
PREPROCESSOR_FILE = "preprocessor.json"
TOKENIZER_FILE = "tokenizer.json"
VOCABULARY_FILE = "assets/tokenizer/vocabulary.txt"
KAGGLE_PREFIX = "kaggle://"
# keras-hub registers its classes under both package names (keras-nlp's
# presets say "keras_nlp>").
BERT_BACKBONES = ("keras_hub>BertBackbone", "keras_nlp>BertBackbone")
_INSTALL = (
    'pip install "keras-bert[keras-hub]" (keras-hub>=0.32,<0.33; '
    "keras-nlp 0.32 is the same package under its old name)"
)


def import_keras_hub(purpose):
    """Imports keras-hub, or says how to install it for `purpose`."""
    try:
        import keras_hub
    except ImportError as error:
        raise ImportError(
            f"{purpose} needs keras-hub, which is not installed: {_INSTALL}."
        ) from error
    return keras_hub


def is_keras_hub_config(config):
    """Whether a parsed `config.json` is a serialised Keras object."""
    return (
        isinstance(config, dict)
        and "registered_name" in config
        and isinstance(config.get("config"), dict)
    )


def is_keras_hub_preset(path):
    """Whether the directory `path` holds a keras-hub preset's config.json.

    Example:
    ```python
    import keras_hub
    keras_hub.models.BertBackbone(
        vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=4,
        intermediate_dim=8, max_sequence_length=8,
    ).save_to_preset("tiny_preset")
    is_keras_hub_preset("tiny_preset")  # True
    keras_bert.checkpoints.save_huggingface(
        keras_bert.BertBackbone.from_preset("bert_tiny"), None, "tiny_bert"
    )
    is_keras_hub_preset("tiny_bert")  # False: Hugging Face's config.json
    ```
    """
    config_path = files.join(os.fspath(path), CONFIG_FILE)
    if not files.exists(config_path):
        return False
    try:
        return is_keras_hub_config(files.read_json(config_path))
    except ValueError:  # broken JSON: the Hugging Face reader reports it
        return False


def resolve_kaggle_handle(path, names=None):
    """A local directory for a `kaggle://` preset handle.

    Goes through keras-hub's own preset resolution
    (`keras_hub.src.utils.preset_utils.get_file`, which downloads with
    `kagglehub` into its cache), fetching only the files keras_bert reads.
    Any other path is returned unchanged.

    Args:
        path: str. E.g. `"kaggle://keras/bert/keras/bert_tiny_en_uncased/3"`.
        names: tuple of str. The preset files to fetch; those the preset
            lacks are skipped. Defaults to every file a checkpoint is read
            from (config, weights, task, tokenizer and vocabulary).

    Example:
    ```python
    resolve_kaggle_handle("tiny_bert")  # "tiny_bert": not a handle
    ```
    """
    path = os.fspath(path)
    if not path.lower().startswith(KAGGLE_PREFIX):
        return path
    import_keras_hub(f"Reading the Kaggle preset {path}")
    from keras_hub.src.utils import preset_utils

    if names is None:
        names = (WEIGHTS_FILE, TASK_FILE, TASK_WEIGHTS_FILE, TOKENIZER_FILE)
        names += (VOCABULARY_FILE, METADATA_FILE)
    try:
        config_path = preset_utils.get_file(path, CONFIG_FILE)
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"The Kaggle preset {path} has no {CONFIG_FILE}: it is not a "
            "keras-hub preset. Check the handle "
            "(kaggle://<owner>/<model>/keras/<variant>[/<version>])."
        ) from error
    directory = os.path.dirname(config_path)
    for name in names:
        try:
            local = preset_utils.get_file(path, name)
        except FileNotFoundError:
            continue
        if os.path.normpath(local) != os.path.normpath(
            os.path.join(directory, name)
        ):
            raise ValueError(
                f"keras-hub resolved {name} of {path} to {local}, outside "
                f"the directory of its {CONFIG_FILE} ({directory}); "
                "keras_bert reads a preset from one directory. Download "
                "the preset to a directory and pass that."
            )
    logging.info("Kaggle preset %s is in %s.", path, directory)
    return directory
