"""BERT's input embedding block."""

import keras

from keras_bert.layers.block_implementations import dropout_class
from keras_bert.layers.block_implementations import layer_norm_class
from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.initializers import get_initializer
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.layers.position_embedding import PositionEmbedding
from keras_bert.layers.segment_embedding import SegmentEmbedding
from keras_bert.validation import check_ids_in_range
from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbedding(keras.layers.Layer):
    """Token + segment + position embedding, then LayerNorm and dropout.

    Each token's vector is the sum of its WordPiece embedding, its segment
    embedding (A=0, B=1) and a learned embedding of its position, normalised
    with LayerNorm and passed through dropout, as in the BERT paper.

    Args:
        vocabulary_size: int. The number of WordPiece ids.
        hidden_dim: int. The size of each token vector.
        max_sequence_length: int. The longest sequence the layer can embed.
            Defaults to `512`.
        num_segments: int. The number of segment ids. Defaults to `2`.
        dropout: float. Dropout rate applied after the LayerNorm. Defaults
            to `0.1`.
        layer_norm_epsilon: float. LayerNorm epsilon. Defaults to `1e-12`.
        initializer: str or `keras.initializers.Initializer`. Initializer of
            the three tables. Defaults to `TruncatedNormal(stddev=0.02)`.
        optimizations: tuple of str. The speed optimisations in use (see
            `keras_bert.layers.optimizations`); this layer reads
            `"closed_form_layer_norm"` and `"half_bits_dropout"`. Defaults
            to `None`: all of them.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        token_ids: int tensor `(batch_size, sequence_length)`.
        segment_ids: int tensor `(batch_size, sequence_length)`.
        training: bool. Whether dropout is active.

    Returns a tensor `(batch_size, sequence_length, hidden_dim)`.

    Example:
    ```python
    layer = keras_bert.layers.BertEmbedding(
        vocabulary_size=10, hidden_dim=4, max_sequence_length=8
    )
    outputs = layer(np.array([[2, 5, 3]]), np.array([[0, 0, 1]]))  # (1, 3, 4)
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805)
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer=None,
        optimizations=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("vocabulary_size", vocabulary_size)
        check_rate("dropout", dropout)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer = get_initializer(initializer)
        self.optimizations = validate_optimizations(optimizations)
        # `None`, or `(layer, token_ids, segment_ids) -> outputs` run at
        # inference instead of `call`'s layers: what `keras_bert.serving`
        # sets on the embedding of a model it serves. Not config.
        self.served_call = None

        self.token_embedding = keras.layers.Embedding(
            vocabulary_size,
            hidden_dim,
            embeddings_initializer=clone_initializer(self.initializer),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.segment_embedding = SegmentEmbedding(
            num_segments,
            hidden_dim,
            initializer=self.initializer,
            dtype=self.dtype_policy,
            name="segment_embedding",
        )
        self.position_embedding = PositionEmbedding(
            max_sequence_length,
            hidden_dim,
            initializer=self.initializer,
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.layer_norm = layer_norm_class(self.optimizations)(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="layer_norm",
        )
        self.dropout_layer = dropout_class(self.optimizations)(
            dropout, dtype=self.dtype_policy, name="dropout"
        )

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        self.position_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        check_ids_in_range(token_ids, self.vocabulary_size, "token_ids")
        if self.served_call is not None and not training:
            return self.served_call(self, token_ids, segment_ids)
        x = self.token_embedding(token_ids)
        x = x + self.segment_embedding(segment_ids)
        x = x + self.position_embedding(token_ids)
        x = self.layer_norm(x, training=training)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer": keras.initializers.serialize(self.initializer),
                "optimizations": list(self.optimizations),
            }
        )
        return config
