"""An export stores each weight once, whichever endpoints read them: the
WordPiece table as a variable, each block's weights as constants of the
one function every endpoint calls, the other frozen weights (positions,
pooler, head) as constants of one more; and the tokenizer's per-code-point
table is a small part of it."""

import math
import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import keras_bert
from keras_bert.serving import export_saved_model
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import on_cpu


def _constant_bytes(graph, dtypes):
    """Bytes of the constants of these dtypes in a GraphDef and its
    functions."""
    nodes = list(graph.node)
    for function in graph.library.function:
        nodes.extend(function.node_def)
    enums = {dtype.as_datatype_enum for dtype in dtypes}
    total = 0
    for node in nodes:
        tensor = node.attr["value"].tensor
        if node.op == "Const" and tensor.dtype in enums:
            total += len(tensor.tensor_content) + 4 * len(tensor.float_val)
            total += 4 * len(tensor.int_val)
    return total


def _float_constant_bytes(path):
    """Bytes of the float32 constants in the SavedModel's graph and its
    functions (the frozen weights)."""
    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    return _constant_bytes(saved_model.meta_graphs[0].graph_def, [tf.float32])


# The integer types the tokenizer's tables can be stored in.
INTEGERS = [tf.int8, tf.uint8, tf.int16, tf.uint16, tf.int32, tf.int64]


@pytest.mark.parametrize("strip_accents", [False, True])
def test_the_tokenizers_tables_are_small_constants(strip_accents):
    """The per-code-point table is stored relative to each code point, so
    that the blocks of unchanged characters are one block, in the
    narrowest dtype: 0.30 MB of constants for an uncased tokenizer
    (accents stripped: the Hangul syllables' expansions are most of it),
    where every code point's absolute entry took 4.7 MB."""
    tokenizer = keras_bert.BertTokenizer(
        EXPORT_VOCABULARY, strip_accents=strip_accents
    )
    traced = tf.function(
        lambda text: tokenizer(text),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    graph = traced.get_concrete_function().graph.as_graph_def()
    # Integer constants, less the FastWordpiece model (uint8 but not the
    # tokenizer's tables, captured rather than a constant of the trace).
    assert _constant_bytes(graph, INTEGERS) < 400_000
    # The same ids as Hugging Face's (tests/text/test_parity.py), here
    # on what a table relative to the code point could get wrong.
    ids = tokenizer(tf.constant(["The QUICK brown fox", "Ünïcödé ǅ 𝐀 한"]))
    assert ids.to_list()[0] == [5, 6, 7, 8]


def _variable_bytes(path):
    reader = tf.train.load_checkpoint(
        os.path.join(path, "variables", "variables")
    )
    dtypes = reader.get_variable_to_dtype_map()
    return sum(
        4 * math.prod(shape)
        for key, shape in reader.get_variable_to_shape_map().items()
        if dtypes[key] == tf.float32 and key.endswith("VARIABLE_VALUE")
    )


# The CPUs each export is planned for (`tests.helpers.on_cpu`: flags,
# oneDNN on) and its `streams`: the remapper's forms with frozen weights,
# the blocks' own inference reading variables (the default export where
# oneDNN is off without AVX-512) and streams with Keras' layers.
PLANS = {
    "serving_graph": (({"avx2", "avx512f", "avx512_vnni"}, True), None),
    "blocks_own_inference": (({"avx2"}, False), None),
    "streams_without_forms": (({"avx2"}, False), 2),
}


@pytest.mark.slow  # exports a SavedModel
@pytest.mark.parametrize("plan", PLANS)
def test_the_export_stores_each_weight_once(tmp_path, plan):
    # Blocks large enough that their weights dominate the graph's own
    # small constants (shapes, the mask bias, ...).
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(EXPORT_VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=64,
        intermediate_dim=256,
        max_sequence_length=32,
    )
    classifier = keras_bert.BertClassifier(backbone, num_classes=3)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(EXPORT_VOCABULARY), sequence_length=16
    )
    cpu, streams = PLANS[plan]
    with on_cpu(*cpu):
        path = export_saved_model(
            classifier, preprocessor, str(tmp_path / "c"), streams=streams
        )
    weight_bytes = sum(4 * int(np.prod(w.shape)) for w in classifier.weights)
    stored = _variable_bytes(path) + _float_constant_bytes(path)
    # Two endpoints (text, ids) stored the blocks twice: 1.99x. With each
    # endpoint's own copy of the small frozen weights outside the blocks
    # (position table, pooler, head): 1.06x here. With the model tracked
    # (keras-team/keras#23553: its Keras variables and the ones the
    # endpoints capture): 2.00x.
    ratio = stored / weight_bytes
    assert 1 <= ratio <= 1.02, ratio
    # The whole export: the weights, the tokenizer's tables (300 kB for
    # the per-code-point table and the expansions, 4.7 MB when stored as
    # every code point's int32 entry), the WordPiece model and the
    # graph's ops.
    size = sum(
        os.path.getsize(os.path.join(d, n))
        for d, _, names in os.walk(path)
        for n in names
    )
    assert size < weight_bytes + 1_000_000, (size, weight_bytes)
