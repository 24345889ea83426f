"""LoRA's updates added into the kernels: a copy of a model to serve."""

from keras_bert.models.bert_backbone import BertBackbone


def merge_lora(model):
    """A copy of `model` with its LoRA updates added into the kernels.

    After `backbone.enable_lora(rank)`, each adapted dense layer computes
    with `kernel + A @ B`. The copy is the same model without LoRA, built
    from `model`'s config, whose every weight is `model`'s and whose
    adapted kernels hold `kernel + A @ B` (in float32): it computes the
    same outputs, to float rounding, with one matmul per layer and no
    LoRA weights. `keras_bert.serving.export_saved_model` serves this
    copy. `model` itself is unchanged and keeps training. A model without
    LoRA is returned as it is.

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
    backbone = model if isinstance(model, BertBackbone) else model.backbone
    if backbone.lora_rank is None:
        return model
    config = model.get_config()
    backbone_config = config if model is backbone else config["backbone"]
    backbone_config = backbone_config.get("config", backbone_config)
    backbone_config.update(lora_rank=None, lora_target_layer_names=None)
    merged = type(model).from_config(config)

    merged_kernels = {}
    lora_weights = set()
    for block in backbone.transformer_layers:
        for name in backbone.lora_target_layer_names:
            dense = getattr(block, name)
            merged_kernels[id(dense.base_kernel)] = dense.merged_kernel()
            lora_weights.update(
                (id(dense.lora_kernel_a), id(dense.lora_kernel_b))
            )
    sources = [w for w in model.weights if id(w) not in lora_weights]
    targets = merged.weights
    if [(w.name, tuple(w.shape)) for w in sources] != [
        (w.name, tuple(w.shape)) for w in targets
    ]:
        raise ValueError(
            f"merge_lora could not match the weights of {model.name!r} with "
            "those of its copy without LoRA: is its config complete "
            "(`get_config` returning every constructor argument)?"
        )
    for target, source in zip(targets, sources):
        target.assign(merged_kernels.get(id(source), source))
    return merged
