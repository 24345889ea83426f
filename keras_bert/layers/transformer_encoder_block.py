"""BERT's post-LayerNorm transformer encoder block."""

import math

import keras
from keras import ops

from keras_bert.layers import fused_ops
from keras_bert.layers.activations import apply_activation
from keras_bert.layers.activations import validate_activation
from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.initializers import get_initializer
from keras_bert.layers.lora_dense import LoraDense
from keras_bert.layers.optimizations import dropout_class
from keras_bert.layers.optimizations import layer_norm_class
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate

# Added to the attention scores of padding keys. Large enough that
# exp() underflows to exactly 0 in float32, finite so that a row with no real
# key gives a uniform distribution instead of NaN.
_MASK_SCORE = -1e9


class _Untracked:
    """Holds a layer out of sight of Keras' and TensorFlow's tracking."""

    def __init__(self, layer):
        self.layer = layer


def _next_seed(dropout):
    """The seed a dropout layer's next training call would use."""
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

    Two computations sit side by side. `_reference_call` is the block
    written the plain way, top to bottom; `_fast_call` computes the same
    function faster, with the optimisations named in `optimizations`
    (described in `keras_bert.layers.optimizations`). The main one: in
    training on TensorFlow in float32, `mixed_bfloat16` or `mixed_float16`,
    when the input's shape is static (a fixed-size batch) and large enough
    to pay, the element-wise work between the matmuls (mask, softmax and
    dropout of the attention scores; dropout, residual add and LayerNorm;
    exact GELU) runs as XLA-fused ops (`keras_bert.layers.fused_ops`) with
    the same math and the same dropout masks as the layers above, to float
    rounding. With `optimizations=()` the block runs the reference and
    Keras' own LayerNorm, Dropout and GELU.

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
            of `keras_bert.layers.optimizations.OPTIMIZATIONS`; each
            computes the same function (to float rounding). Defaults to
            `None`: all of them.
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
            run on these positions only (the optimisation
            `"query_positions_only"`; without it, every position, then
            gathered). The result equals the full
            output gathered at them, to float rounding (a head that reads
            only `[CLS]` or the masked tokens saves most of the block's
            work; see `BertBackbone.outputs_at`).
        training: bool. Whether dropout is active.
        return_attention_probabilities: bool. Whether to return the
            attention probabilities too, for inspection. Defaults to
            `False`. They are computed on the way to the output anyway, so
            asking costs only keeping them.

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
        self.supports_masking = True
        # Scores and softmax in at least float32 (float64 in a float64
        # model, used to check parity exactly).
        self.softmax_dtype = (
            "float64" if self.compute_dtype == "float64" else "float32"
        )

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
        # Attention probabilities are dropped in the softmax's dtype, before
        # the cast to the compute dtype: under mixed precision that saves
        # two casts of a (batch, heads, seq, seq) tensor each way.
        self.attention_probs_dropout = Dropout(
            attention_dropout,
            dtype=self.softmax_dtype,
            name="attention_dropout",
        )
        self.attention_output_dropout = Dropout(
            dropout, dtype=self.dtype_policy, name="attention_output_dropout"
        )
        self.output_dropout = Dropout(
            dropout, dtype=self.dtype_policy, name="output_dropout"
        )
        # What `set_inference_layer` installs, in a holder that neither
        # Keras nor SavedModel tracks (its owner's export tracks it).
        self._inference_layer = _Untracked(None)

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
        inference_layer = self._inference_layer.layer
        if (
            inference_layer is not None
            and not training
            and not return_attention_probabilities
        ):
            return inference_layer(
                inputs,
                padding_mask=padding_mask,
                query_positions=query_positions,
            )
        outputs, probs = self._outputs_and_probabilities(
            inputs,
            padding_mask,
            query_positions,
            training,
            return_attention_probabilities,
        )
        if return_attention_probabilities:
            return outputs, probs
        # Unused, `probs` costs nothing: it is computed on the way to
        # `outputs` anyway, and a graph prunes what nothing reads.
        return outputs

    def set_inference_layer(self, layer):
        """Computes this block's inference (`training` false) with `layer`.

        `layer` is called as the block is, `(inputs, padding_mask=,
        query_positions=)`, and must compute the same function from its own
        copy of the weights, e.g. `keras_bert.layers.HeadParallelBlock`
        (`keras_bert.models.head_parallel_copy` installs one per block).
        Training calls and `return_attention_probabilities` still run the
        block itself. The block does not track `layer`: whoever saves or
        exports the model tracks it (`export_saved_model` does); it is not
        part of the block's config or weights. `None` removes it.

        Args:
            layer: a callable layer, or `None`.
        """
        self._inference_layer = _Untracked(layer)

    @property
    def inference_layer(self):
        """The layer set by `set_inference_layer`, or `None`."""
        return self._inference_layer.layer

    def _outputs_and_probabilities(
        self, inputs, padding_mask, query_positions, training, gather_probs
    ):
        """The block's output and the attention probabilities it used
        (`None` if gathering them at `query_positions` is not wanted)."""
        if query_positions is not None:
            query_positions = ops.cast(query_positions, "int32")
            if "query_positions_only" not in self.optimizations:
                # By definition: every position, then gathered.
                outputs, probs = self._outputs_and_probabilities(
                    inputs, padding_mask, None, training, False
                )
                outputs = ops.take_along_axis(
                    outputs, query_positions[:, :, None], axis=1
                )
                if gather_probs:
                    probs = ops.take_along_axis(
                        probs, query_positions[:, None, :, None], axis=2
                    )
                return outputs, probs
        fuse = (
            "xla_fused_ops" in self.optimizations
            and bool(training)
            and fused_ops.can_fuse(inputs)
            # The fused ops read float kernels, not int8 ones.
            and not self._quantized()
        )
        # Where the two computations differ; the other optimisations are
        # the sublayers and the GELU, which both use.
        fast = (
            fuse
            or query_positions is not None
            or "split_qkv_first" in self.optimizations
        )
        if fast:
            return self._fast_call(
                inputs, padding_mask, query_positions, training, fuse
            )
        return self._reference_call(inputs, padding_mask, training)

    def _quantized(self):
        """Whether a dense layer holds quantized (e.g. int8) weights."""
        return any(
            dense.quantization_mode is not None
            for dense in (
                self.qkv_dense,
                self.attention_output_dense,
                self.intermediate_dense,
                self.output_dense,
            )
        )

    # ------------------------------------------------------------------
    # The reference: what the block computes, the plain way.

    def _reference_call(self, inputs, padding_mask, training):
        """The block at every position, as the formula reads; returns the
        output and the attention probabilities."""
        batch_size, sequence_length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        # Self-attention.
        qkv = self.qkv_dense(inputs)  # (batch, seq, 3 * hidden)
        query, key, value = self._heads_of_qkv(
            qkv, batch_size, sequence_length
        )  # each (batch, heads, seq, head_dim)
        query = query * ops.cast(1.0 / math.sqrt(self.head_dim), query.dtype)
        # Scores and probabilities: (batch, heads, seq, seq).
        scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        probs = self._attention_probabilities(scores, padding_mask, training)
        context = ops.matmul(probs, value)  # (batch, heads, seq, head_dim)
        context = ops.transpose(context, (0, 2, 1, 3))
        context = ops.reshape(
            context, (batch_size, sequence_length, self.hidden_dim)
        )  # (batch, seq, hidden)
        attention_output = self.attention_output_dense(context)
        attention_output = self.attention_output_dropout(
            attention_output, training=training
        )
        x = self.attention_layer_norm(
            inputs + attention_output, training=training
        )
        # Feed-forward.
        hidden = self.intermediate_dense(x)  # (batch, seq, intermediate)
        hidden = self._activation(hidden, training)
        output = self.output_dropout(
            self.output_dense(hidden), training=training
        )
        return self.output_layer_norm(x + output, training=training), probs

    def _heads_of_qkv(self, qkv, batch_size, sequence_length):
        """q, k, v `(batch, heads, seq, head_dim)` of the fused projection
        (`(batch, seq, 3 * hidden)` or `(batch * seq, 3 * hidden)`)."""
        qkv = ops.reshape(
            qkv,
            (batch_size, sequence_length, 3, self.num_heads, self.head_dim),
        )
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # (3, batch, heads, ...)
        return qkv[0], qkv[1], qkv[2]

    def _attention_probabilities(self, scores, padding_mask, training):
        """Mask, softmax and dropout of the scores, in at least float32."""
        # Half-precision softmax loses too much; a float64 model keeps
        # float64 (used to check parity exactly).
        scores = ops.cast(scores, self.softmax_dtype)
        if padding_mask is not None:
            key_mask = ops.cast(padding_mask, "bool")[:, None, None, :]
            scores = ops.where(key_mask, scores, _MASK_SCORE)
        probs = ops.softmax(scores, axis=-1)
        probs = self.attention_probs_dropout(probs, training=training)
        return ops.cast(probs, self.compute_dtype)

    def _activation(self, x, training):
        closed_form = "closed_form_gelu" in self.optimizations
        return apply_activation(
            x, self.activation, training=training, closed_form=closed_form
        )

    # ------------------------------------------------------------------
    # The fast path: the same function, with `self.optimizations`.

    def _fast_call(self, inputs, padding_mask, query_positions, training, fuse):
        """`_reference_call`, faster: each difference is an optimisation of
        `keras_bert.layers.optimizations`. All but the attention works on
        2-D `(tokens, hidden)`: there TensorFlow fuses the bias add (and,
        at inference, the GELU) into the matmul. With `fuse`, the
        element-wise chains between the matmuls run as XLA-fused ops.
        Returns the output and the attention probabilities."""
        batch_size, sequence_length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        x = ops.reshape(inputs, (-1, self.hidden_dim))  # (tokens, hidden)
        if query_positions is None:
            residual, query_length = x, sequence_length
        else:
            # Only these positions' outputs are wanted: keys and values
            # come from every token, everything else runs on these rows.
            query_length = ops.shape(query_positions)[1]
            residual = ops.reshape(
                ops.take_along_axis(
                    inputs, query_positions[:, :, None], axis=1
                ),
                (-1, self.hidden_dim),
            )  # (batch * queries, hidden)
        query, key, value = self._fast_heads(
            x,
            residual if query_positions is not None else None,
            batch_size,
            sequence_length,
            query_length,
        )
        scale = 1.0 / math.sqrt(self.head_dim)
        if not fuse:
            # The fused op scales the scores in its own pass instead.
            query = query * ops.cast(scale, query.dtype)
        scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        if fuse:
            key_mask = None
            if padding_mask is not None:
                key_mask = ops.cast(padding_mask, "bool")[:, None, None, :]
            probs = fused_ops.attention_probabilities(
                scores,
                key_mask,
                self.attention_dropout,
                _next_seed(self.attention_probs_dropout),
                _MASK_SCORE,
                self.compute_dtype,
                scale=scale,
            )
        else:
            probs = self._attention_probabilities(
                scores, padding_mask, training
            )
        context = ops.matmul(probs, value)  # (batch, heads, queries, dim)
        context = ops.reshape(
            ops.transpose(context, (0, 2, 1, 3)),
            (batch_size * query_length, self.hidden_dim),
        )
        x = self._fast_add_norm(
            context,
            residual,
            self.attention_output_dense,
            self.attention_output_dropout,
            self.attention_layer_norm,
            training,
            fuse,
        )
        if fuse and self.activation == "gelu":
            hidden = fused_ops.exact_gelu(
                ops.matmul(x, self._kernel(self.intermediate_dense)),
                self.intermediate_dense.bias.value,
            )
        else:
            hidden = self._activation(self.intermediate_dense(x), training)
        output = self._fast_add_norm(
            hidden,
            x,
            self.output_dense,
            self.output_dropout,
            self.output_layer_norm,
            training,
            fuse,
        )
        output = ops.reshape(
            output, (batch_size, query_length, self.hidden_dim)
        )
        return output, probs

    def _fast_heads(self, x, queries, batch_size, sequence_length, length):
        """q `(batch, heads, length, head_dim)`, k and v `(batch, heads,
        seq, head_dim)` of 2-D `x`; q from the rows `queries` when given."""
        if queries is not None:
            # Only the query columns of the fused kernel see the query rows
            # (float or int8 kernel: `LoraDense.call_columns`).
            hidden = self.hidden_dim
            query = self.qkv_dense.call_columns(queries, 0, hidden)
            key_value = self.qkv_dense.call_columns(x, hidden, 3 * hidden)
            key, value = ops.split(key_value, 2, axis=-1)
        elif "split_qkv_first" in self.optimizations:
            query, key, value = ops.split(self.qkv_dense(x), 3, axis=-1)
        else:
            return self._heads_of_qkv(
                self.qkv_dense(x), batch_size, sequence_length
            )
        # One 4-D transpose per tensor: faster than one 5-D transpose of
        # q|k|v, which TF's CPU kernels handle badly.
        return (
            self._split_heads(query, batch_size, length),
            self._split_heads(key, batch_size, sequence_length),
            self._split_heads(value, batch_size, sequence_length),
        )

    def _split_heads(self, x, batch_size, sequence_length):
        # (batch * seq, hidden) -> (batch, heads, seq, head_dim)
        x = ops.reshape(
            x, (batch_size, sequence_length, self.num_heads, self.head_dim)
        )
        return ops.transpose(x, (0, 2, 1, 3))

    def _kernel(self, dense):
        return ops.cast(dense.kernel, self.compute_dtype)

    def _fast_add_norm(
        self, x, residual, dense, dropout, layer_norm, training, fuse
    ):
        """`layer_norm(residual + dropout(dense(x)))`; one XLA-fused op
        after the matmul with `fuse` (which adds the bias too)."""
        if not fuse:
            x = dropout(dense(x), training=training)
            return layer_norm(residual + x, training=training)
        return fused_ops.dropout_add_layer_norm(
            ops.matmul(x, self._kernel(dense)),
            dense.bias.value,
            residual,
            layer_norm.gamma.value,
            layer_norm.beta.value,
            dropout.rate,
            _next_seed(dropout),
            layer_norm.epsilon,
        )

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
