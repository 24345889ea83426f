"""int8 weights: a quantized copy of a model to serve."""

import keras

from keras_bert.layers.lora_dense import LoraDense
from keras_bert.models.lora import merge_lora

# The values `quantized_copy` (and `export_saved_model(quantize=...)`)
# accept.
QUANTIZATION_MODES = ("int8",)


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
    """Whether `quantized_copy` quantizes `layer`: the dense layers (the
    blocks' `LoraDense`, the pooler and the heads' `Dense`) and the
    WordPiece `Embedding` table."""
    return isinstance(layer, LoraDense) or type(layer) in (
        keras.layers.Dense,
        keras.layers.Embedding,
    )


def quantized_copy(model, mode="int8"):
    """A copy of `model` with int8 weights (Keras' `model.quantize`).

    The copy is built from `model`'s config and weights (LoRA updates
    merged first, `merge_lora`), then `copy.quantize("int8")` is applied
    to every dense layer and the WordPiece embedding table: the kernels
    become int8 with one float32 scale per output column, the table int8
    with one scale per row; position and segment tables, LayerNorms and
    biases stay float32. On TensorFlow the blocks' dense layers multiply
    with the oneDNN int8 kernel, their inputs quantized per call
    (`keras_bert.layers.LoraDense`). `model` itself is unchanged.

    `keras_bert.serving.export_saved_model(model, ..., quantize="int8")`
    serves this copy. Calling `model.quantize("int8",
    filters=is_quantized_layer)` on a model of your own does the same in
    place.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.
        mode: str. `"int8"` (the only mode). Defaults to `"int8"`.

    Returns:
        A model of `model`'s class with int8 weights.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    int8 = keras_bert.models.quantized_copy(classifier)
    int8.backbone.transformer_layers[0].qkv_dense.quantization_mode  # 'int8'
    ```
    """
    check_quantization_mode(mode)
    if mode is None:
        raise ValueError(
            "Received an invalid value for argument `mode`, expected 'int8'."
            " Received: mode=None"
        )
    model = merge_lora(model)
    copy = type(model).from_config(model.get_config())
    copy.set_weights(model.get_weights())
    copy.quantize(mode, filters=is_quantized_layer)
    return copy
