"""The model an export serves: one function makes every serving variant.

`serving_copy(model, quantize=None, streams=None)` is the one place that
turns a trained model into what `keras_bert.serving.export_saved_model`
serves: LoRA updates added into the kernels, int8 weights, blocks that
infer as parallel streams. It checks the options against one table of the
combinations that cannot be served (`INCOMPATIBLE`), makes one copy
(`from_config`, then the weights), and changes the copy only, never the
model it was given. `merge_lora`, `quantized_copy` and
`head_parallel_copy` are this function with one option each.

The export's `precision` (`PRECISIONS`) needs no copy: bfloat16 matmuls
are how the blocks are traced (`serving_graph_bfloat16` in
`keras_bert.layers.block_implementations`), their weights cast to
bfloat16 as they are frozen into the graph; `check_serving_options`
checks it against the other options all the same.
"""

import keras

from keras_bert.layers.lora_dense import LoraDense
from keras_bert.layers.stream_layout import check_streams
from keras_bert.layers.stream_layout import freeze_stream_layout
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.validation import check_positive_int

# The values `serving_copy(quantize=...)` accepts.
QUANTIZATION_MODES = ("int8",)
# The values an export's `precision` accepts: the dtype of the encoder
# blocks' dense matmuls (`check_serving_options`).
PRECISIONS = ("float32", "bfloat16")

# Options that cannot be served together: (option, option) → why, and
# what to pass instead.
INCOMPATIBLE = {
    ("quantize", "streams"): (
        "the streams lay out float weights, and int8 weights run as one chain",
        "Pass one of them: quantize without streams for int8 weights, or "
        "streams without quantize for float weights in parallel streams.",
    ),
    ("quantize", "precision"): (
        "int8 weights run int8 matmuls, bfloat16 ones bfloat16 matmuls",
        "Pass one of them.",
    ),
}


def backbone_of(model):
    """`model` if it is a `BertBackbone`, else its `backbone`.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.

    Example:
    ```python
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    keras_bert.models.backbone_of(classifier) is backbone  # True
    ```
    """
    if isinstance(model, BertBackbone):
        return model
    backbone = getattr(model, "backbone", None)
    if not isinstance(backbone, BertBackbone):
        raise ValueError(
            f"Expected a keras_bert.BertBackbone or a task model built on "
            f"one; received a {type(model).__name__} without a `backbone`."
        )
    return backbone


def check_quantization_mode(mode):
    """Raises a `ValueError` unless `mode` is `None` or in
    `QUANTIZATION_MODES`."""
    if mode is not None and mode not in QUANTIZATION_MODES:
        raise ValueError(
            "Received an invalid value for argument `quantize`, expected "
            f"None (float weights) or one of {list(QUANTIZATION_MODES)}. "
            f"Received: quantize={mode!r}. Pass quantize='int8' for int8 "
            "weights."
        )


def is_quantized_layer(layer):
    """Whether `serving_copy(quantize=...)` quantizes `layer`: the dense
    layers (the blocks' `LoraDense`, the pooler and the heads' `Dense`) and
    the WordPiece `Embedding` table."""
    return isinstance(layer, LoraDense) or type(layer) in (
        keras.layers.Dense,
        keras.layers.Embedding,
    )


def check_precision(precision):
    """Raises a `ValueError` unless `precision` is in `PRECISIONS`."""
    if precision not in PRECISIONS:
        raise ValueError(
            "Received an invalid value for argument `precision`, expected "
            f"one of {list(PRECISIONS)}. Received: precision={precision!r}. "
            "Pass precision='bfloat16' for bfloat16 matmuls in the encoder."
        )


def check_serving_options(quantize=None, streams=None, precision="float32"):
    """Raises a `ValueError` naming the values and the fix unless each
    option is valid and `INCOMPATIBLE` allows them together (`precision`
    counts as given when it is not `"float32"`)."""
    check_quantization_mode(quantize)
    if streams is not None:
        check_positive_int("streams", streams)
    check_precision(precision)
    given = {
        "quantize": quantize,
        "streams": streams,
        "precision": None if precision == "float32" else precision,
    }
    for (first, second), (why, fix) in INCOMPATIBLE.items():
        if given[first] is not None and given[second] is not None:
            raise ValueError(
                f"Received {first}={given[first]!r} and "
                f"{second}={given[second]!r}: {why}. {fix}"
            )


def serving_copy(model, quantize=None, streams=None):
    """The copy of `model` that an export serves.

    In this order: LoRA updates are added into the kernels (one matmul per
    layer, no LoRA weights); with `quantize="int8"`, Keras'
    `quantize("int8")` is applied to every dense layer and the WordPiece
    table (`is_quantized_layer`: int8 kernels with a float32 scale per
    output column, the table with one per row; position and segment
    tables, LayerNorms and biases stay float32; on TensorFlow the blocks'
    matmuls run on the oneDNN int8 kernel, `keras_bert.layers.Int8Dense`);
    with `streams=N`, every block infers as `N` independent chains of heads
    and feed-forward units, which TensorFlow runs at the same time on its
    inter-op threads (`keras_bert.layers.stream_layout`; it pays on CPU
    with one intra-op thread and `N` inter-op threads; the copy's config
    records `streams`, so a saved `.keras` file of it keeps them). The copy
    computes `model`'s outputs (to float rounding; int8 to its rounding),
    and `model` itself is unchanged. A model with nothing to change (no
    LoRA, no option) is returned as it is.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.
        quantize: `None` or `"int8"`. Defaults to `None`: float weights.
        streams: `None` or int, from 1 to the number of heads: use the
            number of cores. Defaults to `None`: the blocks as they are.

    Returns:
        A model of `model`'s class with the same config (LoRA off,
        `streams` set) and weights, or `model`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
    served = keras_bert.models.serving_copy(backbone, streams=2)
    served.transformer_layers[0].streams  # 2
    ```
    """
    backbone = backbone_of(model)
    if streams is None:
        # A model configured with streams is served with a frozen layout.
        streams = getattr(backbone, "streams", None)
    check_serving_options(quantize, streams)
    check_streams(streams, backbone.num_heads)
    if backbone.lora_rank is None and quantize is None and streams is None:
        return model
    copy = _clone(model, backbone, streams=streams)
    if quantize is not None:
        copy.quantize(quantize, filters=is_quantized_layer)
    if streams is not None:
        for block in backbone_of(copy).transformer_layers:
            freeze_stream_layout(block)
    return copy


def _clone(model, backbone, **backbone_config):
    """`model` rebuilt from its config (without LoRA, with
    `backbone_config`), holding its weights with LoRA updates added."""
    config = model.get_config()
    nested = config if model is backbone else config["backbone"]
    nested = nested.get("config", nested)
    nested.update(
        lora_rank=None, lora_target_layer_names=None, **backbone_config
    )
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
            f"serving_copy could not match the weights of {model.name!r} "
            "with those of its copy: is its config complete (`get_config` "
            "returning every constructor argument)?"
        )
    for target, source in zip(targets, sources):
        target.assign(merged_kernels.get(id(source), source))
    return copy
