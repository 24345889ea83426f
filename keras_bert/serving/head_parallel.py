"""A copy of a model whose blocks infer as parallel streams, to serve."""

from keras_bert.serving.served_copy import serving_copy
from keras_bert.validation import check_positive_int


def head_parallel_copy(model, streams=2):
    """A copy of `model` whose blocks run inference as `streams` streams.

    `serving_copy(model, streams=streams)`: each block's heads and
    feed-forward units dealt out to `streams` independent chains, which
    TensorFlow runs at the same time on its inter-op threads (it pays on
    CPU with one intra-op thread and `streams` inter-op threads, see
    `keras_bert.serving.runtime.stream_layout`). `copy(inputs)` and
    `copy.predict` compute `model`'s outputs, to float rounding; `model`
    itself is unchanged. `keras_bert.serving.export_saved_model(model, ...,
    streams=N)` serves this copy.

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
    served = keras_bert.serving.head_parallel_copy(classifier, streams=2)
    served.backbone.transformer_layers[0].served_call.streams  # 2
    ```
    """
    check_positive_int("streams", streams)
    return serving_copy(model, streams=streams)
