"""BERT's masked-language-model head."""

import keras
from keras import ops

from keras_bert.layers.activations import apply_activation
from keras_bert.layers.activations import validate_activation
from keras_bert.layers.closed_form_layer_norm import ClosedFormLayerNorm
from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.initializers import get_initializer


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at each masked position.

    The head gathers the hidden states at `masked_positions` first (or takes
    them already gathered, as `BertBackbone.outputs_at` computes them), then
    applies dense + GELU + LayerNorm and projects onto the vocabulary with the
    **transpose of the token embedding matrix** (weights tied, as in BERT)
    plus a per-token bias. Only `(batch, predictions, vocab)` logits are ever
    built, never `(batch, sequence, vocab)`. The vocabulary projection runs in
    the compute dtype, like every other matmul (under `mixed_bfloat16`, a
    bfloat16 matmul); the logits are cast to float32 before the bias is
    added, and are always float32.

    Args:
        vocabulary_size: int. Size of the output vocabulary. Must equal the
            tied embedding's `input_dim`.
        token_embedding: `keras.layers.Embedding` or `None`. The token
            embedding whose matrix is reused as the output projection. When
            `None` the head owns an untied output matrix.
        activation: str. `"gelu"` (exact) or `"gelu_approximate"` (tanh).
            Defaults to `"gelu"`.
        layer_norm_epsilon: float. Defaults to `1e-12`.
        kernel_initializer: initializer of the dense kernel (and of an untied
            output matrix). Defaults to `TruncatedNormal(stddev=0.02)`.
        bias_initializer: initializer of the dense and output biases.
            Defaults to `"zeros"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        sequence_output: float tensor `(batch_size, sequence_length,
            hidden_dim)`.
        masked_positions: int tensor `(batch_size, num_predictions)`, the
            positions to predict, or `None` when `sequence_output` holds
            only those positions' hidden states, `(batch_size,
            num_predictions, hidden_dim)`. Defaults to `None`.

    Returns float32 logits `(batch_size, num_predictions, vocabulary_size)`.

    Example:
    ```python
    embedding = keras.layers.Embedding(10, 4)
    embedding.build((None,))
    head = keras_bert.layers.MaskedLMHead(10, token_embedding=embedding)
    logits = head(np.random.rand(2, 6, 4), np.array([[1, 2], [0, 5]]))
    # (2, 2, 10)
    ```
    """

    def __init__(
        self,
        vocabulary_size,
        token_embedding=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        kernel_initializer=None,
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if token_embedding is not None and (
            token_embedding.input_dim != vocabulary_size
        ):
            raise ValueError(
                "`vocabulary_size` must equal the tied embedding's "
                f"`input_dim`. Received: vocabulary_size={vocabulary_size}, "
                f"token_embedding.input_dim={token_embedding.input_dim}"
            )
        self.vocabulary_size = vocabulary_size
        self.token_embedding = token_embedding
        self.activation = validate_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.layer_norm = ClosedFormLayerNorm(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="layer_norm",
        )

    def build(self, sequence_output_shape, masked_positions_shape=None):
        hidden_dim = sequence_output_shape[-1]
        self.dense = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name="dense",
        )
        self.dense.build((None, hidden_dim))
        self.layer_norm.build((None, hidden_dim))
        if self.token_embedding is not None and not self.token_embedding.built:
            self.token_embedding.build((None,))
        if self.token_embedding is None:
            self.output_embeddings = self.add_weight(
                name="output_embeddings",
                shape=(self.vocabulary_size, hidden_dim),
                initializer=clone_initializer(self.kernel_initializer),
            )
        elif self.token_embedding.output_dim != hidden_dim:
            raise ValueError(
                "The tied embedding's width "
                f"({self.token_embedding.output_dim}) must equal the hidden "
                f"size of `sequence_output` ({hidden_dim})."
            )
        self.output_bias = self.add_weight(
            name="output_bias",
            shape=(self.vocabulary_size,),
            initializer=self.bias_initializer,
        )
        self.built = True

    def call(self, sequence_output, masked_positions=None, training=None):
        x = sequence_output
        if masked_positions is not None:
            masked_positions = ops.cast(masked_positions, "int32")
            # (batch, predictions, hidden): gather before any vocab-sized work.
            x = ops.take_along_axis(x, masked_positions[:, :, None], axis=1)
        x = apply_activation(self.dense(x), self.activation, training=training)
        x = self.layer_norm(x, training=training)
        if self.token_embedding is None:
            embeddings = self.output_embeddings
        elif self.token_embedding.quantization_mode == "int8":
            # Keras' int8 table (`model.quantize("int8")`): one scale per
            # row, `float = int8 / scale`.
            embeddings = ops.cast(
                self.token_embedding.embeddings, "float32"
            ) / ops.expand_dims(self.token_embedding.embeddings_scale, -1)
        else:
            embeddings = self.token_embedding.embeddings
        batch_size, predictions = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (-1, ops.shape(x)[-1]))
        embeddings = ops.cast(embeddings, x.dtype)
        # The vocabulary projection runs in the compute dtype, like every
        # other matmul; logits are returned in float32 for the softmax.
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            # transpose_b: the gradient of the table comes out (vocab,
            # hidden) directly, without transposing a vocab-sized tensor.
            logits = tf.linalg.matmul(x, embeddings, transpose_b=True)
        else:
            logits = ops.matmul(x, ops.transpose(embeddings))
        logits = ops.cast(logits, "float32") + ops.cast(
            self.output_bias, "float32"
        )
        return ops.reshape(
            logits, (batch_size, predictions, self.vocabulary_size)
        )

    def compute_output_shape(
        self, sequence_output_shape, masked_positions_shape=None
    ):
        if masked_positions_shape is None:
            return tuple(sequence_output_shape[:-1]) + (self.vocabulary_size,)
        return tuple(masked_positions_shape) + (self.vocabulary_size,)

    def compute_output_spec(self, sequence_output, masked_positions=None):
        return keras.KerasTensor(
            self.compute_output_shape(
                sequence_output.shape,
                None if masked_positions is None else masked_positions.shape,
            ),
            dtype="float32",
        )

    def get_config(self):
        config = super().get_config()
        token_embedding = None
        if self.token_embedding is not None:
            token_embedding = keras.layers.serialize(self.token_embedding)
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "token_embedding": token_embedding,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("token_embedding") is not None:
            config["token_embedding"] = keras.layers.deserialize(
                config["token_embedding"]
            )
        return cls(**config)
