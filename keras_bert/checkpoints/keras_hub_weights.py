"""Which keras-hub BERT variable holds each Hugging Face tensor.

keras-hub's `BertBackbone` (and `BertTextClassifier`) name their variables
by layer path (`transformer_layer_0/self_attention_layer/query/kernel`) and
keep attention kernels per head (`(hidden, heads, head_dim)`). This table
maps each path to the Hugging Face name `keras_bert.checkpoints.Checkpoint`
uses, both ways: reading a keras-hub preset turns its variables into
Hugging Face tensors, and `save_keras_hub_preset` fills a keras-hub model
from them, so every name is spelled here only.
"""

import numpy as np

# How a variable is laid out relative to its Hugging Face tensor:
# "copy": the same array; "bias": flattened; "kernel": `(in, out)` of the
# Hugging Face `(out, in)`; "head_kernel": a query/key/value kernel
# `(hidden, heads, head_dim)`; "merge_kernel": the attention output kernel
# `(heads, head_dim, hidden)`.
_EMBEDDINGS = (
    ("token_embedding/embeddings", "bert.embeddings.word_embeddings.weight",
     "copy"),
    ("position_embedding/embeddings",
     "bert.embeddings.position_embeddings.weight", "copy"),
    ("segment_embedding/embeddings",
     "bert.embeddings.token_type_embeddings.weight", "copy"),
    ("embeddings_layer_norm/gamma", "bert.embeddings.LayerNorm.weight",
     "copy"),
    ("embeddings_layer_norm/beta", "bert.embeddings.LayerNorm.bias", "copy"),
)  # fmt: skip
_BLOCK = (
    ("self_attention_layer/query", "attention.self.query", "head_kernel"),
    ("self_attention_layer/key", "attention.self.key", "head_kernel"),
    ("self_attention_layer/value", "attention.self.value", "head_kernel"),
    ("self_attention_layer/attention_output", "attention.output.dense",
     "merge_kernel"),
    ("feedforward_intermediate_dense", "intermediate.dense", "kernel"),
    ("feedforward_output_dense", "output.dense", "kernel"),
)  # fmt: skip
_BLOCK_LAYER_NORMS = (
    ("self_attention_layer_norm", "attention.output.LayerNorm"),
    ("feedforward_layer_norm", "output.LayerNorm"),
)
_POOLER = (("pooled_dense", "bert.pooler.dense", "kernel"),)
# keras-hub's BertTextClassifier: dropout, then a Dense named "logits".
CLASSIFIER = (("logits", "classifier", "kernel"),)


def keras_hub_table(num_layers, heads=()):
    """`(keras-hub variable path, Hugging Face name, layout)` triples.

    Args:
        num_layers: int. Transformer blocks of the backbone.
        heads: tuple. Extra dense layers, e.g. `CLASSIFIER`.

    Example:
    ```python
    keras_hub_table(1)[0][1]  # "bert.embeddings.word_embeddings.weight"
    len(keras_hub_table(1))  # 23
    ```
    """
    rows = list(_EMBEDDINGS)
    for index in range(num_layers):
        block = f"transformer_layer_{index}"
        prefix = f"bert.encoder.layer.{index}"
        for path, name, layout in _BLOCK:
            rows += _dense(f"{block}/{path}", f"{prefix}.{name}", layout)
        for path, name in _BLOCK_LAYER_NORMS:
            rows += [
                (f"{block}/{path}/gamma", f"{prefix}.{name}.weight", "copy"),
                (f"{block}/{path}/beta", f"{prefix}.{name}.bias", "copy"),
            ]
    for path, name, layout in _POOLER + tuple(heads):
        rows += _dense(path, name, layout)
    return rows


def _dense(path, name, layout):
    return [
        (f"{path}/kernel", f"{name}.weight", layout),
        (f"{path}/bias", f"{name}.bias", "bias"),
    ]


def to_huggingface(value, layout):
    """A keras-hub variable's value as its Hugging Face tensor."""
    value = np.asarray(value, dtype="float32")
    if layout == "copy":
        return value
    if layout == "bias":
        return value.reshape(-1)
    if layout == "head_kernel":
        value = value.reshape(value.shape[0], -1)
    elif layout == "merge_kernel":
        value = value.reshape(-1, value.shape[-1])
    return np.ascontiguousarray(value.T)


def from_huggingface(tensor, layout, shape):
    """A Hugging Face tensor in the layout of a keras-hub variable."""
    tensor = np.asarray(tensor, dtype="float32")
    if layout in ("kernel", "head_kernel", "merge_kernel"):
        tensor = tensor.T
    return tensor.reshape(shape)


def variables_by_path(model, num_layers, heads=()):
    """Each variable of a keras-hub model with its table row.

    Returns a list of `(variable, Hugging Face name, layout)`, one per row
    of `keras_hub_table(num_layers, heads)`.

    Raises:
        ValueError: if the model has a variable the table does not cover
            or lacks one it does (another keras-hub version or model).
    """
    table = keras_hub_table(num_layers, heads)
    variables = {variable.path: variable for variable in model.weights}
    known = {path for path, _, _ in table}
    unmapped = sorted(set(variables) - known)
    absent = sorted(known - set(variables))
    if unmapped or absent:
        raise ValueError(
            f"keras-hub's {type(model).__name__} does not have the "
            "variables keras_bert maps to BERT's tensors: "
            f"not in the map {unmapped[:5]}, not in the model {absent[:5]}. "
            "keras_bert reads keras-hub 0.32's BertBackbone and "
            "BertTextClassifier; install keras-hub>=0.32,<0.33."
        )
    return [(variables[path], name, layout) for path, name, layout in table]
