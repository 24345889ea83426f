"""int8 weights: a quantized copy of a model to serve."""

from keras_bert.serving.served_copy import serving_copy


def quantized_copy(model, mode="int8"):
    """A copy of `model` with int8 weights (Keras' `model.quantize`).

    `serving_copy(model, quantize=mode)`: LoRA updates merged first, then
    `copy.quantize("int8")` on every dense layer and the WordPiece
    embedding table (`is_quantized_layer`): the kernels become int8 with
    one float32 scale per output column, the table int8 with one scale per
    row; position and segment tables, LayerNorms and biases stay float32.
    On TensorFlow the blocks' dense layers multiply with the oneDNN int8
    kernel, their inputs quantized per call
    (`keras_bert.layers.Int8Dense`). `model` itself is unchanged.

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
    int8 = keras_bert.serving.quantized_copy(classifier)
    int8.backbone.transformer_layers[0].qkv_dense.quantization_mode  # 'int8'
    ```
    """
    if mode is None:
        raise ValueError(
            "Received an invalid value for argument `mode`, expected 'int8'."
            " Received: mode=None"
        )
    return serving_copy(model, quantize=mode)
