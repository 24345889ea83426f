"""Segment (token type) embedding."""

import keras
from keras import ops

from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.initializers import get_initializer
from keras_bert.validation import check_ids_in_range
from keras_bert.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_bert")
class SegmentEmbedding(keras.layers.Layer):
    """An embedding for the segment each token belongs to (A=0, B=1, ...).

    Args:
        num_segments: int. The number of segment ids. BERT uses 2.
        hidden_dim: int. The size of each segment vector.
        initializer: str or `keras.initializers.Initializer`. Initializer
            for the embedding table. Defaults to BERT's
            `TruncatedNormal(stddev=0.02)`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        segment_ids: int tensor of shape `(batch_size, sequence_length)`,
            values in `[0, num_segments)`.

    Returns a tensor of shape `(batch_size, sequence_length, hidden_dim)`.

    Example:
    ```python
    layer = keras_bert.layers.SegmentEmbedding(num_segments=2, hidden_dim=4)
    outputs = layer(np.array([[0, 0, 1, 1]]))  # (1, 4, 4)
    ```
    """

    def __init__(self, num_segments, hidden_dim, initializer=None, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("num_segments", num_segments)
        check_positive_int("hidden_dim", hidden_dim)
        self.num_segments = num_segments
        self.hidden_dim = hidden_dim
        self.initializer = get_initializer(initializer)

    def build(self, segment_ids_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.num_segments, self.hidden_dim),
            initializer=clone_initializer(self.initializer),
        )
        self.built = True

    def call(self, segment_ids):
        check_ids_in_range(segment_ids, self.num_segments, "segment_ids")
        segment_ids = ops.cast(segment_ids, "int32")
        embeddings = ops.cast(self.embeddings, self.compute_dtype)
        return ops.take(embeddings, segment_ids, axis=0)

    def compute_output_shape(self, segment_ids_shape):
        return tuple(segment_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_segments": self.num_segments,
                "hidden_dim": self.hidden_dim,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
