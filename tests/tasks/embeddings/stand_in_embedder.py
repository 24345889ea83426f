"""A tiny embedder for the tests: mean over real tokens, L2-normalised.

The tests of embedding training need only an embedder's contract (the
backbone's inputs dict in, `(batch, hidden)` out, a `backbone`); this
keeps them independent of `keras_bert.BertTextEmbedder`'s other features.
"""

import keras
from keras import ops

import keras_bert
from tests.helpers import tiny_backbone_config


@keras.saving.register_keras_serializable(package="keras_bert_tests")
class MeanEmbedder(keras.Model):
    """Mean of the backbone's real-token outputs, L2-normalised."""

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone

    def call(self, inputs, training=None):
        sequence = self.backbone(inputs, training=training)["sequence_output"]
        mask = ops.cast(inputs["padding_mask"], sequence.dtype)[..., None]
        mean = ops.sum(sequence * mask, axis=1) / ops.maximum(
            ops.sum(mask, axis=1), 1.0
        )  # (batch, hidden)
        return mean / ops.maximum(
            ops.norm(mean, axis=-1, keepdims=True), 1e-12
        )

    def get_config(self):
        return {
            **super().get_config(),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(
            config["backbone"]
        )
        return cls(**config)


def tiny_embedder(seed=0, **config):
    """A `MeanEmbedder` on a tiny random backbone."""
    keras.utils.set_random_seed(seed)
    backbone = keras_bert.BertBackbone(**tiny_backbone_config(**config))
    return MeanEmbedder(backbone)
