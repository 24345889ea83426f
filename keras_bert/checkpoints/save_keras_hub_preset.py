"""Exports a model (and its tokenizer) as a keras-hub BERT preset."""

import os
import tempfile

import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.checkpoints.keras_hub_files import PREPROCESSOR_FILE
from keras_bert.checkpoints.keras_hub_files import TASK_FILE
from keras_bert.checkpoints.keras_hub_files import TASK_WEIGHTS_FILE
from keras_bert.checkpoints.keras_hub_files import TOKENIZER_FILE
from keras_bert.checkpoints.keras_hub_files import VOCABULARY_FILE
from keras_bert.checkpoints.keras_hub_files import import_keras_hub
from keras_bert.checkpoints.keras_hub_weights import CLASSIFIER
from keras_bert.checkpoints.keras_hub_weights import from_huggingface
from keras_bert.checkpoints.keras_hub_weights import variables_by_path
from keras_bert.checkpoints.weight_map import weight_map
from keras_bert.models.backbone_of import backbone_of
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier

# Files of one preset that another may lack: removed from `path` when this
# one does not write them.
_PRESET_FILES = frozenset(
    (TASK_FILE, TASK_WEIGHTS_FILE, PREPROCESSOR_FILE, TOKENIZER_FILE)
    + (VOCABULARY_FILE,)
)
# keras-hub's BertBackbone hard-codes this.
KERAS_HUB_LAYER_NORM_EPSILON = 1e-12
# all-MiniLM-L6-v2's weights, 36 inputs: the largest change of an output
# when its exact-GELU encoder runs with keras-hub's tanh GELU instead
# (`python -m pytest -s tests/checkpoints/test_keras_hub_preset.py -k minilm`
# prints it, and fails if it drifts).
MEASURED_GELU_CHANGE = {"sequence_output": 5.0e-3, "pooled_output": 3.1e-4}


