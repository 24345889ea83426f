"""BERT's post-LayerNorm transformer encoder block."""

import keras

from keras_bert.layers.activations import validate_activation
from keras_bert.layers.block_implementations import dropout_class
from keras_bert.layers.block_implementations import layer_norm_class
from keras_bert.layers.block_implementations import run_block
from keras_bert.layers.block_pieces import softmax_dtype
from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.initializers import get_initializer
from keras_bert.layers.lora_dense import LoraDense
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate


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
    (float64 under a float64 one). `hidden_dim` is taken from the input and
    must be divisible by `num_heads`.

    This layer holds the weights; how a call computes is one of the
    implementations in `keras_bert.layers.block_implementations`, all the
    same function to float rounding, chosen for each call by its
    `select_implementation` (the only code that reads `optimizations`, the
    training flag, the input's dtype and shape and the weights'
    quantization):

    - `reference`: the formula above, top to bottom (`optimizations=()`);
    - `fast`: the same on 2-D `(tokens, hidden)` rows;
    - `fused_training`: training on a static shape, with the element-wise
      work between the matmuls as XLA-fused ops (`layers.fused_ops`).

    A block of a served model (`keras_bert.serving.served_copy`, what a
    SavedModel export serves) holds a `served_call`, which it runs at
    inference instead: one of the serving implementations
    (`keras_bert.serving.runtime.block`), as the export's plan chose.

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
        optimizations: tuple of str. The speed optimisations in use, names
            of `keras_bert.layers.optimizations.OPTIMIZATIONS`. Defaults to
            `None`: all of them.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        inputs: float tensor `(batch_size, sequence_length, hidden_dim)`.
        padding_mask: tensor `(batch_size, sequence_length)`, 1 (or True)
            for real tokens and 0 for padding. Padding keys get no
            attention. Optional.
        query_positions: int tensor `(batch_size, num_queries)`, or `None`
            (every position). The positions whose outputs are wanted: keys
            and values still come from every token, but the rest of the
            block runs on these positions only (the optimisation
            `"query_positions_only"`; without it, every position, then
            gathered). The result equals the full output gathered at them,
            to float rounding (see `BertBackbone.outputs_at`).
        training: bool. Whether dropout is active.
        return_attention_probabilities: bool. Whether to return the
            attention probabilities too, for inspection. Defaults to
            `False`.

    Returns a tensor of the input's shape, or `(batch_size, num_queries,
    hidden_dim)` with `query_positions`. With
    `return_attention_probabilities=True`, a tuple of that and the
    attention probabilities `(batch_size, num_heads, num_queries,
    sequence_length)` (`num_queries` is `sequence_length` without
    `query_positions`): the softmax over the keys, after attention dropout
    (none at inference), in the compute dtype, as `transformers`' eager
    attention returns them. A padding key gets probability 0.

    Example:
    ```python
    block = keras_bert.layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=16
    )
    x = np.random.rand(2, 5, 8).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    y = block(x, padding_mask=mask)  # (2, 5, 8)
    y, probs = block(x, padding_mask=mask, return_attention_probabilities=True)
    probs.shape  # (2, 2, 5, 5)
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
        optimizations=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("num_heads", num_heads)
        check_positive_int("intermediate_dim", intermediate_dim)
        if attention_dropout is None:
            attention_dropout = dropout
        check_rate("dropout", dropout)
        check_rate("attention_dropout", attention_dropout)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation = validate_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.optimizations = validate_optimizations(optimizations)
        # `None`, or a function `(block, call) -> (outputs, probabilities)`
        # run at inference instead of the implementations above: what
        # `keras_bert.serving` sets on the blocks of a model it serves.
        # Not config: a served copy is made, not saved.
        self.served_call = None
        self.supports_masking = True

        LayerNorm = layer_norm_class(self.optimizations)
        Dropout = dropout_class(self.optimizations)
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
        # In the softmax's dtype (`block_pieces.attention_probabilities`).
        self.attention_probs_dropout = Dropout(
            attention_dropout,
            dtype=softmax_dtype(self.compute_dtype),
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
        # A Dense whose weight files keep LoRA weights apart
        # (`BertBackbone.enable_lora`).
        return LoraDense(
            units,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name=name,
        )

    def call(
        self,
        inputs,
        padding_mask=None,
        query_positions=None,
        training=None,
        return_attention_probabilities=False,
    ):
        outputs, probs = run_block(
            self,
            inputs,
            padding_mask,
            query_positions,
            training,
            return_attention_probabilities,
        )
        if return_attention_probabilities:
            return outputs, probs
        return outputs

    def compute_output_shape(
        self, inputs_shape, padding_mask_shape=None, query_positions_shape=None
    ):
        if query_positions_shape is None:
            return inputs_shape
        return tuple(query_positions_shape) + (inputs_shape[-1],)

    def compute_output_spec(
        self,
        inputs,
        padding_mask=None,
        query_positions=None,
        training=None,
        return_attention_probabilities=False,
    ):
        output_shape = self.compute_output_shape(
            inputs.shape,
            query_positions_shape=(
                None if query_positions is None else query_positions.shape
            ),
        )
        output = keras.KerasTensor(output_shape, dtype=self.compute_dtype)
        if not return_attention_probabilities:
            return output
        # (batch, heads, queries, keys)
        probs_shape = (
            output_shape[0],
            self.num_heads,
            output_shape[1],
            inputs.shape[1],
        )
        return output, keras.KerasTensor(probs_shape, dtype=self.compute_dtype)

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
                "optimizations": list(self.optimizations),
            }
        )
        return config
