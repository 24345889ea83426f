"""The model that trains an embedder on text pairs: both sides, one loss."""

import keras
from keras import ops

from keras_bert.training.multiple_negatives_ranking_loss import (
    MultipleNegativesRankingLoss,
)

# The inputs' keys, in the order the loss reads the columns.
PAIR_INPUTS = ("anchor", "positive")


@keras.saving.register_keras_serializable(package="keras_bert")
class PairEmbeddingModel(keras.Model):
    """Embeds anchors and positives with one embedder, for a pair loss.

    The training model of `recipes/embeddings.py`: it shares every weight
    with `embedder` (e.g. a `keras_bert.BertTextEmbedder`), calls it on
    the anchors' and the positives' inputs (each cut to its own longest
    row, so short queries do not pay for long passages' padding) and
    stacks the two embeddings for
    `keras_bert.training.MultipleNegativesRankingLoss`, its default loss.
    Train it, then use or export `embedder`.

    Args:
        embedder: a `keras.Model` from the backbone's inputs dict
            (`token_ids`, `segment_ids`, `padding_mask`) to embeddings
            `(batch_size, hidden_dim)`, with a `backbone` attribute.
        scale: float. The loss's similarity scale. Defaults to `20.0`.
        **kwargs: `keras.Model` arguments (`name`, ...).

    Call arguments:
        inputs: dict `{"anchor": features, "positive": features}`, each a
            dict of int `(batch_size, sequence_length)` backbone inputs
            (the two sequence lengths may differ).
        training: bool. Dropout on or off.

    Returns:
        float tensor `(batch_size, 2, hidden_dim)`: anchors' then
        positives' embeddings.

    Example:
    ```python
    backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
    model = PairEmbeddingModel(keras_bert.BertTextEmbedder(backbone))
    model.compile(optimizer="adam")  # MultipleNegativesRankingLoss(20.0)
    ids = {"token_ids": np.ones((4, 8), "int32"),
           "segment_ids": np.zeros((4, 8), "int32"),
           "padding_mask": np.ones((4, 8), "int32")}
    model.fit({"anchor": ids, "positive": ids}, np.zeros(4), epochs=1)
    ```
    """

    def __init__(self, embedder, scale=20.0, **kwargs):
        super().__init__(**kwargs)
        # Checked (and the error worded) by the loss it builds.
        MultipleNegativesRankingLoss(scale)
        self.embedder = embedder
        self.scale = scale

    @property
    def backbone(self):
        """The embedder's `BertBackbone` (for LoRA and the runner)."""
        return self.embedder.backbone

    def call(self, inputs, training=None):
        missing = [key for key in PAIR_INPUTS if key not in inputs]
        if missing:
            raise ValueError(
                f"PairEmbeddingModel takes a dict with keys {PAIR_INPUTS}, "
                f"each the backbone's inputs. Missing: {missing}; received "
                f"keys {sorted(inputs)}."
            )
        embeddings = [
            self.embedder(inputs[key], training=training) for key in PAIR_INPUTS
        ]  # each (batch, hidden)
        return ops.stack(embeddings, axis=1)  # (batch, 2, hidden)

    def compile(self, optimizer="adam", loss=None, **kwargs):
        """Compiles with `MultipleNegativesRankingLoss(self.scale)` by default.

        Args:
            optimizer: as `keras.Model.compile`. Defaults to `"adam"`.
            loss: a loss, or `None` for the in-batch negatives loss.
            **kwargs: other `keras.Model.compile` arguments.
        """
        if "gradient_accumulation_steps" in kwargs:
            raise ValueError(
                "PairEmbeddingModel does not accumulate gradients: the "
                "in-batch negatives of a micro-batch would not be the "
                "batch's. Received: gradient_accumulation_steps="
                f"{kwargs['gradient_accumulation_steps']}. Use a larger "
                "--batch_size (or none of --gradient_accumulation_steps)."
            )
        if loss is None:
            loss = MultipleNegativesRankingLoss(self.scale)
        super().compile(optimizer=optimizer, loss=loss, **kwargs)

    def get_config(self):
        return {
            **super().get_config(),
            "embedder": keras.saving.serialize_keras_object(self.embedder),
            "scale": self.scale,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["embedder"] = keras.saving.deserialize_keras_object(
            config["embedder"]
        )
        return cls(**config)
