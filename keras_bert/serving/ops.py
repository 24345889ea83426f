"""Which ops a SavedModel needs: check it before TF Serving does."""

from tensorflow.core.protobuf import saved_model_pb2

from keras_bert import files

# The tensorflow-text ops that TensorFlow Serving's model server links in
# (tensorflow-text's `ops_lib` target), by op name.
TF_SERVING_TEXT_OPS = frozenset(
    {
        "CaseFoldUTF8",
        "FastBertNormalize",
        "FastWordpieceTokenizeWithOffsets",
        "FindSourceOffsets",
        "NormalizeUTF8",
        "NormalizeUTF8WithOffsetsMap",
        "RegexSplitWithOffsets",
        "TFText>FastWordpieceDetokenize",
        "TFText>RoundRobinGenerateMasks",
        "TFText>RoundRobinTrim",
        "TFText>WhitespaceTokenizeWithOffsetsV2",
        "UnicodeScriptTokenizeWithOffsets",
        "WhitespaceTokenizeWithOffsets",
        "WordpieceTokenizeWithOffsets",
    }
)

# Ops that call back into Python: never servable.
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


def saved_model_op_types(export_dir):
    """Every op type in a SavedModel's graphs and all their functions.

    Args:
        export_dir: str. A SavedModel directory (one version directory).

    Returns:
        A sorted list of op type names (function calls to the SavedModel's
        own functions are resolved, not listed).

    Example:
    ```python
    ops = keras_bert.serving.saved_model_op_types("saved_models/sst2/1")
    ```
    """
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString(
        files.read_bytes(files.join(export_dir, "saved_model.pb"))
    )
    ops, functions = set(), set()
    for meta_graph in saved_model.meta_graphs:
        graph = meta_graph.graph_def
        ops.update(node.op for node in graph.node)
        for function in graph.library.function:
            functions.add(function.signature.name)
            ops.update(node.op for node in function.node_def)
    return sorted(ops - functions)