def save_keras_hub_preset(model, tokenizer, path, allow_approximate_gelu=False):
    """Writes `model` as a keras-hub preset directory.

    `keras_hub.models.BertBackbone.from_preset(path)` loads a backbone from
    it and, when a tokenizer is given, `keras_hub.models.BertTokenizer
    .from_preset(path)` its tokenizer; keras_bert reads it back with
    `from_checkpoint(path)`. A `BertBackbone` becomes keras-hub's
    `BertBackbone`; a `BertClassifier` becomes a `BertTextClassifier` task
    preset (`task.json`, `task.weights.h5`, and with a tokenizer a
    `BertTextClassifierPreprocessor`, so that
    `keras_hub.models.BertTextClassifier.from_preset(path)` classifies raw
    strings). keras-hub itself writes the files, in a local staging
    directory copied to `path` with `tf.io.gfile` (so `gs://` works).

    keras-hub's BERT runs the tanh approximation of GELU and LayerNorm
    epsilon 1e-12, whatever the weights were trained with. A model with
    another epsilon is refused; a model with exact GELU (`activation=
    "gelu"`, e.g. every Hugging Face BERT) is refused unless
    `allow_approximate_gelu=True`, because keras-hub would compute other
    numbers: on all-MiniLM-L6-v2 the outputs move by up to 5.0e-3
    (`sequence_output`) and 3.1e-4 (`pooled_output`).

    Args:
        model: `BertBackbone` or `BertClassifier`. (keras-hub's
            `BertMaskedLM` head differs from ours and it has no
            question-answering or token-classification task: export such a
            model's `.backbone`.)
        tokenizer: `keras_bert.BertTokenizer` or `None`. Written as
            keras-hub's `BertTokenizer` with the same vocabulary, casing,
            accent stripping and special-token handling.
        path: str. The output directory; created if needed. Files of the
            same name are overwritten, and preset files this call does not
            write (e.g. an earlier `task.json`) are removed, so that
            keras-hub does not mix two presets.
        allow_approximate_gelu: bool. Write an exact-GELU model anyway,
            for keras-hub to run with the tanh approximation (a warning
            names the change). Defaults to `False`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
        intermediate_dim=8, max_sequence_length=8,
        activation="gelu_approximate",
    )
    tokenizer = keras_bert.BertTokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    )
    keras_bert.checkpoints.save_keras_hub_preset(
        backbone, tokenizer, "tiny_preset"
    )
    # keras_hub.models.BertBackbone.from_preset("tiny_preset") loads it.
    ```
    """
    groups = weight_map(model)  # raises TypeError for other objects
    if not isinstance(model, (BertBackbone, BertClassifier)):
        raise ValueError(
            f"keras-hub has no preset for a {type(model).__name__}: "
            "save_keras_hub_preset writes a BertBackbone or a "
            "BertClassifier (keras-hub's BertMaskedLM head normalises with "
            "epsilon 1e-5 and has no next-sentence head). Write "
            "`model.backbone` instead."
        )
    backbone = backbone_of(model)
    _check_representable(backbone, allow_approximate_gelu)
    keras_hub = import_keras_hub("save_keras_hub_preset")
    tensors = {}
    for specs in groups.values():
        for spec in specs:
            tensors.update(spec.from_keras())

    hub_backbone = keras_hub.models.BertBackbone(
        vocabulary_size=backbone.vocabulary_size,
        num_layers=backbone.num_layers,
        num_heads=backbone.num_heads,
        hidden_dim=backbone.hidden_dim,
        intermediate_dim=backbone.intermediate_dim,
        dropout=backbone.dropout,
        max_sequence_length=backbone.max_sequence_length,
        num_segments=backbone.num_segments,
        dtype="float32",
    )
    hub_tokenizer = None
    if tokenizer is not None:
        hub_tokenizer = keras_hub.models.BertTokenizer(
            vocabulary=[str(token) for token in tokenizer.vocabulary],
            lowercase=tokenizer.lowercase,
            strip_accents=bool(
                tokenizer.lowercase
                if tokenizer.strip_accents is None
                else tokenizer.strip_accents
            ),
            special_tokens_in_strings=tokenizer.special_tokens_in_strings,
            oov_token=tokenizer.unk_token,
        )
    heads, hub_model = (), hub_backbone
    if isinstance(model, BertClassifier):
        preprocessor = None
        if hub_tokenizer is not None:
            preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
                hub_tokenizer, sequence_length=backbone.max_sequence_length
            )
        hub_model = keras_hub.models.BertTextClassifier(
            hub_backbone,
            num_classes=model.num_classes,
            preprocessor=preprocessor,
            dropout=model.dropout,
        )
        heads = CLASSIFIER
    for variable, name, layout in variables_by_path(
        hub_model, backbone.num_layers, heads
    ):
        variable.assign(from_huggingface(tensors[name], layout, variable.shape))

    path = os.fspath(path)
    with tempfile.TemporaryDirectory(prefix="keras_bert-") as staging:
        # keras-hub writes with Python's open(): a local directory.
        hub_model.save_to_preset(staging)
        if hub_tokenizer is not None and hub_model is hub_backbone:
            hub_tokenizer.save_to_preset(staging)
        written = {
            os.path.relpath(os.path.join(directory, name), staging)
            for directory, _, names in tf.io.gfile.walk(staging)
            for name in names
        }
        files.makedirs(path)
        for name in sorted(_PRESET_FILES - written):
            if files.exists(files.join(path, name)):
                tf.io.gfile.remove(files.join(path, name))
        files.copy_tree(staging, path)
    if tokenizer is None:
        logging.warning(
            "save_keras_hub_preset: no tokenizer given, so %s has no "
            "tokenizer.json; keras-hub can load the model but not a "
            "tokenizer from it.",
            path,
        )


def _check_representable(backbone, allow_approximate_gelu):
    if backbone.layer_norm_epsilon != KERAS_HUB_LAYER_NORM_EPSILON:
        raise ValueError(
            "keras-hub's BertBackbone uses LayerNorm epsilon "
            f"{KERAS_HUB_LAYER_NORM_EPSILON}, but this model uses "
            f"layer_norm_epsilon={backbone.layer_norm_epsilon}; keras-hub "
            "would compute other outputs with these weights. Save it with "
            "keras_bert.checkpoints.save_huggingface instead."
        )
    attention_dropout = backbone.attention_dropout
    if attention_dropout is not None and attention_dropout != backbone.dropout:
        logging.warning(
            "keras-hub's BertBackbone has one dropout rate: the preset "
            "trains with dropout=%s on attention too (this model uses "
            "attention_dropout=%s). Inference is unaffected.",
            backbone.dropout,
            attention_dropout,
        )
    if backbone.activation == "gelu_approximate":
        return
    change = (
        f"on all-MiniLM-L6-v2 this changes sequence_output by up to "
        f"{MEASURED_GELU_CHANGE['sequence_output']:.1e} and pooled_output "
        f"by up to {MEASURED_GELU_CHANGE['pooled_output']:.1e}"
    )
    if not allow_approximate_gelu:
        raise ValueError(
            "This model uses exact GELU (activation='gelu'), but keras-hub's "
            "BertBackbone runs only the tanh approximation, so the preset "
            f"would compute other numbers ({change}). Pass "
            "allow_approximate_gelu=True to write it anyway, or save it "
            "with keras_bert.checkpoints.save_huggingface, which keeps the "
            "activation."
        )
    logging.warning(
        "save_keras_hub_preset: the model uses exact GELU; keras-hub will "
        "run the tanh approximation (%s).",
        change,
    )
