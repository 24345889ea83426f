"""The model an export serves: a copy with the serving plan applied.

`served_copy(model, plan)` is the one place that turns a trained model
into what `keras_bert.serving.export_saved_model` serves, as the plan
(`keras_bert.serving.plan`) says: one copy (`from_config`, then the
weights, LoRA updates added into the kernels), int8 weights where the
plan has them (calibrated on the texts given), the blocks' weights laid
out per stream, and each served block's `served_call` and the embedding's
set to the serving implementation the plan names
(`keras_bert.serving.runtime`). The copy is changed, never the model it
was given. `serving_copy`, `quantized_copy` and `head_parallel_copy` are
this function for use in Python (weights read as variables).
"""

import keras

from keras_bert.layers.lora_dense import LoraDense
from keras_bert.models.backbone_of import backbone_of
from keras_bert.models.lora import merged_copy
from keras_bert.serving.int8_calibration import calibrate_int8_ranges
from keras_bert.serving.plan import plan_export
from keras_bert.serving.runtime.block import BlockServing
from keras_bert.serving.runtime.block import int8_ranges_of
from keras_bert.serving.runtime.embedding import served_embedding
from keras_bert.serving.runtime.embedding import served_embedding_without_forms
from keras_bert.serving.runtime.stream_layout import freeze_stream_layout


def is_quantized_layer(layer):
    """Whether an int8 plan quantizes `layer`: the dense layers (the
    blocks' `LoraDense`, the pooler and the heads' `Dense`) and the
    WordPiece `Embedding` table."""
    return isinstance(layer, LoraDense) or type(layer) in (
        keras.layers.Dense,
        keras.layers.Embedding,
    )


def served_copy(model, plan, preprocessor=None, calibration_texts=None):
    """The copy of `model` that `plan` serves.

    In this order: LoRA updates are added into the kernels (one matmul per
    layer, no LoRA weights); with int8 weights, Keras' `quantize("int8")`
    is applied to every dense layer and the WordPiece table
    (`is_quantized_layer`: int8 kernels with a float32 scale per output
    column, the table with one per row; position and segment tables,
    LayerNorms and biases stay float32), and with calibrated ones the copy
    runs on `calibration_texts` to record each block's input ranges
    (`keras_bert.serving.int8_calibration`); with streams, each block's
    weights are laid out per stream (`stream_layout`); then every block's
    `served_call` is the plan's implementation, and the embedding's its
    serving form (ids out of the vocabulary refused; its LayerNorm in the
    remapper's form where the plan runs those forms).

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.
        plan: a `keras_bert.serving.plan.ServingPlan` (`plan_export`).
        preprocessor: the `keras_bert.BertPreprocessor` the model serves
            with; needed for a calibrated plan.
        calibration_texts: with a calibrated plan, the texts to calibrate
            on (a list of strings; for pairs a tuple of two lists).

    Returns:
        A new model of `model`'s class; `model` is unchanged.
    """
    copy = merged_copy(model)
    if plan.weights != "float32":
        copy.quantize("int8", filters=is_quantized_layer)
    backbone = backbone_of(copy)
    ranges = None
    if plan.weights == "int8_calibrated":
        ranges = calibrate_int8_ranges(copy, preprocessor, calibration_texts)
    backbone.embedding.served_call = (
        served_embedding
        if plan.remapper_forms
        else served_embedding_without_forms
    )
    implementation = plan.implementation
    if implementation is None:  # the blocks' own inference
        return copy
    for block in backbone.transformer_layers:
        if plan.streams:
            freeze_stream_layout(block, plan.streams)
        block.served_call = BlockServing(
            implementation,
            frozen=plan.frozen,
            streams=plan.streams,
            int8_ranges=None
            if ranges is None
            else int8_ranges_of(block, ranges),
        )
    return copy


def serving_copy(model, quantize=None, streams=None):
    """What an export of `model` with these options serves, as a Keras
    model to call in Python (its weights read as variables, not frozen).

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.
        quantize: `None` or `"int8"`. Defaults to `None`: float weights.
        streams: `None` or int, from 1 to the number of heads: use the
            number of cores. Defaults to `None`.

    Returns:
        A new model of `model`'s class computing `model`'s outputs (to
        float rounding; int8 to its rounding); `model` is unchanged.

    Example:
    ```python
    backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
    served = keras_bert.serving.serving_copy(backbone, streams=2)
    served.transformer_layers[0].served_call.streams  # 2
    ```
    """
    plan = plan_export(model, quantize=quantize, streams=streams, frozen=False)
    return served_copy(model, plan)
