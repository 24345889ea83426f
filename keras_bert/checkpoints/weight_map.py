"""Which Hugging Face tensors make up each of our weights.

One table serves every direction: Google checkpoints are renamed to Hugging
Face names when read, and `save_huggingface` writes through the same table,
so a name is spelled in exactly one place.
"""

import dataclasses

import keras
import numpy as np

from keras_bert.checkpoints.heads import checkpoint_head
from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.task import Task

# The Hugging Face name prefix of the encoder's groups; task heads declare
# theirs in their `CheckpointHead.groups` (`keras_bert.checkpoints.heads`).
BACKBONE_PREFIXES = {"backbone": "bert.", "pooler": "bert.pooler."}


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
        model: `BertBackbone` or a task model (`keras_bert.models.Task`).

    Returns a dict from group name (`"backbone"`, `"pooler"`, then the
    model's head groups, e.g. `"masked_lm"`, `"next_sentence"`,
    `"classifier"`) to a list of `WeightSpec`, covering every variable of
    the model exactly once. The pooler is a group of its own because
    `BertForMaskedLM` checkpoints have none.

    Example:
    ```python
    backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
    specs = weight_map(backbone)["backbone"]
    specs[0].names  # ("bert.embeddings.word_embeddings.weight",)
    ```
    """
    if isinstance(model, BertBackbone):
        return _backbone_groups(model)
    if not isinstance(model, Task):
        raise TypeError(
            "Expected a keras_bert BertBackbone or task model (BertMaskedLM, "
            "BertClassifier, ...), but received an object of type "
            f"{type(model).__name__}."
        )
    groups = _backbone_groups(model.backbone)
    for group, weights in checkpoint_head(model).weights(model).items():
        groups[group] = [
            spec
            for name, holder in weights.items()
            for spec in _specs(name, holder)
        ]
    return groups


def group_prefixes(model):
    """Group name → the Hugging Face name prefix of its tensors."""
    if isinstance(model, BertBackbone):
        return dict(BACKBONE_PREFIXES)
    return {**BACKBONE_PREFIXES, **checkpoint_head(model).groups}


def _specs(name, holder):
    if isinstance(holder, keras.layers.Dense):
        return _dense(name, holder)
    if isinstance(holder, keras.layers.LayerNormalization):
        return _layer_norm(name, holder)
    if isinstance(holder, keras.Variable):
        return [WeightSpec(holder, (name,))]
    raise TypeError(
        f"The checkpoint head's weights() map {name!r} to a "
        f"{type(holder).__name__}; "
        "expected a Dense layer, a LayerNorm or a keras.Variable."
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
