"""A backbone's outputs where a head reads them, and every layer's.

`BertBackbone` mixes these in: `outputs_at` (the last block computed only
at the positions a head reads) and `layer_outputs` (the embeddings and
every block's hidden states and attention, for feature-based use), each a
second path through the backbone's own layers and weights.
"""

import keras

from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS


def check_backbone_inputs(method, inputs):
    """Fails naming `method` unless `inputs` has the backbone's three."""
    missing = [name for name in BACKBONE_INPUTS if name not in inputs]
    if missing:
        raise ValueError(
            f"`{method}` needs the inputs {list(BACKBONE_INPUTS)}; "
            f"missing {missing}. Received: {sorted(inputs)}"
        )


class BackboneOutputs:
    """`outputs_at` and `layer_outputs` of a `BertBackbone`.

    Reads the backbone's `embedding`, `transformer_layers` and
    `pooler_dense`, and its `_encode(inputs, last_block_positions)`.
    """

    def outputs_at(self, inputs, positions=None):
        """The outputs a task head reads, the last block computed only there.

        The last transformer block attends over every token, but computes
        its queries, attention output, feed-forward layer and LayerNorms
        only at `[CLS]` and `positions`; the results equal `self(inputs)`'s
        gathered there, to float rounding. `BertClassifier` and
        `BertMaskedLM` build their graphs with it; call it on
        `keras.Input`s in a head of your own (docs/fine_tuning.md), or on
        concrete inputs.

        Args:
            inputs: dict of `token_ids`, `segment_ids`, `padding_mask`
                `(batch_size, sequence_length)`, symbolic or concrete.
            positions: int tensor `(batch_size, num_positions)` of the
                positions whose `sequence_output` is wanted, or `None`
                (only `pooled_output`).

        Returns:
            A dict with `pooled_output` `(batch_size, hidden_dim)` and, when
            `positions` is given, `sequence_output`
            `(batch_size, num_positions, hidden_dim)`.

        Example:
        ```python
        backbone = keras_bert.BertBackbone(
            vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
            intermediate_dim=32, max_sequence_length=16,
        )
        inputs = {
            "token_ids": np.array([[2, 7, 9, 3, 0]]),
            "segment_ids": np.zeros((1, 5), "int32"),
            "padding_mask": np.array([[1, 1, 1, 1, 0]]),
        }
        outputs = backbone.outputs_at(inputs, np.array([[1, 2]]))
        outputs["sequence_output"].shape  # (1, 2, 8)
        ```
        """
        check_backbone_inputs("outputs_at", inputs)
        cls_position = keras.ops.zeros_like(inputs["token_ids"][:, :1])
        if positions is None:
            last_block_positions = cls_position
        else:
            last_block_positions = keras.ops.concatenate(
                [cls_position, keras.ops.cast(positions, cls_position.dtype)],
                axis=1,
            )
        x = self._encode(inputs, last_block_positions)
        outputs = {"pooled_output": self.pooler_dense(x[:, 0, :])}
        if positions is not None:
            outputs["sequence_output"] = x[:, 1:, :]
        return outputs

    def layer_outputs(self, inputs, return_attention_probabilities=False):
        """Every layer's hidden states (and, on request, attention).

        BERT's feature-based use and `transformers`'
        `output_hidden_states=True` / `output_attentions=True`, through a
        second path over the same layers and weights: the backbone's own
        graph is unchanged. Call it on `keras.Input`s inside a model of
        your own, or on concrete inputs; docs/embeddings.md shows both.

        Args:
            inputs: dict of `token_ids`, `segment_ids`, `padding_mask`
                `(batch_size, sequence_length)`, symbolic or concrete.
            return_attention_probabilities: bool. Whether to add each
                block's attention probabilities (concrete inputs only).
                Defaults to `False`.

        Returns:
            A dict with `hidden_states`, a list of `num_layers + 1` tensors
            `(batch_size, sequence_length, hidden_dim)` (the embeddings,
            then each block's output), `sequence_output` and
            `pooled_output` as `self(inputs)` returns them and, on request,
            `attention_probabilities`, a list of `num_layers` tensors
            `(batch_size, num_heads, sequence_length, sequence_length)`.

        Example:
        ```python
        backbone = keras_bert.BertBackbone(
            vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
            intermediate_dim=32, max_sequence_length=16,
        )
        backbone.trainable = False
        inputs = keras_bert.models.bert_backbone.keras_inputs()
        hidden_states = backbone.layer_outputs(inputs)["hidden_states"]
        features = keras.layers.Add()(hidden_states[-2:])  # last two, summed
        tagger = keras.Model(inputs, keras.layers.Dense(5)(features))
        tagger({
            "token_ids": np.array([[2, 7, 9, 3, 0]]),
            "segment_ids": np.zeros((1, 5), "int32"),
            "padding_mask": np.array([[1, 1, 1, 1, 0]]),
        }).shape  # (1, 5, 5)
        ```
        """
        check_backbone_inputs("layer_outputs", inputs)
        if return_attention_probabilities and any(
            keras.backend.is_keras_tensor(inputs[name])
            for name in BACKBONE_INPUTS
        ):
            raise ValueError(
                "`layer_outputs(..., return_attention_probabilities=True)` "
                "takes concrete inputs (arrays or tensors), not "
                "`keras.Input`s: Keras 3.15's functional models cannot yet "
                "hold a block called both ways. Call it on the batch "
                "itself, or build the functional model with "
                "return_attention_probabilities=False (hidden states only)."
            )
        padding_mask = inputs["padding_mask"]
        x = self.embedding(inputs["token_ids"], inputs["segment_ids"])
        hidden_states = [x]
        attention_probabilities = []
        for block in self.transformer_layers:
            if return_attention_probabilities:
                x, probs = block(
                    x,
                    padding_mask=padding_mask,
                    return_attention_probabilities=True,
                )
                attention_probabilities.append(probs)
            else:
                x = block(x, padding_mask=padding_mask)
            hidden_states.append(x)
        outputs = {
            "sequence_output": x,
            "pooled_output": self.pooler_dense(x[:, 0, :]),
            "hidden_states": hidden_states,
        }
        if return_attention_probabilities:
            outputs["attention_probabilities"] = attention_probabilities
        return outputs
