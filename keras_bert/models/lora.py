"""LoRA's updates added into the kernels: a copy of a model to serve."""

from keras_bert.models.serving_copy import serving_copy


def merge_lora(model):
    """A copy of `model` with its LoRA updates added into the kernels.

    After `backbone.enable_lora(rank)`, each adapted dense layer computes
    with `kernel + A @ B`. The copy (`serving_copy(model)`) is the same
    model without LoRA, built from `model`'s config, whose every weight is
    `model`'s and whose adapted kernels hold `kernel + A @ B` (in
    float32): it computes the same outputs, to float rounding, with one
    matmul per layer and no LoRA weights. `keras_bert.serving.
    export_saved_model` serves this copy. `model` itself is unchanged and
    keeps training. A model without LoRA is returned as it is.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.

    Returns:
        A model of `model`'s class, or `model` itself without LoRA.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    backbone.enable_lora(rank=2)
    merged = keras_bert.models.merge_lora(classifier)
    merged.backbone.lora_rank  # None
    ```
    """
    return serving_copy(model)
