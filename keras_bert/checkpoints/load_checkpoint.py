"""Builds a model from a checkpoint's config and loads its weights, whole."""

import inspect
import json
from contextlib import nullcontext

import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert.checkpoints.heads import checkpoint_head
from keras_bert.checkpoints.heads import registered_heads
from keras_bert.checkpoints.read_checkpoint import read_checkpoint
from keras_bert.checkpoints.read_checkpoint import read_checkpoint_config
from keras_bert.checkpoints.weight_map import group_prefixes
from keras_bert.checkpoints.weight_map import weight_map
from keras_bert.layers.initializers import encoder_assigned_next
from keras_bert.models.backbone_of import backbone_of
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.task import Task
from keras_bert.text.bert_preprocessor import BertPreprocessor
from keras_bert.text.bert_tokenizer import BertTokenizer
from keras_bert.text.tokenizer_json import NotWordPieceError

# Tied copies PyTorch may save beside the tensors they duplicate.
_TIED = {
    "cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}
_FORMAT_NAMES = {
    "huggingface": "Hugging Face",
    "google": "Google BERT",
    "keras_hub": "keras-hub preset",
}
_POOLER_DESCRIPTION = (
    "pooler (bert.pooler; BertForMaskedLM checkpoints have none)"
)
# Backbone arguments a caller may override (e.g. `dropout`, `dtype`).
_BACKBONE_ARGUMENTS = frozenset(
    inspect.signature(BertBackbone.__init__).parameters
) | {"dtype"}
# Arguments of every task model that choose its preprocessor.
PREPROCESSOR_ARGUMENTS = frozenset({"preprocessor", "sequence_length"})
# `preprocessor` not given: build the checkpoint's (`preprocessor=None`
# attaches none).
_DEFAULT = object()


def load_checkpoint(
    path, model_class=BertBackbone, load_weights=True, **kwargs
):
    """Builds `model_class` from a checkpoint directory and loads its weights.

    The architecture comes from the checkpoint's config (see
    `read_checkpoint`). Loading is all-or-nothing:

    - every encoder weight must be in the checkpoint with the right shape;
    - the pooler and each head group of the model (its checkpoint head's
      `groups`: masked LM, next sentence, classifier, ...) are
      loaded whole when the checkpoint has any of their
      tensors, and must then be complete; one with no tensors at all stays
      freshly initialised and is named in a warning (`BertForMaskedLM`
      checkpoints have no pooler, encoder-only ones no heads);
    - a tensor under `bert.` (or under a head being loaded) that the model
      has no place for is an error: the config and weights disagree;
    - tensors of heads the model does not have (e.g. `cls.*` when loading a
      backbone, or a checkpoint's custom heads) are skipped and logged.

    Every problem is collected first and reported in one `ValueError`,
    with the names as spelled in the files and both shapes; no variable is
    assigned unless all checks pass.

    A task model gets the checkpoint's tokenizer as its `preprocessor`
    (see `Task.from_checkpoint`): a `BertPreprocessor` of
    `BertTokenizer.from_checkpoint(path)` (vocabulary and casing from the
    checkpoint) with `model_class.DEFAULT_SEQUENCE_LENGTH` tokens, unless
    `sequence_length` or `preprocessor` is given. A checkpoint without a
    vocabulary, or whose `tokenizer.json` is no WordPiece one (BPE,
    Unigram), gets none, with a logged warning saying why.

    Args:
        path: str. A Hugging Face or Google BERT checkpoint directory.
        model_class: `BertBackbone` or a task model class
            (`keras_bert.models.Task`: `BertMaskedLM`, `BertClassifier`,
            ...) with a registered checkpoint head (see
            `keras_bert.checkpoints.heads`), or `"auto"`: the task class
            named by a Hugging Face config's `architectures`, else the first
            task class whose head tensors are in the checkpoint, else
            `BertBackbone`. Defaults to `BertBackbone`.
        **kwargs: the task head's constructor arguments (e.g.
            `num_classes` for `BertClassifier`; its checkpoint head's
            `config_from_checkpoint` says what the checkpoint supplies) and
            overrides of the backbone config (e.g. `dropout=0.0`,
            `dtype="mixed_bfloat16"`). A name that is both (`dropout`)
            goes to both. A task model also takes `sequence_length` (of
            the preprocessor built from the checkpoint) or `preprocessor`
            (its own, or `None` for none).
        load_weights: bool. `False` reads the config alone and leaves the
            weights as initialised (random); a Hub id then fetches the
            config and vocabulary, not the weights. Defaults to `True`.

    Returns the model, with weights loaded.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    keras_bert.checkpoints.save_huggingface(backbone, None, "tiny_bert")
    restored = load_checkpoint("tiny_bert")
    classifier = load_checkpoint(
        "tiny_bert", keras_bert.BertClassifier, num_classes=2
    )
    ```
    """
    if load_weights:
        checkpoint = read_checkpoint(path)
    else:
        checkpoint = read_checkpoint_config(path)
    if model_class == "auto":
        model_class = _detect_model_class(checkpoint)
    backbone_kwargs, head_kwargs, preprocessor_kwargs = split_arguments(
        model_class, kwargs, "from_checkpoint"
    )
    backbone_config = {**checkpoint.backbone_config, **backbone_kwargs}
    # LoRA goes on once the checkpoint's kernels are assigned.
    lora_rank = backbone_config.pop("lora_rank", None)
    lora_targets = backbone_config.pop("lora_target_layer_names", None)
    # Every encoder weight is assigned below (or the load fails): not
    # drawn at random first (`encoder_assigned_next`).
    building = encoder_assigned_next() if load_weights else nullcontext()
    if issubclass(model_class, BertBackbone):
        with building:
            model = model_class(**backbone_config)
    else:
        head_config = checkpoint_head(model_class).config_from_checkpoint(
            checkpoint, backbone_config, **head_kwargs
        )
        preprocessor_kwargs = _checkpoint_sequence_length(
            checkpoint, model_class, backbone_config, preprocessor_kwargs
        )
        preprocessor = checkpoint_preprocessor(
            path, model_class, backbone_config, **preprocessor_kwargs
        )
        with building:
            backbone = BertBackbone(**backbone_config)
        model = model_class(
            backbone,
            preprocessor=preprocessor,
            **head_config,
        )
    if load_weights:
        assign_checkpoint(model, checkpoint)
    if lora_rank is not None:
        backbone = backbone_of(model)
        backbone.enable_lora(lora_rank, lora_targets)
    return model


def _checkpoint_sequence_length(
    checkpoint, model_class, backbone_config, preprocessor_kwargs
):
    """`preprocessor_kwargs`, with the checkpoint's own sequence length
    (its head's `sequence_length`, at most the model's positions) when the
    caller chose none."""
    if preprocessor_kwargs:
        return preprocessor_kwargs
    length = checkpoint_head(model_class).sequence_length(checkpoint)
    if length is None:
        return preprocessor_kwargs
    positions = backbone_config["max_sequence_length"]
    return {"sequence_length": min(int(length), positions)}


def split_arguments(model_class, kwargs, method):
    """Splits the keyword arguments of `model_class.<method>` three ways.

    Returns `(backbone, head, preprocessor)` dicts: overrides of the
    backbone config, the head's constructor arguments and, for a task
    model, `preprocessor` / `sequence_length`. A name that is both a
    backbone and a head argument (`dropout`) goes to both.

    Raises:
        TypeError: `model_class` is no keras_bert model class.
        ValueError: an argument `model_class` does not take, naming who
            takes it.
    """
    if not isinstance(model_class, type) or not issubclass(
        model_class, (BertBackbone, Task)
    ):
        raise TypeError(
            "`model_class` must be BertBackbone, a keras_bert task model "
            "class (BertMaskedLM, BertClassifier, ...) or 'auto'. Received: "
            f"model_class={model_class!r}"
        )
    head_arguments, task_arguments = set(), set()
    if issubclass(model_class, Task):
        checkpoint_head(model_class)  # fails early for an unregistered head
        head_arguments = _arguments(model_class) - {
            "self",
            "backbone",
            "kwargs",
        }
        task_arguments = PREPROCESSOR_ARGUMENTS
    name = f"{model_class.__name__}.{method}"
    if issubclass(model_class, BertBackbone) and (
        set(kwargs) & PREPROCESSOR_ARGUMENTS
    ):
        given = sorted(set(kwargs) & PREPROCESSOR_ARGUMENTS)
        raise ValueError(
            f"{name} received {', '.join(f'{n}=...' for n in given)}, "
            "but BertBackbone has no preprocessor: it takes token ids (as "
            "keras-hub's backbone does). Load a task model, which attaches "
            "one, or build one yourself: "
            "`keras_bert.BertPreprocessor(keras_bert.BertTokenizer."
            "from_checkpoint(path), sequence_length=...)`."
        )
    allowed = head_arguments | task_arguments | _BACKBONE_ARGUMENTS
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        owners = {
            name: [
                task.__name__
                for task in Task.registry
                if name in _arguments(task)
            ]
            for name in unknown
        }
        problems = [
            f"`{name}` applies to {' and '.join(owners[name])} only"
            if owners[name]
            else f"`{name}` is no argument of any keras_bert model"
            for name in unknown
        ]
        own = sorted(head_arguments | task_arguments)
        raise ValueError(
            f"{name} received "
            f"{', '.join(f'{n}={kwargs[n]!r}' for n in unknown)}: "
            f"{'; '.join(problems)}. It takes "
            f"{model_class.__name__}'s own arguments ({own}) and "
            "BertBackbone overrides "
            f"({sorted(_BACKBONE_ARGUMENTS - {'self', 'kwargs'})})."
        )
    return (
        {k: v for k, v in kwargs.items() if k in _BACKBONE_ARGUMENTS},
        {k: v for k, v in kwargs.items() if k in head_arguments},
        {k: v for k, v in kwargs.items() if k in task_arguments},
    )


def checkpoint_preprocessor(
    source,
    model_class,
    backbone_config,
    preprocessor=_DEFAULT,
    sequence_length=None,
):
    """The preprocessor a task model loaded from `path` gets.

    Args:
        source: str or `keras_bert.BertTokenizer`. What
            `BertTokenizer.from_checkpoint` takes, or the tokenizer.
        model_class: the task model class; its `DEFAULT_SEQUENCE_LENGTH`
            (or the backbone's positions, if fewer) is the preprocessor's
            length unless `sequence_length` is given.
        backbone_config: dict. The backbone's arguments (its positions
            bound `sequence_length`).
        preprocessor: a `keras_bert.BertPreprocessor` or `None`, returned
            as it is. Defaults to the checkpoint's tokenizer's.
        sequence_length: int or `None`. Tokens per example.

    Returns a `keras_bert.BertPreprocessor`, or `None` where `source` has
    no vocabulary `BertTokenizer` reads (a logged warning says so).
    """
    if preprocessor is not _DEFAULT:
        if sequence_length is not None:
            raise ValueError(
                "Pass `sequence_length` (of the preprocessor built from the "
                "checkpoint's vocabulary) or `preprocessor` (your own), not "
                f"both. Received: sequence_length={sequence_length!r}, "
                f"preprocessor={preprocessor!r}"
            )
        return preprocessor
    positions = backbone_config["max_sequence_length"]
    if sequence_length is None:
        # A model with fewer positions reads as many as it has.
        sequence_length = min(model_class.DEFAULT_SEQUENCE_LENGTH, positions)
    elif isinstance(sequence_length, int) and sequence_length > positions:
        raise ValueError(
            f"sequence_length={sequence_length} exceeds the model's "
            f"{positions} positions. Use a sequence length of at most "
            f"{positions}."
        )
    if isinstance(source, BertTokenizer):
        return BertPreprocessor(source, sequence_length=sequence_length)
    path = source
    try:
        tokenizer = BertTokenizer.from_checkpoint(path)
    except (FileNotFoundError, NotWordPieceError) as error:
        logging.warning(
            "%s: no preprocessor attached, because the checkpoint's "
            "vocabulary cannot be read (%s). The model takes token ids; "
            "for raw text pass `preprocessor=keras_bert.BertPreprocessor("
            "keras_bert.BertTokenizer(vocabulary), sequence_length=...)`.",
            path,
            error,
        )
        return None
    logging.info(
        "Attached a BertPreprocessor of %s: sequence_length=%d, lowercase=%s.",
        path,
        sequence_length,
        tokenizer.lowercase,
    )
    return BertPreprocessor(tokenizer, sequence_length=sequence_length)


def assign_checkpoint(model, checkpoint):
    """Checks `checkpoint` against `model` completely, then assigns it.

    Args:
        model: `BertBackbone` or a task model.
        checkpoint: `keras_bert.checkpoints.Checkpoint`.

    Returns the names of the groups (`"pooler"`, heads) left freshly
    initialised because the checkpoint has none of their tensors.

    Raises:
        ValueError: listing every missing, mis-shaped and unexpected tensor.
    """
    tensors = checkpoint.tensors
    groups = weight_map(model)
    missing, mismatched, consumed, fresh = [], [], set(), []
    to_assign = []
    for group, specs in groups.items():
        names = [name for spec in specs for name in spec.names]
        if group != "backbone" and not any(n in tensors for n in names):
            fresh.append(group)
            continue
        for spec in specs:
            ok = True
            for index, name in enumerate(spec.names):
                expected = spec.expected_shape(index)
                if name not in tensors:
                    missing.append((name, expected))
                    ok = False
                    continue
                consumed.add(name)
                if tuple(tensors[name].shape) != expected:
                    mismatched.append((name, tensors[name].shape, expected))
                    ok = False
            if ok:
                to_assign.append(spec)
    inconsistent = _check_tied_copies(checkpoint, consumed)
    prefixes = group_prefixes(model)
    loaded_prefixes = tuple(
        prefixes[group] for group in groups if group not in fresh
    )
    unexpected, skipped = [], []
    for name in sorted(set(tensors) - consumed):
        if name.startswith(loaded_prefixes):
            unexpected.append(name)
        else:
            skipped.append(name)
    if missing or mismatched or unexpected or inconsistent:
        raise ValueError(
            _report(
                model, checkpoint, missing, mismatched, unexpected, inconsistent
            )
        )
    for spec in to_assign:
        values = [checkpoint.get(name) for name in spec.names]
        spec.variable.assign(spec.to_keras(values))
    if skipped:
        logging.info(
            "Skipped %d tensors of %s that %s has no place for (heads of "
            "another task): %s",
            len(skipped),
            checkpoint.path,
            type(model).__name__,
            ", ".join(checkpoint.source_name(n) for n in skipped),
        )
    head = None if isinstance(model, BertBackbone) else checkpoint_head(model)
    descriptions = {
        "pooler": _POOLER_DESCRIPTION,
        **(head.descriptions if head else {}),
    }
    if head and not head.uses_pooler and "pooler" in fresh:
        fresh.remove("pooler")  # unused: nothing to warn about
    for group in fresh:
        logging.warning(
            "%s has no %s: it is freshly initialised. Train it before "
            "relying on the outputs that depend on it.",
            checkpoint.path,
            descriptions.get(group, f"{group} head ({prefixes[group]}*)"),
        )
    return fresh


def _check_tied_copies(checkpoint, consumed):
    """Tied copies must equal what they copy: our model cannot untie them."""
    problems = []
    for copy, original in _TIED.items():
        if copy not in checkpoint.tensors:
            continue
        consumed.add(copy)
        if original not in checkpoint.tensors:
            continue
        if not np.array_equal(checkpoint.get(copy), checkpoint.get(original)):
            problems.append(
                f"{checkpoint.source_name(copy)} differs from "
                f"{checkpoint.source_name(original)}; keras_bert ties the "
                "output projection to the token embedding (as BERT does) "
                "and cannot hold two different matrices."
            )
    return problems


def _report(model, checkpoint, missing, mismatched, unexpected, inconsistent):
    count = len(missing) + len(mismatched) + len(unexpected) + len(inconsistent)
    lines = [
        f"Cannot load the {_FORMAT_NAMES[checkpoint.format]} checkpoint at "
        f"{checkpoint.path} into {type(model).__name__}: {count} problem(s); "
        "no weight was loaded."
    ]
    if missing:
        lines.append(f"Missing from the checkpoint ({len(missing)}):")
        lines += [
            f"  {checkpoint.source_name(name)}: model expects shape "
            f"{checkpoint.source_shape(name, shape)}"
            for name, shape in missing
        ]
    if mismatched:
        lines.append(f"Wrong shape ({len(mismatched)}):")
        lines += [
            f"  {checkpoint.source_name(name)}: checkpoint has shape "
            f"{checkpoint.source_shape(name, got)}, model expects "
            f"{checkpoint.source_shape(name, expected)}"
            for name, got, expected in mismatched
        ]
    if unexpected:
        lines.append(f"Unexpected in the checkpoint ({len(unexpected)}):")
        lines += [
            f"  {checkpoint.source_name(name)}: shape "
            f"{checkpoint.source_shape(name, checkpoint.tensors[name].shape)}"
            for name in unexpected
        ]
    if inconsistent:
        lines.append("Inconsistent tied weights:")
        lines += [f"  {problem}" for problem in inconsistent]
    encoder = [n for n, _ in missing if n.startswith("bert.")]
    if encoder and not any(n.startswith("bert.") for n in checkpoint.tensors):
        found = [checkpoint.source_name(n) for n in sorted(checkpoint.tensors)]
        lines.append(
            "None of the encoder's tensors is in the checkpoint under a BERT "
            f"name; it holds e.g. {found[:5]}. Is it a BERT checkpoint in "
            "the Hugging Face or original Google layout?"
        )
    lines.append(
        f"Check that {checkpoint.config_path} is the config saved with these "
        "weights (layer count, sizes, vocabulary) and that the files are "
        "complete."
    )
    return "\n".join(lines)


def _detect_model_class(checkpoint):
    architectures = _architectures(checkpoint)
    heads = registered_heads()
    for task_class, head in heads.items():
        if head.huggingface_architecture in architectures:
            return task_class
    names = checkpoint.tensors
    for task_class, head in heads.items():
        prefixes = tuple(head.groups.values())
        if prefixes and any(n.startswith(prefixes) for n in names):
            return task_class
    return BertBackbone


def _architectures(checkpoint):
    if checkpoint.format != "huggingface":
        return []
    with tf.io.gfile.GFile(checkpoint.config_path) as file:
        return json.load(file).get("architectures") or []


def _arguments(task):
    """The names a task class's constructor takes: its signature's, and
    those it takes in `**kwargs` (`KEYWORD_ARGUMENTS`, e.g.
    `BertClassifier`'s `multi_label` and `doc_stride`)."""
    parameters = set(inspect.signature(task.__init__).parameters)
    return parameters | set(getattr(task, "KEYWORD_ARGUMENTS", ()))
