"""A copy of a model whose blocks infer as parallel streams, to serve."""

from keras_bert.layers.head_parallel_block import HeadParallelBlock
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.lora import merge_lora
from keras_bert.validation import check_positive_int


def head_parallel_copy(model, streams=2):
    """A copy of `model` whose blocks run inference as `streams` streams.

    Every `TransformerEncoderBlock` of the copy gets a
    `keras_bert.layers.HeadParallelBlock` holding its weights (LoRA
    updates merged), set with `set_inference_layer`: `copy(inputs)` and
    `copy.predict` compute the same outputs as `model`, to float rounding,
    with each block's heads and feed-forward units dealt out to `streams`
    independent chains, which TensorFlow runs at the same time on its
    inter-op threads. That pays on CPU with one intra-op thread and
    `streams` inter-op threads (see `keras_bert.layers.head_parallel_block`
    for the measurements); training the copy trains its blocks as usual,
    and the streams do not follow. `model` itself is unchanged.

    `keras_bert.serving.export_saved_model(model, ..., streams=N)` serves
    this copy.

    Args:
        model: a `keras_bert.BertBackbone` or a task model built on one.
        streams: int. Number of streams, from 1 to the number of heads;
            use the number of cores. Defaults to `2`.

    Returns:
        A model of `model`'s class with the same weights.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=2)
    served = keras_bert.models.head_parallel_copy(classifier, streams=2)
    served.backbone.transformer_layers[0].inference_layer.streams  # 2
    ```
    """
    check_positive_int("streams", streams)
    model = merge_lora(model)
    copy = type(model).from_config(model.get_config())
    copy.set_weights(model.get_weights())
    for block in backbone_of(copy).transformer_layers:
        block.set_inference_layer(HeadParallelBlock.from_block(block, streams))
    return copy


def inference_layers(model):
    """The layers that `model`'s blocks infer with (`head_parallel_copy`),
    for an exporter to track; empty for a model without them."""
    blocks = backbone_of(model).transformer_layers
    return [block.inference_layer for block in blocks if block.inference_layer]


def backbone_of(model):
    """`model` if it is a `BertBackbone`, else its `backbone`."""
    if isinstance(model, BertBackbone):
        return model
    backbone = getattr(model, "backbone", None)
    if not isinstance(backbone, BertBackbone):
        raise ValueError(
            f"Expected a keras_bert.BertBackbone or a task model built on "
            f"one; received a {type(model).__name__} without a `backbone`."
        )
    return backbone
