"""BERT's post-LayerNorm transformer encoder block."""

import math

import keras
from keras import ops

from keras_bert.layers import fused_ops
from keras_bert.layers.activations import apply_activation
from keras_bert.layers.activations import validate_activation
from keras_bert.layers.dropout import Dropout
from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.initializers import get_initializer
from keras_bert.layers.layer_norm import LayerNorm

# Added to the attention scores of padding keys. Large enough that
# exp() underflows to exactly 0 in float32, finite so that a row with no real
# key gives a uniform distribution instead of NaN.
_MASK_SCORE = -1e9


def _next_seed(dropout):
    """The seed a `Dropout` layer's next training call would use."""
    # Keras' Dropout has no seed generator at rate 0.
    return dropout.seed_generator.next() if dropout.rate > 0 else None


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerEncoderBlock(keras.layers.Layer):
    """One post-LayerNorm transformer encoder block, as in BERT.

    ```
    a = LayerNorm(x + Dropout(Dense(MultiHeadSelfAttention(x, padding_mask))))
    y = LayerNorm(a + Dropout(Dense(GELU(Dense(a)))))
    ```

    The query, key and value projections are one fused `(hidden, 3 * hidden)`
    matmul (`qkv_dense`, columns in query | key | value order). Attention
    scores and softmax are computed in float32 under any dtype policy
    (float64 under a float64 one).
    `hidden_dim` is taken from the input and must be divisible by
    `num_heads`.

    In training on TensorFlow in float32, `mixed_bfloat16` or
    `mixed_float16`, when the input's shape is static (a
    fixed-size batch) and large enough to pay, the element-wise work
    between the matmuls (mask, softmax and dropout of the attention scores;
    dropout, residual add and LayerNorm; exact GELU) runs as XLA-fused ops
    (`keras_bert.layers.fused_ops`) with the same math and the same dropout
    masks as the layers above, to float rounding.

    Args:
        num_heads: int. Number of attention heads.
        intermediate_dim: int. Width of the feed-forward layer (4H in BERT).
        dropout: float. Dropout after the attention output and the
            feed-forward output. Defaults to `0.1`.
        attention_dropout: float. Dropout on the attention probabilities.
            Defaults to `None`, which uses `dropout`.
        activation: str. `"gelu"` (exact erf, the default) or
            `"gelu_approximate"` (the tanh approximation of Google's
            original BERT code).
        layer_norm_epsilon: float. Defaults to `1e-12`.
        kernel_initializer: initializer of the dense kernels. Defaults to
            `TruncatedNormal(stddev=0.02)`.
        bias_initializer: initializer of the dense biases. Defaults to
            `"zeros"`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        inputs: float tensor `(batch_size, sequence_length, hidden_dim)`.
        padding_mask: tensor `(batch_size, sequence_length)`, 1 (or True)
            for real tokens and 0 for padding. Padding keys get no
            attention. Optional.
        query_positions: int tensor `(batch_size, num_queries)`, or `None`
            (every position). The positions whose outputs are wanted: keys
            and values still come from every token, but the queries, the
            attention output, the feed-forward layer and both LayerNorms
            run on these positions only. The result equals the full
            output gathered at them, to float rounding (a head that reads
            only `[CLS]` or the masked tokens saves most of the block's
            work; see `BertBackbone.outputs_at`).
        training: bool. Whether dropout is active.

    Returns a tensor of the input's shape, or `(batch_size, num_queries,
    hidden_dim)` with `query_positions`.

    Example:
    ```python
    block = keras_bert.layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=16
    )
    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    y = block(x, padding_mask=mask)  # (2, 5, 8)
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762)
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.1,
        attention_dropout=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        kernel_initializer=None,
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("num_heads", num_heads),
            ("intermediate_dim", intermediate_dim),
        ):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"Received an invalid value for argument `{name}`, "
                    f"expected a positive integer. Received: {name}={value!r}"
                )
        if attention_dropout is None:
            attention_dropout = dropout
        for name, value in (
            ("dropout", dropout),
            ("attention_dropout", attention_dropout),
        ):
            if not 0 <= value < 1:
                raise ValueError(
                    f"Received an invalid value for argument `{name}`, "
                    f"expected a float in [0, 1). Received: {name}={value!r}"
                )
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation = validate_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

        self.attention_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="attention_layer_norm",
        )
        self.output_layer_norm = LayerNorm(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="output_layer_norm",
        )
        # Attention probabilities are dropped in the softmax's dtype (at
        # least float32), before the cast to the compute dtype: under mixed
        # precision that saves two casts of a (batch, heads, seq, seq)
        # tensor each way.
        self.attention_probs_dropout = Dropout(
            attention_dropout,
            dtype="float64" if self.compute_dtype == "float64" else "float32",
            name="attention_dropout",
        )
        self.attention_output_dropout = Dropout(
            dropout, dtype=self.dtype_policy, name="attention_output_dropout"
        )
        self.output_dropout = Dropout(
            dropout, dtype=self.dtype_policy, name="output_dropout"
        )

    def build(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        hidden_dim = inputs_shape[-1]
        if hidden_dim % self.num_heads != 0:
            raise ValueError(
                f"The input's hidden size ({hidden_dim}) must be divisible by "
                f"`num_heads` ({self.num_heads}). Change `num_heads` or the "
                "hidden size so that each head gets the same width."
            )
        self.hidden_dim = hidden_dim
        self.head_dim = hidden_dim // self.num_heads
        # Sublayers need hidden_dim, so they are created here.
        self.qkv_dense = self._make_dense(3 * hidden_dim, "qkv_dense")
        self.attention_output_dense = self._make_dense(
            hidden_dim, "attention_output_dense"
        )
        self.intermediate_dense = self._make_dense(
            self.intermediate_dim, "intermediate_dense"
        )
        self.output_dense = self._make_dense(hidden_dim, "output_dense")
        self.qkv_dense.build(inputs_shape)
        self.attention_output_dense.build(inputs_shape)
        self.attention_layer_norm.build(inputs_shape)
        self.intermediate_dense.build(inputs_shape)
        self.output_dense.build(
            tuple(inputs_shape[:-1]) + (self.intermediate_dim,)
        )
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    def _make_dense(self, units, name):
        return keras.layers.Dense(
            units,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name=name,
        )

    def _split_heads(self, x, batch_size, sequence_length):
        # (batch, seq, hidden) -> (batch, heads, seq, head_dim)
        x = ops.reshape(
            x, (batch_size, sequence_length, self.num_heads, self.head_dim)
        )
        return ops.transpose(x, (0, 2, 1, 3))

    def _query_key_value(self, x, queries):
        """Projections of `x` (tokens, hidden); queries from `queries` when
        given (a subset of the tokens), else from `x`."""
        if queries is None:
            qkv = self.qkv_dense(x)  # (tokens, 3 * hidden)
            return ops.split(qkv, 3, axis=-1)
        # Only the query columns of the fused kernel see the query rows.
        kernel = ops.cast(self.qkv_dense.kernel, self.compute_dtype)
        bias = ops.cast(self.qkv_dense.bias, self.compute_dtype)
        hidden = self.hidden_dim
        query = ops.matmul(queries, kernel[:, :hidden]) + bias[:hidden]
        key_value = ops.matmul(x, kernel[:, hidden:]) + bias[hidden:]
        key, value = ops.split(key_value, 2, axis=-1)
        return query, key, value

    def _self_attention(
        self,
        x,
        queries,
        padding_mask,
        training,
        batch_size,
        sequence_length,
        query_length,
        fuse,
    ):
        # Split first, then one 4-D transpose per tensor: faster than a
        # single 5-D transpose of the fused tensor, which TF's CPU kernels
        # handle badly (the `fused_qkv_5d` row of benchmarks/ablation.py).
        query, key, value = self._query_key_value(x, queries)
        query = self._split_heads(query, batch_size, query_length)
        key = self._split_heads(key, batch_size, sequence_length)
        value = self._split_heads(value, batch_size, sequence_length)
        scale = 1.0 / math.sqrt(self.head_dim)
        if not fuse:
            # The fused op scales the scores in its own pass instead.
            query = query * ops.cast(scale, query.dtype)
        # (batch, heads, seq_q, seq_k)
        scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        key_mask = None
        if padding_mask is not None:
            key_mask = ops.cast(padding_mask, "bool")[:, None, None, :]
        if fuse:
            probs = fused_ops.attention_probabilities(
                scores,
                key_mask,
                self.attention_dropout,
                _next_seed(self.attention_probs_dropout),
                _MASK_SCORE,
                self.compute_dtype,
                scale=scale,
            )
            return self._attention_context(
                probs, value, batch_size, query_length
            )
        # At least float32: half-precision softmax loses too much; a
        # float64 model keeps float64 (used to check parity exactly).
        softmax_dtype = (
            "float64" if self.compute_dtype == "float64" else "float32"
        )
        scores = ops.cast(scores, softmax_dtype)
        if key_mask is not None:
            scores = ops.where(key_mask, scores, _MASK_SCORE)
        probs = ops.softmax(scores, axis=-1)
        probs = self.attention_probs_dropout(probs, training=training)
        probs = ops.cast(probs, self.compute_dtype)
        return self._attention_context(probs, value, batch_size, query_length)

    def _attention_context(self, probs, value, batch_size, query_length):
        context = ops.matmul(probs, value)  # (batch, heads, queries, dim)
        context = ops.transpose(context, (0, 2, 1, 3))
        return ops.reshape(
            context, (batch_size * query_length, self.hidden_dim)
        )

    def _dense(self, dense, x, training, fuse=False):
        """`dense(x)` for 2-D `x`; without its bias when `fuse` (a fused op
        adds it)."""
        if fuse:
            return ops.matmul(x, ops.cast(dense.kernel, self.compute_dtype))
        return dense(x)

    def _add_norm(
        self, x, residual, dense, dropout, layer_norm, training, fuse
    ):
        """`layer_norm(residual + dropout(dense(x)))`."""
        x = self._dense(dense, x, training, fuse)
        if fuse:
            return fused_ops.dropout_add_layer_norm(
                x,
                dense.bias.value,
                residual,
                layer_norm.gamma.value,
                layer_norm.beta.value,
                dropout.rate,
                _next_seed(dropout),
                layer_norm.epsilon,
            )
        x = dropout(x, training=training)
        return layer_norm(residual + x, training=training)

    def call(
        self, inputs, padding_mask=None, query_positions=None, training=None
    ):
        batch_size, sequence_length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        # In training with static shapes, the element-wise chains between
        # the matmuls run as XLA-fused ops (see `fused_ops`).
        fuse = bool(training) and fused_ops.can_fuse(inputs)
        # Everything but the attention itself works on (tokens, hidden):
        # 2-D matmuls let TensorFlow fuse the bias add (and, at inference,
        # the GELU) into the matmul.
        x = ops.reshape(inputs, (-1, self.hidden_dim))
        queries, query_length = None, sequence_length
        if query_positions is not None:
            # Only these positions' outputs are wanted: keys and values
            # come from every token, everything else runs on these rows.
            query_positions = ops.cast(query_positions, "int32")
            query_length = ops.shape(query_positions)[1]
            queries = ops.reshape(
                ops.take_along_axis(
                    inputs, query_positions[:, :, None], axis=1
                ),
                (-1, self.hidden_dim),
            )
        context = self._self_attention(
            x,
            queries,
            padding_mask,
            training,
            batch_size,
            sequence_length,
            query_length,
            fuse,
        )
        x = self._add_norm(
            context,
            x if queries is None else queries,
            self.attention_output_dense,
            self.attention_output_dropout,
            self.attention_layer_norm,
            training,
            fuse,
        )
        if fuse and self.activation == "gelu":
            hidden = fused_ops.exact_gelu(
                self._dense(self.intermediate_dense, x, training, fuse),
                self.intermediate_dense.bias.value,
            )
        else:
            hidden = apply_activation(
                self._dense(self.intermediate_dense, x, training),
                self.activation,
                training=training,
            )
        output = self._add_norm(
            hidden,
            x,
            self.output_dense,
            self.output_dropout,
            self.output_layer_norm,
            training,
            fuse,
        )
        return ops.reshape(output, (batch_size, query_length, self.hidden_dim))

    def compute_output_shape(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        if query_positions_shape is None:
            return inputs_shape
        return tuple(query_positions_shape) + (inputs_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
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
