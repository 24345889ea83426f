"""`serving_graph` as a served graph runs it: frozen, optimized by grappler.

tests/layers/test_block_implementations.py compares `serving_graph` with
`reference` eagerly (stock kernels, weights read from variables). Here the
block, served frozen (its `served_call`), is traced into a TF1 graph and
run in a Session, as TF Serving runs an export: its weights are constants
of the graph, and the outputs stay within 1e-5 of `reference` (the
tolerance of test_block_implementations); with bfloat16 matmuls
(`serving_graph_bfloat16`) within its bfloat16 tolerance, 2**-6.

Where TensorFlow's oneDNN is on, grappler's remapper fuses the forms (the
dense matmuls in bfloat16 for bfloat16, everything else in float32);
where it is off (an AVX2-only CPU by default, `TF_ENABLE_ONEDNN_OPTS=0`)
the same graph runs as the stock ops it is made of, no oneDNN op in it:
each test asserts the one or the other, by what this process runs.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import BertEmbedding
from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers.block_implementations import run_block
from keras_bert.serving.cpu import onednn_enabled
from keras_bert.serving.runtime.block import BlockServing
from keras_bert.serving.runtime.embedding import served_embedding
from keras_bert.serving.runtime.remapper_forms import reading_frozen

HIDDEN, HEADS, INTERMEDIATE = 16, 4, 32
MASK = [[1] * 7, [1] * 4 + [0] * 3, [0] * 7]
TOLERANCE = 1e-5
BFLOAT16_TOLERANCE = 2**-6


def _block(activation):
    block = TransformerEncoderBlock(
        num_heads=HEADS, intermediate_dim=INTERMEDIATE, activation=activation
    )
    block(np.zeros((1, 2, HIDDEN), "float32"))
    return _random_weights(block, seed=1, stddev=0.3)


def _random_weights(layer, seed, stddev):
    """`layer` with every weight drawn from a normal distribution."""
    rng = np.random.default_rng(seed)
    layer.set_weights(
        [
            rng.normal(0, stddev, w.shape).astype("float32")
            for w in layer.get_weights()
        ]
    )
    return layer


def _inputs():
    return (
        np.random.default_rng(2).normal(size=(3, 7, HIDDEN)).astype("float32")
    )


def _assert_stock_ops(kinds, blocks=1):
    """Without oneDNN: no oneDNN op; grappler's Eigen remapper fuses each
    dense matmul with its bias only (GELU and residual apart), and each
    LayerNorm is its batch norm, unfused."""
    assert not [kind for kind in kinds if kind.startswith("_Mkl")], kinds
    assert kinds["_FusedMatMul+BiasAdd"] == 4 * blocks, kinds
    assert kinds["FusedBatchNormV3"] == 2 * blocks, kinds


def _session_run(block, implementation="serving_graph"):
    """The block's (or the list of blocks', one after the other) outputs,
    served frozen as `implementation`, from a TF1 Session (unknown batch
    and length, as a served graph has), the op kinds of the graph it ran
    after grappler, with the fused ops' `fused_ops`, and the dtypes (`T`)
    of each kind."""
    blocks = block if isinstance(block, list) else [block]

    def stack(x, mask):
        for each in blocks:
            x = run_block(each, x, mask, None, False, False)[0]
        return x

    traced = tf.function(
        stack,
        input_signature=[
            tf.TensorSpec((None, None, HIDDEN), tf.float32),
            tf.TensorSpec((None, None), tf.int32),
        ],
    )
    for each in blocks:
        each.served_call = BlockServing(implementation)
    try:
        concrete = traced.get_concrete_function()
    finally:
        for each in blocks:
            each.served_call = None
    graph_def = concrete.graph.as_graph_def()
    # The blocks' own functions (each block is one, shared by every
    # endpoint of an export: `shared_trace`) are in the graph's library.
    stored = {node.op for node in graph_def.node} | {
        node.op
        for function in graph_def.library.function
        for node in function.node_def
    }
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    session = tf.compat.v1.Session(graph=graph)
    metadata = tf.compat.v1.RunMetadata()
    x, mask = (tensor.name for tensor in concrete.inputs)
    result = session.run(
        concrete.outputs[0].name,
        {x: _inputs(), mask: np.asarray(MASK, "int32")},
        options=tf.compat.v1.RunOptions(output_partition_graphs=True),
        run_metadata=metadata,
    )
    kinds, dtypes = collections.Counter(), collections.defaultdict(set)
    for partition in metadata.partition_graphs:
        for node in partition.node:
            fused = [s.decode() for s in node.attr["fused_ops"].list.s]
            kind = "+".join([node.op] + fused)
            kinds[kind] += 1
            if node.attr["T"].type:
                dtypes[kind].add(tf.as_dtype(node.attr["T"].type).name)
    return result, kinds, stored, dtypes


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_the_served_graph_computes_the_reference(activation):
    block = _block(activation)
    expected, _ = run_block(
        block, _inputs(), np.asarray(MASK), None, False, False, "reference"
    )
    outputs, _, stored, _ = _session_run(block)
    assert np.abs(outputs - np.asarray(expected)).max() <= TOLERANCE
    # Frozen: the graph reads no variable.
    assert not stored & {"ReadVariableOp", "VarHandleOp"}, stored
    assert "FusedBatchNormV3" in stored and "BiasAdd" in stored


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
def test_the_remapper_fuses_the_block(activation):
    gelu = {"gelu": "GeluExact", "gelu_approximate": "GeluApproximate"}
    _, kinds, _, _ = _session_run(_block(activation))
    if not onednn_enabled():
        _assert_stock_ops(kinds)
        return
    assert kinds["_MklLayerNorm"] == 2, kinds
    # The scores: their scale and mask in the matmul.
    assert kinds["_MklFusedBatchMatMulV2+Mul+Add"] == 1, kinds
    assert kinds[f"_MklNativeFusedMatMul+BiasAdd+{gelu[activation]}"] == 1
    # q|k|v, and the two with their residual added.
    assert kinds["_MklNativeFusedMatMul+BiasAdd"] == 1, kinds
    assert kinds["_MklNativeFusedMatMul+BiasAdd+Add"] == 2, kinds
    # What is left of the block: heads split and merged, softmax, the
    # context's matmul, the mask; no LayerNorm or GELU pieces.
    assert not {"Mean", "Rsqrt", "Erf", "Erfc", "Tanh"} & set(kinds), kinds


def test_each_further_block_runs_fifteen_ops():
    # A block's dimensions come from the padding mask, the same tensor in
    # every block, so a second block computes no shapes of its own but one
    # (its residual's, for the fused add); q, k and v are split into heads
    # by one reshape and one transpose (then an unpack), not three of each.
    _, one, _, _ = _session_run([_block("gelu")])
    _, two, _, _ = _session_run([_block("gelu"), _block("gelu")])
    added = {k: two[k] - one[k] for k in two if two[k] != one[k]}
    added.pop("Const", None)
    if not onednn_enabled():  # the same graph, each fusion its pieces
        _assert_stock_ops(two, blocks=2)
        assert added["Unpack"] == 1, added  # q|k|v split at once
        return
    assert added == {
        "_MklNativeFusedMatMul+BiasAdd": 1,  # q|k|v
        "Reshape": 2,  # q|k|v to heads; the context from them
        "_MklTranspose": 2,
        "Unpack": 1,
        "_MklFusedBatchMatMulV2+Mul+Add": 1,
        "_MklSoftmax": 1,
        "_MklBatchMatMulV2": 1,
        "_MklNativeFusedMatMul+BiasAdd+Add": 2,
        "_MklLayerNorm": 2,
        "_MklNativeFusedMatMul+BiasAdd+GeluExact": 1,
        "Shape": 1,
    }, added


def test_bfloat16_matmuls_stay_bfloat16_after_grappler():
    """`serving_graph_bfloat16`, frozen and optimized: the reference's
    outputs to bfloat16 rounding; on oneDNN the four dense matmuls fused
    in bfloat16 (not cast back to float32 by grappler), the attention and
    the LayerNorms in float32."""
    block = _block("gelu")
    expected, _ = run_block(
        block, _inputs(), np.asarray(MASK), None, False, False, "reference"
    )
    outputs, kinds, stored, dtypes = _session_run(
        block, "serving_graph_bfloat16"
    )
    assert np.abs(outputs - np.asarray(expected)).max() <= BFLOAT16_TOLERANCE
    assert not stored & {"ReadVariableOp", "VarHandleOp"}, stored
    if not onednn_enabled():  # the plan refuses bfloat16 there; stock ops
        assert not [kind for kind in kinds if kind.startswith("_Mkl")]
        assert kinds["MatMul"] == 4 and dtypes["MatMul"] == {"bfloat16"}
        return
    matmuls = {
        "_MklNativeFusedMatMul+BiasAdd": 3,  # q|k|v, attention output, FFN
        "_MklNativeFusedMatMul+BiasAdd+GeluExact": 1,
    }
    for kind, count in matmuls.items():
        assert kinds[kind] == count, kinds
        assert dtypes[kind] == {"bfloat16"}, dtypes
    for kind in (
        "_MklLayerNorm",
        "_MklFusedBatchMatMulV2+Mul+Add",
        "_MklBatchMatMulV2",
        "_MklSoftmax",
    ):
        assert dtypes[kind] == {"float32"}, dtypes
    assert kinds["_MklLayerNorm"] == 2, kinds
    # No matmul left unfused, in any dtype.
    assert not {"MatMul", "_MklMatMul", "BiasAdd"} & set(kinds), kinds


def _embedding():
    layer = BertEmbedding(
        vocabulary_size=20, hidden_dim=HIDDEN, max_sequence_length=10
    )
    layer(np.zeros((1, 2), "int32"), np.zeros((1, 2), "int32"))
    return _random_weights(layer, seed=3, stddev=0.5)


def _embedding_ids():
    rng = np.random.default_rng(4)
    token_ids = rng.integers(0, 20, (3, 7)).astype("int32")
    segment_ids = (np.arange(7) >= 4).astype("int32")[None].repeat(3, 0)
    return token_ids, segment_ids


def _embedding_session_run(layer, served=True):
    """The embedding traced as an export traces it (`served`: in its
    serving form, every weight but the WordPiece table read as a
    constant), that table then frozen too so that a Session runs the graph
    alone: its outputs, the op kinds it ran after grappler, and the
    variables the traced graph read."""
    from tensorflow.python.framework import convert_to_constants

    table = layer.token_embedding.embeddings
    others = [w for w in layer.weights if w is not table]

    def embed(token_ids, segment_ids):
        return layer(token_ids, segment_ids, training=False)

    traced = tf.function(
        reading_frozen(embed, others) if served else embed,
        input_signature=[tf.TensorSpec((None, None), tf.int32)] * 2,
    )
    layer.served_call = served_embedding if served else None
    try:
        concrete = traced.get_concrete_function()
    finally:
        layer.served_call = None
    traced_ops = [node.op for node in concrete.graph.as_graph_def().node]
    reads, stored = traced_ops.count("ReadVariableOp"), set(traced_ops)
    constant = convert_to_constants.convert_variables_to_constants_v2(concrete)
    graph = tf.Graph()
    with graph.as_default():
        tf.graph_util.import_graph_def(constant.graph.as_graph_def(), name="")
    session = tf.compat.v1.Session(graph=graph)
    metadata = tf.compat.v1.RunMetadata()
    token_ids, segment_ids = _embedding_ids()
    names = [tensor.name for tensor in constant.inputs]
    result = session.run(
        constant.outputs[0].name,
        dict(zip(names, (token_ids, segment_ids))),
        options=tf.compat.v1.RunOptions(output_partition_graphs=True),
        run_metadata=metadata,
    )
    kinds = collections.Counter(
        node.op for g in metadata.partition_graphs for node in g.node
    )
    return result, kinds, stored, reads


def test_the_served_embedding_computes_its_call_as_one_layer_norm():
    """Served, `BertEmbedding` runs `served_embedding`: Keras'
    outputs (random weights, LayerNorm's too), the WordPiece table the
    one variable read, and on oneDNN one `_MklLayerNorm` and plain gathers
    (no wrapping of negative ids, no broadcast of the positions)."""
    layer = _embedding()
    token_ids, segment_ids = _embedding_ids()
    expected = np.asarray(layer(token_ids, segment_ids, training=False))
    outputs, kinds, stored, reads = _embedding_session_run(layer)
    assert np.abs(outputs - expected).max() <= TOLERANCE
    assert "FusedBatchNormV3" in stored and reads == 1, (stored, reads)
    # Not served: Keras' layers, every weight a variable.
    outputs, _, stored, reads = _embedding_session_run(layer, served=False)
    assert np.abs(outputs - expected).max() <= TOLERANCE
    assert "FusedBatchNormV3" not in stored and reads >= 5, (stored, reads)
    if not onednn_enabled():  # stock ops: the batch norm, unfused
        assert kinds["FusedBatchNormV3"] == 1, kinds
        assert not [kind for kind in kinds if kind.startswith("_Mkl")]
        return
    assert kinds["_MklLayerNorm"] == 1, kinds
    assert kinds["GatherV2"] == 2, kinds  # the position rows: one Slice
    left = {"Mean", "Rsqrt", "SquaredDifference", "SelectV2", "BroadcastTo"}
    assert not left & set(kinds), kinds


def test_reading_frozen_reads_constants_in_a_trace():
    """The variables given are constants of a graph traced; with none
    given the trace is the function's own (its assignments made)."""
    import keras

    variable = keras.Variable(np.arange(3.0, dtype="float32"))
    counter = keras.Variable(0.0)

    def double():
        return keras.ops.convert_to_tensor(variable) * 2.0

    def count():
        counter.assign_add(1.0)
        return keras.ops.convert_to_tensor(counter)

    def ops_of(function):
        graph = tf.function(function).get_concrete_function().graph
        return collections.Counter(n.op for n in graph.as_graph_def().node)

    frozen = reading_frozen(double, [variable])
    assert ops_of(frozen)["ReadVariableOp"] == 0
    assert ops_of(double)["ReadVariableOp"] == 1
    np.testing.assert_array_equal(frozen(), [0.0, 2.0, 4.0])  # eagerly
    unfrozen = reading_frozen(count, [])
    assert ops_of(unfrozen)["AssignVariableOp"] == 1
