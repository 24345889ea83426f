"""Learned absolute position embedding."""

import keras
from keras import ops

from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.initializers import get_initializer
from keras_bert.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_bert")
class PositionEmbedding(keras.layers.Layer):
    """A learned embedding for each position `0 .. max_sequence_length - 1`.

    The layer takes any tensor whose first two axes are
    `(batch_size, sequence_length)` (token ids or already embedded tokens)
    and returns the position vectors for those positions, broadcast to
    `(batch_size, sequence_length, hidden_dim)`.

    Args:
        max_sequence_length: int. The longest sequence the layer can embed.
        hidden_dim: int. The size of each position vector.
        initializer: str or `keras.initializers.Initializer`. Initializer
            for the embedding table. Defaults to BERT's
            `TruncatedNormal(stddev=0.02)`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`
            (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: a tensor of shape `(batch_size, sequence_length, ...)`.

    Example:
    ```python
    layer = keras_bert.layers.PositionEmbedding(
        max_sequence_length=16, hidden_dim=4
    )
    outputs = layer(np.zeros((2, 10), dtype="int32"))  # (2, 10, 4)
    ```
    """

    def __init__(
        self,
        max_sequence_length,
        hidden_dim,
        initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("max_sequence_length", max_sequence_length)
        check_positive_int("hidden_dim", hidden_dim)
        self.max_sequence_length = max_sequence_length
        self.hidden_dim = hidden_dim
        self.initializer = get_initializer(initializer)

    def build(self, inputs_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_sequence_length, self.hidden_dim),
            initializer=clone_initializer(self.initializer),
        )
        self.built = True

    def call(self, inputs):
        sequence_length = inputs.shape[1]
        if sequence_length is None:
            sequence_length = ops.shape(inputs)[1]
        elif sequence_length > self.max_sequence_length:
            raise ValueError(
                f"Received a sequence of length {sequence_length}, longer "
                "than `max_sequence_length="
                f"{self.max_sequence_length}`. Truncate the input (e.g. "
                "`BertPreprocessor(sequence_length=...)`) or build the "
                "model with a larger `max_sequence_length`."
            )
        positions = ops.slice(
            self.embeddings, (0, 0), (sequence_length, self.hidden_dim)
        )
        positions = ops.cast(positions, self.compute_dtype)
        batch_size = ops.shape(inputs)[0]
        # (batch, seq, hidden)
        return ops.broadcast_to(
            positions[None], (batch_size, sequence_length, self.hidden_dim)
        )

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[1], self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_sequence_length": self.max_sequence_length,
                "hidden_dim": self.hidden_dim,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
