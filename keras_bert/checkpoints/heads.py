"""What the checkpoint formats know about each task head, declared once.

A task model (`keras_bert.models.Task`) is only the model. How checkpoints
hold its head is declared here as a `CheckpointHead`, registered for the
model class: the Hugging Face name prefix of each head group, the names
original Google (TF1) checkpoints use where they do not follow the
scope-to-dotted-name rule, the `transformers` class, whether the head reads
the pooler, which weights hold which tensors, what the head's constructor
takes from a checkpoint and what it adds to a Hugging Face `config.json`.
`load_checkpoint` (its `"auto"` detection included), `weight_map`, the
Google reader and `save_huggingface` ask `checkpoint_head(model_class)`;
nothing else lists the heads.

A new head that loads or saves checkpoints is its model class plus one
`register_checkpoint_head` call. The lookup goes through the class's MRO,
so a subclass of a registered head (e.g. of `BertClassifier`) uses its
parent's record unless it registers its own.

Example:
```python
class ToyScorer(keras_bert.models.Task):
    def __init__(self, backbone, **kwargs):
        self.backbone = backbone
        self.score_dense = keras.layers.Dense(1, name="score")
        inputs = keras_bert.models.bert_backbone.keras_inputs()
        score = self.score_dense(backbone(inputs)["pooled_output"])
        super().__init__(inputs=inputs, outputs=score, **kwargs)


keras_bert.checkpoints.register_checkpoint_head(
    ToyScorer,
    keras_bert.checkpoints.CheckpointHead(
        groups={"scorer": "toy_scorer."},
        weights=lambda model: {"scorer": {"toy_scorer": model.score_dense}},
        huggingface_architecture="BertForToyScoring",
    ),
)
```
"""

import dataclasses
import json
from typing import Callable
from typing import Optional

import tensorflow as tf
from absl import logging

from keras_bert.checkpoints.checkpoint_config import labels_from_config
from keras_bert.checkpoints.sentence_transformers_files import (
    read_sentence_transformers_config,
)
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_masked_lm import BertMaskedLM
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_question_answerer import BertQuestionAnswerer
from keras_bert.models.bert_text_embedder import BertTextEmbedder
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.models.task import Task


def _arguments_as_given(checkpoint, backbone_config, **kwargs):
    return kwargs


def _no_entries(model):
    return {}


def _no_sequence_length(checkpoint):
    return None


@dataclasses.dataclass(frozen=True)
class CheckpointHead:
    """How checkpoints name and configure one task model's head.

    Args:
        groups: dict. Head group name → the Hugging Face name prefix of all
            of its tensors (e.g. `{"classifier": "classifier."}`). A group
            is loaded whole or, when a checkpoint has none of its tensors,
            left freshly initialised (with a logged warning).
        weights: callable. `weights(model)` returns, for each group, a dict
            from Hugging Face name to what holds the weights there: a
            `keras.layers.Dense` (`<name>.weight`, transposed, and
            `<name>.bias`), a LayerNorm (`<name>.weight` and `<name>.bias`)
            or a `keras.Variable` (`<name>` itself). Together with the
            backbone's weights these must cover every variable of the
            model once (see `keras_bert.checkpoints.weight_map`).
        descriptions: dict. Head group name → how messages name it.
            Defaults to `"<group> head (<prefix>*)"`.
        google_names: dict. Variable name in an original Google checkpoint
            → Hugging Face name, for head tensors whose Google names do not
            follow the scope-to-dotted-name rule.
        huggingface_architecture: str or `None`. The `transformers` class
            of the model (`config.json` `architectures`); `"auto"` loading
            picks the head by it. `None`: saved as a `BertModel`, never
            picked by `"auto"`.
        uses_pooler: bool. Whether the head reads `pooled_output`. A model
            that does not (span and token heads) is saved without the
            pooler, as `transformers` saves it, and loads without one.
            Defaults to `True`.
        config_from_checkpoint: callable.
            `config_from_checkpoint(checkpoint, backbone_config, **kwargs)`
            returns the head's constructor arguments (besides the backbone)
            from a `keras_bert.checkpoints.Checkpoint`, the backbone's
            arguments and the arguments the caller of `from_checkpoint`
            gave. Defaults to the given arguments, unchanged.
        huggingface_config: callable. `huggingface_config(model)` returns
            the entries the model adds to a Hugging Face `config.json`
            besides `architectures`. Defaults to none.
        sequence_length: callable. `sequence_length(checkpoint)` returns
            the `sequence_length` of the preprocessor the checkpoint says
            the model reads with (e.g. sentence-transformers'
            `max_seq_length`), or `None` for the model class's
            `DEFAULT_SEQUENCE_LENGTH`. Defaults to `None` always.
    """

    groups: dict
    weights: Callable
    descriptions: dict = dataclasses.field(default_factory=dict)
    google_names: dict = dataclasses.field(default_factory=dict)
    huggingface_architecture: Optional[str] = None
    uses_pooler: bool = True
    config_from_checkpoint: Callable = _arguments_as_given
    huggingface_config: Callable = _no_entries
    sequence_length: Callable = _no_sequence_length


