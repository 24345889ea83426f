"""LoRA on a backbone: enabled for training (`enable_lora`), and its updates
added into the kernels, a copy of a model to serve (`merge_lora`)."""

from keras_bert.models.backbone_of import backbone_of
from keras_bert.validation import check_positive_int


def merge_lora(model):
    """A copy of `model` with its LoRA updates added into the kernels.

    After `backbone.enable_lora(rank)`, each adapted dense layer computes
    with `kernel + A @ B`. The copy (`merged_copy(model)`) is the same
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
    if backbone_of(model).lora_rank is None:
        return model
    return merged_copy(model)


def merged_copy(model):
    """`model` rebuilt from its config without LoRA, holding its weights
    with the LoRA updates (if any) added into the kernels: always a new
    model, which can be changed without changing `model` (what
    `merge_lora` and `keras_bert.serving.served_copy` make).

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.

    Returns:
        A model of `model`'s class.
    """
    backbone = backbone_of(model)
    config = model.get_config()
    nested = config if model is backbone else config["backbone"]
    nested = nested.get("config", nested)
    nested.update(lora_rank=None, lora_target_layer_names=None)
    copy = type(model).from_config(config)

    merged_kernels, lora_weights = {}, set()
    for block in backbone.transformer_layers:
        for name in backbone.lora_target_layer_names or ():
            dense = getattr(block, name)
            merged_kernels[id(dense.base_kernel)] = dense.merged_kernel()
            lora_weights.update(
                (id(dense.lora_kernel_a), id(dense.lora_kernel_b))
            )
    sources = [w for w in model.weights if id(w) not in lora_weights]
    targets = copy.weights
    if [(w.name, tuple(w.shape)) for w in sources] != [
        (w.name, tuple(w.shape)) for w in targets
    ]:
        raise ValueError(
            f"Could not match the weights of {model.name!r} with those of "
            "its copy: is its config complete (`get_config` returning every "
            "constructor argument)?"
        )
    for target, source in zip(targets, sources):
        target.assign(merged_kernels.get(id(source), source))
    return copy


# --- Enabling LoRA on a backbone (`BertBackbone.enable_lora`) ---------------

# The dense layers of every `TransformerEncoderBlock` that LoRA can adapt.
LORA_TARGET_LAYER_NAMES = (
    "qkv_dense",
    "attention_output_dense",
    "intermediate_dense",
    "output_dense",
)
# The fused query | key | value projection: Hu et al. adapt the query and
# value projections, rank `r` each (`4 * hidden_dim * r` weights per
# block); one rank-`r` update of the fused `(hidden_dim, 3 * hidden_dim)`
# matrix has as many, and leaves the fused projection the fast paths
# compute as it is.
DEFAULT_LORA_TARGET_LAYER_NAMES = ("qkv_dense",)


def enable_lora(backbone, rank, target_layer_names=None):
    """Freezes `backbone` and adds trainable LoRA weights to its blocks.

    Calls Keras' own `Dense.enable_lora(rank)` on the dense layers named
    `target_layer_names` in every transformer block (`A` random, `B`
    zeros, so the outputs are unchanged until training moves `B`; scale
    `lora_alpha / rank` = 1) and freezes every other weight of the
    backbone: embeddings, LayerNorms, the other kernels, biases and the
    pooler. A task head built on the backbone stays trainable. Records
    `rank` and the targets on the backbone (`lora_rank`,
    `lora_target_layer_names`), which its `get_config` saves.

    Args:
        backbone: `keras_bert.BertBackbone`, without LoRA.
        rank: int. The rank of the update, from 1 to `hidden_dim`.
        target_layer_names: tuple of str or `None`. Names among
            `LORA_TARGET_LAYER_NAMES`. Defaults to `None`:
            `DEFAULT_LORA_TARGET_LAYER_NAMES`.
    """
    check_positive_int("rank", rank, hint="the LoRA rank, e.g. 8")
    if rank > backbone.hidden_dim:
        raise ValueError(
            "Received an invalid value for argument `rank`, expected at "
            f"most hidden_dim={backbone.hidden_dim} (a LoRA update of rank "
            "r has r columns; typical ranks are 4 to 16). Received: "
            f"rank={rank}"
        )
    if target_layer_names is None:
        target_layer_names = DEFAULT_LORA_TARGET_LAYER_NAMES
    if isinstance(target_layer_names, str):
        target_layer_names = (target_layer_names,)
    target_layer_names = tuple(target_layer_names)
    unknown = set(target_layer_names) - set(LORA_TARGET_LAYER_NAMES)
    if unknown or not target_layer_names:
        raise ValueError(
            "Received an invalid value for argument `target_layer_names`"
            f", expected names among {list(LORA_TARGET_LAYER_NAMES)}. "
            f"Received: target_layer_names={target_layer_names!r}"
        )
    if backbone.lora_rank is not None:
        raise ValueError(
            f"LoRA is already enabled on this backbone (rank "
            f"{backbone.lora_rank}); it can be enabled once. Build the "
            "backbone again to change the rank."
        )
    for variable in backbone.weights:
        variable.trainable = False
    for block in backbone.transformer_layers:
        for name in target_layer_names:
            getattr(block, name).enable_lora(rank)
    backbone.lora_rank = rank
    backbone.lora_target_layer_names = target_layer_names
