"""The BERT encoder network."""

import keras

from keras_bert.layers.activations import validate_activation
from keras_bert.layers.bert_embedding import BertEmbedding
from keras_bert.layers.initializers import encoder_initializer
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.models.backbone_outputs import BackboneOutputs
from keras_bert.models.loading import CheckpointLoading
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.validation import check_positive_int


def keras_inputs(names=BACKBONE_INPUTS, windows=False):
    """A dict of named int32 `keras.Input`s `(batch_size, sequence_length)`.

    The inputs of `BertBackbone`'s functional graph and of every task model
    built on it; a head with inputs of its own adds their names (e.g.
    `keras_inputs(BACKBONE_INPUTS + ("masked_positions",))`). With
    `windows=True`, `(batch_size, windows, sequence_length)`: documents
    read in windows (`BertClassifier(..., doc_stride=...)`).
    """
    shape = (None, None) if windows else (None,)
    return {
        name: keras.Input(shape=shape, dtype="int32", name=name)
        for name in names
    }


@keras.saving.register_keras_serializable(package="keras_bert")
class BertBackbone(BackboneOutputs, CheckpointLoading, keras.Model):
    """BERT: embeddings, a stack of transformer encoder blocks, a pooler.

    A functional `keras.Model` that maps a dict of `token_ids`,
    `segment_ids` and `padding_mask` to a dict of `sequence_output` (the
    last block's hidden states) and `pooled_output` (dense + tanh on the
    `[CLS]` hidden state). It has no task head: use it through a task
    model, or on its own for features (`outputs_at`, `layer_outputs`).

    Args:
        vocabulary_size: int. Number of WordPiece ids.
        num_layers: int. Number of transformer blocks (L).
        num_heads: int. Attention heads per block (A). Must divide
            `hidden_dim`.
        hidden_dim: int. Hidden size (H).
        intermediate_dim: int. Feed-forward width (4H in BERT).
        dropout: float. Dropout of the embeddings and of every block.
            Defaults to `0.1`.
        max_sequence_length: int. Number of learned positions. Defaults to
            `512`.
        num_segments: int. Number of segment ids. Defaults to `2`.
        attention_dropout: float. Dropout on attention probabilities.
            Defaults to `None` (same as `dropout`).
        activation: str. `"gelu"` (exact erf, default) or
            `"gelu_approximate"` (tanh form, Google's original code).
        layer_norm_epsilon: float. Defaults to `1e-12`.
        initializer_range: float. Standard deviation of the truncated-normal
            initialisation of every weight matrix. Defaults to `0.02`.
        dtype: str or `keras.DTypePolicy`. Dtype policy of the layers, e.g.
            `"mixed_bfloat16"`. Defaults to the global policy.
        optimizations: tuple of str. Names of
            `keras_bert.layers.optimizations.OPTIMIZATIONS`, each computing
            the same function faster; `()` runs the blocks' reference with
            Keras' own layers. Defaults to `None`: all of them.
        lora_rank: int or `None`. If set, LoRA of this rank is enabled
            once the backbone is built (see `enable_lora`); a saved
            `.keras` file records it, so a reloaded model has LoRA again.
            Defaults to `None`: no LoRA.
        lora_target_layer_names: tuple of str or `None`. With `lora_rank`,
            the blocks' dense layers that get LoRA (see `enable_lora`).
            Defaults to `None`: `("qkv_dense",)`.
        **kwargs: `name` and `trainable`.

    Inputs: a dict of int tensors of shape `(batch_size, sequence_length)`:
        `token_ids`, `segment_ids`, and `padding_mask` (1 for real tokens,
        0 for padding).

    Outputs: a dict with `sequence_output` `(batch_size, sequence_length,
        hidden_dim)` and `pooled_output` `(batch_size, hidden_dim)`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    outputs = backbone({
        "token_ids": np.array([[2, 7, 9, 3, 0]]),
        "segment_ids": np.zeros((1, 5), "int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 0]]),
    })
    outputs["pooled_output"].shape  # (1, 8)
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805)
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        attention_dropout=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        dtype=None,
        optimizations=None,
        lora_rank=None,
        lora_target_layer_names=None,
        **kwargs,
    ):
        if unknown := set(kwargs) - {"name", "trainable"}:
            raise ValueError(
                "Unrecognized keyword arguments passed to BertBackbone: "
                f"{ {key: kwargs[key] for key in sorted(unknown)} }."
            )
        for name, value in (
            ("vocabulary_size", vocabulary_size),
            ("num_layers", num_layers),
            ("num_heads", num_heads),
            ("hidden_dim", hidden_dim),
            ("intermediate_dim", intermediate_dim),
            ("max_sequence_length", max_sequence_length),
            ("num_segments", num_segments),
        ):
            check_positive_int(name, value)
        if hidden_dim % num_heads != 0:
            raise ValueError(
                f"`hidden_dim` must be divisible by `num_heads`, but "
                f"hidden_dim={hidden_dim} and num_heads={num_heads} leave a "
                f"remainder of {hidden_dim % num_heads}. Choose num_heads so "
                "that each head has the same width (BERT uses heads of 64, "
                f"e.g. num_heads={max(1, hidden_dim // 64)})."
            )
        validate_activation(activation)
        optimizations = validate_optimizations(optimizations)
        initializer = encoder_initializer(initializer_range)

        # === Layers ===
        self.embedding = BertEmbedding(
            vocabulary_size=vocabulary_size,
            hidden_dim=hidden_dim,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer=initializer,
            dtype=dtype,
            optimizations=optimizations,
            name="embedding",
        )
        self.transformer_layers = [
            TransformerEncoderBlock(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                dropout=dropout,
                attention_dropout=attention_dropout,
                activation=activation,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=initializer,
                dtype=dtype,
                optimizations=optimizations,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooler_dense = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range
            ),
            dtype=dtype,
            name="pooler_dense",
        )

        # === Functional Model ===
        inputs = keras_inputs()
        sequence_output = self._encode(inputs)
        pooled_output = self.pooler_dense(sequence_output[:, 0, :])
        super().__init__(
            inputs=inputs,
            outputs={
                "sequence_output": sequence_output,
                "pooled_output": pooled_output,
            },
            **kwargs,
        )
        # A functional model does not take a dtype: record the policy its
        # layers use, so that heads, `get_config` and saving see it.
        self.dtype_policy = keras.dtype_policies.get(
            dtype if dtype is not None else keras.config.dtype_policy()
        )

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.attention_dropout = attention_dropout
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.optimizations = optimizations
        self.lora_rank = None
        self.lora_target_layer_names = None
        if lora_rank is not None:
            self.enable_lora(lora_rank, lora_target_layer_names)

    def enable_lora(self, rank, target_layer_names=None):
        """Freezes the backbone and adds trainable LoRA weights to it.

        `W + A @ B` with `A`, `B` trained and `W` frozen, on the named dense
        layers of every block; the rest of the backbone is frozen, a head
        stays trainable. See `keras_bert.models.lora` and
        docs/fine_tuning.md.

        Args:
            rank: int. The rank of the update, from 1 to `hidden_dim`.
            target_layer_names: tuple of str or `None`. Names among
                `keras_bert.models.lora.LORA_TARGET_LAYER_NAMES`. Defaults
                to `None`: `("qkv_dense",)`, the fused q | k | v projection.

        Example:
        ```python
        backbone = keras_bert.BertBackbone(
            vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
            intermediate_dim=32, max_sequence_length=16,
        )
        backbone.enable_lora(rank=2)
        len(backbone.trainable_weights)  # 4: A and B of two blocks
        ```

        References:
            - [Hu et al., 2021](https://arxiv.org/abs/2106.09685)
        """
        from keras_bert.models.lora import enable_lora  # imports this module

        enable_lora(self, rank, target_layer_names)

    def _encode(self, inputs, last_block_positions=None):
        """The last block's hidden states (at `last_block_positions`)."""
        padding_mask = inputs["padding_mask"]
        x = self.embedding(inputs["token_ids"], inputs["segment_ids"])
        for block in self.transformer_layers[:-1]:
            x = block(x, padding_mask=padding_mask)
        return self.transformer_layers[-1](
            x, padding_mask=padding_mask, query_positions=last_block_positions
        )

    @property
    def token_embedding(self):
        """The `keras.layers.Embedding` of WordPiece ids (tied by heads)."""
        return self.embedding.token_embedding

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "attention_dropout": self.attention_dropout,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "optimizations": list(self.optimizations),
            "lora_rank": self.lora_rank,
            "lora_target_layer_names": (
                list(self.lora_target_layer_names)
                if self.lora_target_layer_names
                else None
            ),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)
