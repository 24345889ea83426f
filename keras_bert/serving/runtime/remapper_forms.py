"""The encoder block's ops in the forms TensorFlow's CPU remapper fuses.

At load time TensorFlow's graph optimizer (grappler's remapper, in the
oneDNN builds: x86-64 Linux and Windows, on by default) replaces chains of
ops by one fused oneDNN kernel, but only chains written in the forms it
matches (`tensorflow/core/grappler/optimizers/remapper.cc`):

- `MatMul` → `BiasAdd` [→ `tf.nn.gelu`'s ops, exact or tanh] [→ `AddV2`
  of a residual] on 2-D `(rows, in)` inputs: one `_FusedMatMul`. Keras'
  `Dense` adds its bias with `AddV2`, which the remapper does not read as
  a bias.
- `Reshape` to `(1, rows, hidden, 1)` → `FusedBatchNormV3` (training
  mode, unit scale and zero offset from `Fill`, empty mean and variance)
  → `Reshape` → `Mul` by gamma → `AddV2` of beta, the form of Keras 2's
  `LayerNormalization`: one `_MklLayerNorm`. The epsilon is the
  `FusedBatchNormV3`'s attribute, passed on as it is (BERT's `1e-12`;
  `tf.nn.fused_batch_norm` would raise it to `1.001e-5`, so the raw op is
  used). It matches only when the number of rows is unknown when the graph
  is optimized (else the `Fill`s are folded into constants), as in a
  serving graph.
- `BatchMatMulV2` → `Mul` by a scalar → `AddV2` of a broadcast mask: one
  `_MklFusedBatchMatMulV2` (the attention scores).

Without oneDNN (`TF_ENABLE_ONEDNN_OPTS=0`, other CPUs, GPUs) the same
graph runs as the stock ops it is made of, and computes the same function.

The served blocks' `serving_graph` implementations
(`keras_bert.serving.runtime.block`) are written with these forms, and
so is the served embedding (`keras_bert.serving.runtime.embedding`); in
bfloat16 the remapper fuses the same forms' dense matmuls in bfloat16
(oneDNN runs them on AVX512-BF16 or AMX instructions where the CPU has
them). Frozen (the export's plan), `weight` reads each weight once, while
the graph is traced, into a constant of the graph:
oneDNN then reorders a weight into its blocked layout once instead of on
every call (as it does for a variable unless
`TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1` is set), and a request reads no
variables.
"""

from keras import ops

from keras_bert.keras_workarounds import backend_variable

# The additive mask of padding keys: large enough that exp() underflows to
# exactly 0 in float32 (as `block_pieces.MASK_SCORE`).
MASK_BIAS = -1e9


def record_input_range(ranges, block, layer, x):
    """Widens `ranges[(block name, layer name)]` to hold `x`'s values, in
    an eager call with a `ranges` dict (the calibration,
    `keras_bert.serving.int8_calibration`); else nothing."""
    import tensorflow as tf

    if ranges is None or not tf.executing_eagerly():
        return
    x = ops.convert_to_numpy(ops.cast(x, "float32"))
    low, high = ranges.get((block.name, layer.name), (0.0, 0.0))
    ranges[(block.name, layer.name)] = (
        min(low, float(x.min())),
        max(high, float(x.max())),
    )


def weight(compute, dtype, frozen=True):
    """`compute(read)` in `dtype`: a tensor computed from variables, each
    read with `read` (variable → tensor), e.g. a kernel with its LoRA update
    added. With `frozen`, while a graph is traced, computed now into a
    constant of that graph (read so that the graph does not record the
    variables: an export saves only what its graph reads); else read by the
    graph."""
    import tensorflow as tf

    if frozen and not tf.executing_eagerly():
        with tf.init_scope():
            value = ops.convert_to_numpy(compute(_read_now))
        return tf.constant(value, dtype=dtype)
    return ops.cast(compute(ops.convert_to_tensor), dtype)


def reading_frozen(function, variables):
    """`function`, reading `variables` (Keras variables) as constants of
    any graph it is traced into; called eagerly, `function` as it is.

    `weight` freezes what the blocks read; this freezes what the rest of a
    served model reads through Keras' layers (the embedding's LayerNorm and
    small tables, the pooler, a head), with `keras.StatelessScope` mapping
    each variable to its constant for the trace only: a request then reads
    no variable of them, and oneDNN lays out a constant kernel once. Within
    that scope the trace sees an assignment to a variable but does not make
    it; with no `variables` no scope is entered, and the trace is
    `function`'s own.

    The constants are those of one function of the graph's library, which
    each trace calls (and TensorFlow inlines when it optimizes a graph):
    pass one `FrozenWeights` for the endpoints of one export, and each
    weight is stored once, not once per endpoint.

    Args:
        function: the callable to trace.
        variables: a list of Keras variables, or a `FrozenWeights` shared
            by several functions.
    """
    import functools

    import keras
    import tensorflow as tf

    if not isinstance(variables, FrozenWeights):
        variables = FrozenWeights(variables)

    @functools.wraps(function)
    def frozen(*args, **kwargs):
        if not variables.variables or tf.executing_eagerly():
            return function(*args, **kwargs)
        with keras.StatelessScope(state_mapping=variables.mapping()):
            return function(*args, **kwargs)

    return frozen