# Model class → its `CheckpointHead`, in registration order (keras_bert's
# own first): "auto" detection and the Google names try them in this order.
_HEADS = {}


def register_checkpoint_head(model_class, head):
    """Declares how checkpoints hold the head of `model_class`.

    Args:
        model_class: a `keras_bert.models.Task` subclass. Its subclasses use
            the same record unless they register their own.
        head: `CheckpointHead`.

    Returns `head`.
    """
    if not (isinstance(model_class, type) and issubclass(model_class, Task)):
        raise TypeError(
            "register_checkpoint_head takes a task model class (a subclass "
            f"of keras_bert.models.Task). Received: {model_class!r}"
        )
    if not isinstance(head, CheckpointHead):
        raise TypeError(
            "register_checkpoint_head takes a CheckpointHead. Received: "
            f"{head!r}"
        )
    _HEADS[model_class] = head
    return head


def checkpoint_head(model):
    """The `CheckpointHead` of a task model or task model class.

    The first class of its MRO that has one registered decides.

    Raises:
        TypeError: if none is registered.
    """
    model_class = model if isinstance(model, type) else type(model)
    for base in model_class.__mro__:
        if base in _HEADS:
            return _HEADS[base]
    name = model_class.__name__
    raise TypeError(
        f"{name} declares no checkpoint head, so checkpoints cannot name its "
        "weights. Register one: `keras_bert.checkpoints."
        f"register_checkpoint_head({name}, keras_bert.checkpoints."
        "CheckpointHead(groups=..., weights=...))` (see "
        "keras_bert/checkpoints/heads.py)."
    )


def registered_heads():
    """`{model_class: CheckpointHead}`, in registration order."""
    return dict(_HEADS)


# --- keras_bert's heads -------------------------------------------------------


def _classifier_config(
    checkpoint,
    backbone_config,
    num_classes=None,
    dropout=None,
    pair=None,
    label_names=None,
    multi_label=None,
    thresholds=None,
    **reading,
):
    """Classes from `classifier.weight`; from a Hugging Face
    `config.json`, `multi_label` from `problem_type`
    (`"multi_label_classification"`) and the label names from `id2label`
    (not `transformers`' placeholders `LABEL_<i>`), unless given.
    `reading`: the label mode and how texts are read (`label_mode`,
    `windows`, `doc_stride`, `aggregation`, `max_windows`), which no
    checkpoint holds; passed on as given."""
    config = _huggingface_config(checkpoint)
    if multi_label is None:  # a label mode given says it
        multi_label = reading.get("label_mode") is None and (
            config.get("problem_type") == "multi_label_classification"
        )
    if num_classes is None:
        if "classifier.weight" not in checkpoint.tensors:
            raise ValueError(
                f"{checkpoint.path} has no classifier head, so the number "
                "of classes is unknown. Pass it: "
                "`BertClassifier.from_checkpoint(path, num_classes=...)`."
            )
        num_classes = int(checkpoint.tensors["classifier.weight"].shape[0])
    if dropout is None:
        dropout = backbone_config["dropout"]
    if label_names is None and "classifier.weight" in checkpoint.tensors:
        label_names = labels_from_config(config, num_classes)
    return {
        "num_classes": num_classes,
        "dropout": dropout,
        "pair": pair,
        "label_names": label_names,
        "multi_label": multi_label,
        "thresholds": thresholds,
        **reading,
    }


def _huggingface_config(checkpoint):
    """A Hugging Face checkpoint's parsed `config.json`, else `{}`."""
    if checkpoint.format != "huggingface" or not checkpoint.config_path:
        return {}
    with tf.io.gfile.GFile(checkpoint.config_path) as file:
        return json.load(file)


