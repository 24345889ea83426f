"""The model a fine-tuning run starts from: pre-trained or a preset."""

from keras_bert.models import BertBackbone
from keras_bert.models.presets import preset_hub_id
from keras_bert.text import BertTokenizer


def load_task_model(
    model_class,
    init_checkpoint=None,
    preset=None,
    vocabulary=None,
    lowercase=True,
    sequence_length=None,
    **head_kwargs,
):
    """A task model and its tokenizer, from a checkpoint or a preset.

    With `init_checkpoint`, the backbone (and the head, where the
    checkpoint has one) are loaded from it and its `vocab.txt` gives the
    tokenizer. With `preset`, a `BertBackbone` preset gets random weights
    and an embedding table the size of `vocabulary`. What every
    fine-tuning recipe's `--init_checkpoint` / `--preset` flags do.

    Args:
        model_class: a task model class taking `(backbone, **head_kwargs)`
            and having `from_checkpoint(path, **head_kwargs)`, e.g.
            `keras_bert.BertClassifier`.
        init_checkpoint: str or `None`. A Hugging Face or Google BERT
            directory, a keras-bert pre-training output, a Hugging Face Hub
            id (`google-bert/bert-base-uncased`) or a trained preset name
            (`bert_base_en_uncased`).
        preset: str or `None`. Instead of `init_checkpoint`: a
            `BertBackbone` architecture with random weights (`bert_tiny`
            ... `bert_large`).
        vocabulary: str or `None`. The `vocab.txt` to use with `preset`.
        lowercase: bool. Whether the tokenizer lowercases, with `preset`.
        sequence_length: int or `None`. Tokens per example the model will
            read; checked against the backbone's positions.
        **head_kwargs: the head's arguments, e.g. `num_classes=3`.

    Returns:
        `(model, tokenizer)`.

    Example:
    ```python
    model, tokenizer = load_task_model(
        keras_bert.BertClassifier,
        init_checkpoint="google-bert/bert-base-uncased",
        num_classes=3,
    )
    ```
    """
    if bool(init_checkpoint) == bool(preset):
        raise ValueError(
            "Pass exactly one of `init_checkpoint` (pre-trained weights) and "
            f"`preset` (random weights). Received: init_checkpoint="
            f"{init_checkpoint!r}, preset={preset!r}"
        )
    if init_checkpoint:
        tokenizer = BertTokenizer.from_checkpoint(init_checkpoint)
        # The recipes build their own preprocessors: none is attached, so
        # their models and `.keras` files hold none.
        model = model_class.from_checkpoint(
            init_checkpoint, preprocessor=None, **head_kwargs
        )
    else:
        if preset_hub_id(preset):
            raise ValueError(
                f"preset={preset!r} names trained weights; `preset` builds "
                f"random ones. Pass init_checkpoint={preset!r}."
            )
        if not vocabulary:
            raise ValueError(
                f"preset={preset!r} has no vocabulary; pass "
                "`vocabulary=PATH/vocab.txt`."
            )
        tokenizer = BertTokenizer(vocabulary, lowercase=lowercase)
        # The embedding table fits the vocabulary it will be used with.
        backbone = BertBackbone.from_preset(
            preset, vocabulary_size=tokenizer.vocabulary_size()
        )
        model = model_class(backbone, **head_kwargs)
    positions = model.backbone.max_sequence_length
    if sequence_length is not None and sequence_length > positions:
        raise ValueError(
            f"sequence_length={sequence_length} exceeds the model's "
            f"{positions} positions. Use a sequence length of at most "
            f"{positions}."
        )
    return model, tokenizer
