"""An export stores each block's weights once, whichever endpoints read
them: the WordPiece table as a variable, each block's weights as
constants of the one function every endpoint calls."""

import math
import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import keras_bert
from keras_bert.serving import export_saved_model
from tests.helpers import EXPORT_VOCABULARY


def _float_constant_bytes(path):
    """Bytes of the float32 constants in the SavedModel's graph and its
    functions (the frozen weights)."""
    saved_model = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    graph = saved_model.meta_graphs[0].graph_def
    nodes = list(graph.node)
    for function in graph.library.function:
        nodes.extend(function.node_def)
    total = 0
    for node in nodes:
        tensor = node.attr["value"].tensor
        if node.op == "Const" and tensor.dtype == tf.float32.as_datatype_enum:
            total += len(tensor.tensor_content) + 4 * len(tensor.float_val)
    return total


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


@pytest.mark.slow  # exports a SavedModel
def test_the_export_stores_each_weight_once(tmp_path):
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
    path = export_saved_model(classifier, preprocessor, str(tmp_path / "c"))
    weight_bytes = sum(4 * int(np.prod(w.shape)) for w in classifier.weights)
    stored = _variable_bytes(path) + _float_constant_bytes(path)
    # Two endpoints (text, ids) stored the blocks twice: 1.99x. Each
    # endpoint still has its own copy of the small frozen weights outside
    # the blocks (position table, pooler, head): 1.06x here.
    ratio = stored / weight_bytes
    assert 1 <= ratio <= 1.1, ratio