def _classifier_huggingface_config(model):
    names = getattr(model, "label_names", None) or [
        f"LABEL_{i}" for i in range(model.num_classes)
    ]
    labels = {str(i): name for i, name in enumerate(names)}
    config = {
        "id2label": labels,
        "label2id": {label: int(i) for i, label in labels.items()},
        "classifier_dropout": model.dropout,
    }
    if getattr(model, "multi_label", False):
        config["problem_type"] = "multi_label_classification"
    elif model.num_classes == 1:
        config["problem_type"] = "regression"
    return config


register_checkpoint_head(
    BertClassifier,
    CheckpointHead(
        groups={"classifier": "classifier."},
        weights=lambda model: {
            "classifier": {"classifier": model.output_dense}
        },
        descriptions={"classifier": "classifier head (classifier)"},
        # run_classifier.py's fine-tuned head, stored `(classes, hidden)`.
        google_names={
            "output_weights": "classifier.weight",
            "output_bias": "classifier.bias",
        },
        huggingface_architecture="BertForSequenceClassification",
        config_from_checkpoint=_classifier_config,
        huggingface_config=_classifier_huggingface_config,
    ),
)


def _masked_lm_weights(model):
    head = model.masked_lm_head
    return {
        "masked_lm": {
            "cls.predictions.transform.dense": head.dense,
            "cls.predictions.transform.LayerNorm": head.layer_norm,
            "cls.predictions.bias": head.output_bias,
        },
        "next_sentence": {"cls.seq_relationship": model.nsp_dense},
    }


def _masked_lm_huggingface_config(model):
    if model.activation != model.backbone.activation:
        raise ValueError(
            "Hugging Face BERT uses one activation for the encoder and "
            f"the masked-LM head, but this model's head uses "
            f"{model.activation!r} and its backbone "
            f"{model.backbone.activation!r}; it cannot be exported "
            "faithfully."
        )
    return {}


register_checkpoint_head(
    BertMaskedLM,
    CheckpointHead(
        groups={
            "masked_lm": "cls.predictions.",
            "next_sentence": "cls.seq_relationship.",
        },
        weights=_masked_lm_weights,
        descriptions={
            "masked_lm": "masked-LM head (cls.predictions)",
            "next_sentence": "next-sentence head (cls.seq_relationship)",
        },
        google_names={
            "cls/predictions/output_bias": "cls.predictions.bias",
            "cls/seq_relationship/output_weights": (
                "cls.seq_relationship.weight"
            ),
            "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
        },
        huggingface_architecture="BertForPreTraining",
        huggingface_config=_masked_lm_huggingface_config,
    ),
)

register_checkpoint_head(
    BertQuestionAnswerer,
    CheckpointHead(
        groups={"question_answering": "qa_outputs."},
        weights=lambda model: {
            "question_answering": {"qa_outputs": model.span_dense}
        },
        descriptions={
            "question_answering": "question-answering head (qa_outputs)"
        },
        # run_squad.py's head, stored `(2, hidden)` as Hugging Face's.
        google_names={
            "cls/squad/output_weights": "qa_outputs.weight",
            "cls/squad/output_bias": "qa_outputs.bias",
        },
        huggingface_architecture="BertForQuestionAnswering",
        uses_pooler=False,
    ),
)


def _multiple_choice_config(checkpoint, backbone_config, dropout=None):
    """The dropout on the pooled output: the checkpoint's, unless given."""
    if dropout is None:
        dropout = backbone_config["dropout"]
    return {"dropout": dropout}


register_checkpoint_head(
    BertMultipleChoice,
    CheckpointHead(
        # One score per (context, choice) pair, stored `(1, hidden)`.
        groups={"multiple_choice": "classifier."},
        weights=lambda model: {
            "multiple_choice": {"classifier": model.output_dense}
        },
        descriptions={"multiple_choice": "multiple-choice head (classifier)"},
        huggingface_architecture="BertForMultipleChoice",
        config_from_checkpoint=_multiple_choice_config,
        huggingface_config=lambda model: {"classifier_dropout": model.dropout},
    ),
)