class FrozenWeights:
    """Variables read as the constants of one `tf.function`, which every
    trace that reads them calls (`reading_frozen`): stored once in a
    SavedModel however many endpoints read them.

    Args:
        variables: a list of Keras variables.

    Example:
    ```python
    table = keras.Variable([1.0, 2.0])
    shared = FrozenWeights([table])
    double = reading_frozen(lambda x: x * table.value, shared)
    halve = reading_frozen(lambda x: x / table.value, shared)
    # Traced, both call one function whose constant is [1.0, 2.0].
    tf.function(double)(tf.ones(2)), tf.function(halve)(tf.ones(2))
    ```
    """

    def __init__(self, variables):
        self.variables = list(variables)
        self._constants = None

    def mapping(self):
        """`[(variable, tensor)]`, in a graph being traced: each tensor an
        output of the one call of the shared function."""
        import tensorflow as tf

        if self._constants is None:

            def constants():
                # `weight` freezes each one when this is traced.
                return [
                    weight(lambda read, v=v: read(v), backend_variable(v).dtype)
                    for v in self.variables
                ]

            self._constants = tf.function(constants)
        return list(zip(self.variables, self._constants()))


def _read_now(variable):
    import tensorflow as tf

    variable = backend_variable(variable)  # not cast to a compute dtype
    return tf.raw_ops.ReadVariableOp(
        resource=variable.handle, dtype=variable.dtype
    )


def dense(x, kernel, bias, activation=None, residual=None):
    """`x @ kernel + bias`, then the activation (`"gelu"` exact,
    `"gelu_approximate"` tanh, or `None`), then `+ residual`, on 2-D `x`:
    one `_FusedMatMul`."""
    import tensorflow as tf

    x = bias_activation(tf.matmul(x, kernel), bias, activation)
    if residual is not None:
        x = x + residual
    return x


def bias_activation(x, bias, activation=None):
    """`x + bias` as a `BiasAdd`, then the activation (`"gelu"` exact,
    `"gelu_approximate"` tanh, or `None`): the part of `dense` after its
    matmul, for a matmul of another kind (e.g. int8)."""
    import tensorflow as tf

    x = tf.nn.bias_add(x, bias)
    if activation is not None:
        x = tf.nn.gelu(x, approximate=activation == "gelu_approximate")
    return x


def layer_norm(x, gamma, beta, epsilon):
    """LayerNorm over the last axis of 2-D `(rows, hidden)` `x`, in float32
    whatever `x`'s dtype, returned in it: one `_MklLayerNorm`."""
    import tensorflow as tf

    dtype, shape = x.dtype, tf.shape(x)
    rows = shape[:1]
    # (1, rows, hidden, 1) in NCHW: rows are channels, each normalized over
    # its hidden values.
    x = tf.reshape(tf.cast(x, tf.float32), tf.concat([[1], shape, [1]], 0))
    empty = tf.constant([], tf.float32)
    x = tf.raw_ops.FusedBatchNormV3(
        x=x,
        scale=tf.fill(rows, 1.0),
        offset=tf.fill(rows, 0.0),
        mean=empty,
        variance=empty,
        epsilon=epsilon,
        data_format="NCHW",
        is_training=True,
    )[0]
    x = tf.reshape(x, shape) * gamma + beta
    return tf.cast(x, dtype)


def shape(x):
    """`x`'s shape as a tensor (`tf.shape`): a reshape to it has a shape
    grappler knows to be `x`'s, where one to its dimensions has not."""
    import tensorflow as tf

    return tf.shape(x)


def rows_at(x, positions):
    """`(batch * queries, hidden)`: the rows of `(batch, length, hidden)`
    `x` at the `(batch, queries)` `positions`, as one `GatherV2` (Keras'
    `take_along_axis` broadcasts the indices, wraps negative ones and
    transposes around its gather)."""
    import tensorflow as tf

    rows = tf.gather(x, positions, batch_dims=1)
    return tf.reshape(rows, (-1, x.shape[-1]))


def split_packed_heads(x, batch_size, length, parts, num_heads, head_dim):
    """The `parts` `(batch, heads, length, head_dim)` tensors packed side by
    side in the columns of `(batch * length, parts * heads * head_dim)` `x`
    (e.g. q|k|v), with one `Reshape` and one `Transpose` for them all (then
    an `Unpack`), not one of each per part (`block_pieces.split_heads`
    splits one)."""
    x = ops.reshape(x, (batch_size, length, parts, num_heads, head_dim))
    return ops.unstack(ops.transpose(x, (2, 0, 3, 1, 4)), parts, axis=0)


def mask_bias(padding_mask):
    """`(batch, 1, 1, length)` float32: 0 for real keys, `MASK_BIAS` for
    padding ones; or `None`."""
    if padding_mask is None:
        return None
    # Reshaped last: an addend that ends in a `Mul` is not matched, nor
    # one whose rank grappler cannot infer.
    bias = (1.0 - ops.cast(padding_mask, "float32")) * MASK_BIAS
    batch_size, length = ops.shape(padding_mask)[0], ops.shape(padding_mask)[1]
    return ops.reshape(bias, (batch_size, 1, 1, length))


def attention_scores(query, key, scale, bias):
    """`query @ key^T * scale + bias` in float32: one
    `_MklFusedBatchMatMulV2` (float32 inputs)."""
    import tensorflow as tf

    scores = tf.matmul(query, key, transpose_b=True)
    scores = tf.cast(scores, tf.float32) * scale
    return scores if bias is None else scores + bias
