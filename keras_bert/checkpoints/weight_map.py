"""Which Hugging Face tensors make up each of our weights.

One table serves every direction: Google checkpoints are renamed to Hugging
Face names when read, and `save_huggingface` writes through the same table,
so a name is spelled in exactly one place.
"""

import dataclasses

import numpy as np

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_masked_lm import BertMaskedLM

# The Hugging Face name prefix of each group's tensors; a group is loaded
# whole or (for heads absent from a checkpoint) not at all.
GROUP_PREFIXES = {
    "backbone": "bert.",
    "pooler": "bert.pooler.",
    "masked_lm": "cls.predictions.",
    "next_sentence": "cls.seq_relationship.",
    "classifier": "classifier.",
}


@dataclasses.dataclass
class WeightSpec:
    """One Keras variable and the Hugging Face tensors it is made of.

    The variable is the concatenation, along its last axis, of `names`'
    tensors, each transposed first when `transpose` is true (PyTorch
    `Linear` weights are `(out, in)`, Keras kernels `(in, out)`). BERT's
    separate query, key and value projections become our fused `qkv_dense`
    this way.

    Args:
        variable: `keras.Variable`.
        names: tuple of str. Hugging Face names, in concatenation order.
        transpose: bool. Whether each tensor is transposed.
    """

    variable: object
    names: tuple
    transpose: bool = False

    def expected_shape(self, index):
        """The Hugging Face shape the tensor `names[index]` must have."""
        shape = list(self.variable.shape)
        shape[-1] //= len(self.names)
        return tuple(reversed(shape)) if self.transpose else tuple(shape)

    def to_keras(self, tensors):
        """Builds the variable's value from `tensors`, in `names` order."""
        parts = [t.T if self.transpose else t for t in tensors]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts, axis=-1)

    def from_keras(self):
        """Splits the variable's value into the named tensors."""
        value = np.asarray(self.variable.numpy(), dtype="float32")
        parts = np.split(value, len(self.names), axis=-1)
        return {
            name: np.ascontiguousarray(part.T if self.transpose else part)
            for name, part in zip(self.names, parts)
        }


def weight_map(model):
    """Maps every weight of `model` to Hugging Face tensor names.

    Args:
        model: `BertBackbone`, `BertMaskedLM` or `BertClassifier`.

    Returns a dict from group name (`"backbone"`, `"pooler"`, `"masked_lm"`,
    `"next_sentence"`, `"classifier"`; only those the model has) to a list
    of `WeightSpec`, covering every variable of the model exactly once. The
    pooler is a group of its own because `BertForMaskedLM` checkpoints have
    none.

    Example:
    ```python
    backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
    specs = weight_map(backbone)["backbone"]
    specs[0].names  # ("bert.embeddings.word_embeddings.weight",)
    ```
    """
    if isinstance(model, BertBackbone):
        return _backbone_groups(model)
    if isinstance(model, BertMaskedLM):
        head = model.masked_lm_head
        return {
            **_backbone_groups(model.backbone),
            "masked_lm": [
                *_dense("cls.predictions.transform.dense", head.dense),
                *_layer_norm(
                    "cls.predictions.transform.LayerNorm", head.layer_norm
                ),
                WeightSpec(head.output_bias, ("cls.predictions.bias",)),
            ],
            "next_sentence": _dense("cls.seq_relationship", model.nsp_dense),
        }
    if isinstance(model, BertClassifier):
        return {
            **_backbone_groups(model.backbone),
            "classifier": _dense("classifier", model.output_dense),
        }
    raise TypeError(
        "Expected a keras_bert BertBackbone, BertMaskedLM or BertClassifier, "
        f"but received an object of type {type(model).__name__}."
    )


def _dense(prefix, layer, parts=None):
    names = parts or (prefix,)
    return [
        WeightSpec(layer.kernel, tuple(f"{n}.weight" for n in names), True),
        WeightSpec(layer.bias, tuple(f"{n}.bias" for n in names)),
    ]


def _layer_norm(prefix, layer):
    return [
        WeightSpec(layer.gamma, (f"{prefix}.weight",)),
        WeightSpec(layer.beta, (f"{prefix}.bias",)),
    ]


def _backbone_groups(backbone):
    embedding = backbone.embedding
    specs = [
        WeightSpec(
            embedding.token_embedding.embeddings,
            ("bert.embeddings.word_embeddings.weight",),
        ),
        WeightSpec(
            embedding.position_embedding.embeddings,
            ("bert.embeddings.position_embeddings.weight",),
        ),
        WeightSpec(
            embedding.segment_embedding.embeddings,
            ("bert.embeddings.token_type_embeddings.weight",),
        ),
        *_layer_norm("bert.embeddings.LayerNorm", embedding.layer_norm),
    ]
    for index, block in enumerate(backbone.transformer_layers):
        prefix = f"bert.encoder.layer.{index}"
        attention = f"{prefix}.attention.self"
        specs += _dense(
            None,
            block.qkv_dense,
            parts=(
                f"{attention}.query",
                f"{attention}.key",
                f"{attention}.value",
            ),
        )
        specs += _dense(
            f"{prefix}.attention.output.dense", block.attention_output_dense
        )
        specs += _layer_norm(
            f"{prefix}.attention.output.LayerNorm", block.attention_layer_norm
        )
        specs += _dense(
            f"{prefix}.intermediate.dense", block.intermediate_dense
        )
        specs += _dense(f"{prefix}.output.dense", block.output_dense)
        specs += _layer_norm(
            f"{prefix}.output.LayerNorm", block.output_layer_norm
        )
    return {
        "backbone": specs,
        "pooler": _dense("bert.pooler.dense", backbone.pooler_dense),
    }