def _token_classifier_config(
    checkpoint, backbone_config, num_classes=None, dropout=None, labels=None
):
    """Classes and label names from the checkpoint, unless given.

    The number of classes comes from `classifier.weight`, the names from a
    Hugging Face `config.json`'s `id2label` (kept only when they are not
    `transformers`' placeholders `LABEL_<i>`).
    """
    has_head = "classifier.weight" in checkpoint.tensors
    if num_classes is None:
        if labels is not None:
            num_classes = len(labels)
        elif has_head:
            num_classes = int(checkpoint.tensors["classifier.weight"].shape[0])
        else:
            raise ValueError(
                f"{checkpoint.path} has no token classification head, so "
                "the number of classes is unknown. Pass it: "
                "`BertTokenClassifier.from_checkpoint(path, "
                "num_classes=..., labels=[...])`."
            )
    if labels is None and has_head:
        labels = _checkpoint_labels(checkpoint, num_classes)
    if dropout is None:
        dropout = backbone_config["dropout"]
    return {"num_classes": num_classes, "dropout": dropout, "labels": labels}


def _checkpoint_labels(checkpoint, num_classes):
    """`id2label` of a Hugging Face checkpoint, or `None`."""
    if checkpoint.format != "huggingface":
        return None
    with tf.io.gfile.GFile(checkpoint.config_path) as file:
        return labels_from_config(json.load(file), num_classes)


def _token_classifier_huggingface_config(model):
    names = model.label_names
    return {
        "id2label": {str(i): name for i, name in enumerate(names)},
        "label2id": {name: i for i, name in enumerate(names)},
        "classifier_dropout": model.dropout,
    }


register_checkpoint_head(
    BertTokenClassifier,
    CheckpointHead(
        groups={"token_classifier": "classifier."},
        weights=lambda model: {
            "token_classifier": {"classifier": model.output_dense}
        },
        descriptions={
            "token_classifier": "token classification head (classifier)"
        },
        huggingface_architecture="BertForTokenClassification",
        uses_pooler=False,
        config_from_checkpoint=_token_classifier_config,
        huggingface_config=_token_classifier_huggingface_config,
    ),
)


# What a checkpoint without sentence-transformers files gets (the class's
# defaults would be normalize=True; here nothing says the model was
# trained for cosine, so the raw mean is kept and a warning says so).
EMBEDDER_DEFAULTS = {"pooling": "mean", "normalize": False}


def _text_embedder_config(checkpoint, backbone_config, **kwargs):
    """Pooling and normalisation from the sentence-transformers files.

    Arguments given to `from_checkpoint` win over the files (and a given
    `pooling` replaces a Pooling module keras_bert cannot compute). A
    checkpoint without `modules.json` gets `EMBEDDER_DEFAULTS` for what
    was not given, with a logged warning.
    """
    given = {k: kwargs[k] for k in ("pooling", "normalize") if k in kwargs}
    try:
        found = read_sentence_transformers_config(checkpoint.path)
    except (ValueError, FileNotFoundError):
        if "pooling" not in given:
            raise
        found = {**EMBEDDER_DEFAULTS, "max_seq_length": None}
    if found is None:
        found = EMBEDDER_DEFAULTS
        defaulted = {k: v for k, v in found.items() if k not in given}
        if defaulted:
            logging.warning(
                "%s has no sentence-transformers modules.json, so nothing "
                "says how its sentence embeddings are pooled: using %s. "
                "Pass `pooling=` and `normalize=` to BertTextEmbedder."
                "from_checkpoint to choose.",
                checkpoint.path,
                ", ".join(f"{k}={v!r}" for k, v in defaulted.items()),
            )
    return {
        "pooling": given.get("pooling", found["pooling"]),
        "normalize": given.get("normalize", found["normalize"]),
    }


def _text_embedder_sequence_length(checkpoint):
    try:
        found = read_sentence_transformers_config(checkpoint.path)
    except (ValueError, FileNotFoundError):
        return None
    return found and found["max_seq_length"]


register_checkpoint_head(
    BertTextEmbedder,
    CheckpointHead(
        # No weights besides the backbone's: pooling is arithmetic.
        groups={},
        weights=_no_entries,
        # None: "auto" loading never picks it (a plain BertModel
        # checkpoint stays a backbone); saved as a BertModel.
        huggingface_architecture=None,
        uses_pooler=False,
        config_from_checkpoint=_text_embedder_config,
        sequence_length=_text_embedder_sequence_length,
    ),
)
