"""One score per document from the scores of its windows: mean or max."""

import keras
from keras import ops

# How `WindowAggregation` combines a document's window scores.
AGGREGATIONS = ("mean", "max")


def check_aggregation(aggregation):
    """Raises unless `aggregation` is one of `AGGREGATIONS`."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(
            "Received an invalid value for argument `aggregation`, expected "
            f"one of {', '.join(repr(a) for a in AGGREGATIONS)}. Received: "
            f"aggregation={aggregation!r}"
        )


@keras.saving.register_keras_serializable(package="keras_bert")
class WindowAggregation(keras.layers.Layer):
    """Aggregates the logits of each document's windows into one row.

    `"mean"` averages a document's window logits (the aggregation of
    long-document classification by overlapping windows, as a
    `transformers` user averages the logits of a tokenizer's overflowing
    windows); `"max"` takes each class's largest logit over the windows
    (a class wins if any part of the document speaks for it). Runs in
    float32. A document without any window (never the case for what
    `DocumentWindows` cuts) gets logits of 0.

    Args:
        aggregation: str. `"mean"` or `"max"`. Defaults to `"mean"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        window_logits: float tensor `(num_windows, num_classes)`.
        document: int tensor `(num_windows,)`: each window's document,
            in `[0, batch_size)` (`WindowRows` gives it).
        padding_mask: the documents' `(batch_size, windows,
            sequence_length)` mask; only its first axis is read (the
            number of documents).

    Returns a float32 tensor `(batch_size, num_classes)`.

    Example:
    ```python
    logits = np.array([[1.0, 4.0], [3.0, 0.0], [5.0, 5.0]])
    document = np.array([0, 0, 1])
    mask = np.ones((2, 2, 3), "int32")
    keras_bert.layers.WindowAggregation("mean")(logits, document, mask)
    # [[2., 2.], [5., 5.]]
    keras_bert.layers.WindowAggregation("max")(logits, document, mask)
    # [[3., 4.], [5., 5.]]
    ```
    """

    def __init__(self, aggregation="mean", **kwargs):
        check_aggregation(aggregation)
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.aggregation = aggregation

    def call(self, window_logits, document, padding_mask):
        logits = ops.cast(window_logits, "float32")
        document = ops.cast(document, "int32")
        documents = ops.shape(padding_mask)[0]
        count = ops.segment_sum(
            ops.ones_like(logits[:, :1]), document, num_segments=documents
        )  # (batch, 1)
        if self.aggregation == "mean":
            total = ops.segment_sum(logits, document, num_segments=documents)
            return total / ops.maximum(count, 1.0)
        largest = ops.segment_max(logits, document, num_segments=documents)
        return ops.where(count > 0, largest, 0.0)

    def compute_output_spec(self, window_logits, document, padding_mask):
        return keras.KerasTensor(
            (padding_mask.shape[0], window_logits.shape[-1]), "float32"
        )

    def get_config(self):
        config = super().get_config()
        config["aggregation"] = self.aggregation
        return config
