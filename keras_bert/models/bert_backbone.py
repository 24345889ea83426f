"""The BERT encoder network."""

import keras

from keras_bert.layers.activations import validate_activation
from keras_bert.layers.bert_embedding import BertEmbedding
from keras_bert.layers.initializers import clone_initializer
from keras_bert.layers.optimizations import validate_optimizations
from keras_bert.layers.transformer_encoder_block import TransformerEncoderBlock
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.validation import check_positive_int


def keras_inputs(names=BACKBONE_INPUTS):
    """A dict of named int32 `keras.Input`s `(batch_size, sequence_length)`.

    The inputs of `BertBackbone`'s functional graph and of every task model
    built on it; a head with inputs of its own adds their names (e.g.
    `keras_inputs(BACKBONE_INPUTS + ("masked_positions",))`).
    """
    return {
        name: keras.Input(shape=(None,), dtype="int32", name=name)
        for name in names
    }


# The dense layers of every `TransformerEncoderBlock` that LoRA can adapt.
LORA_TARGET_LAYER_NAMES = (
    "qkv_dense",
    "attention_output_dense",
    "intermediate_dense",
    "output_dense",
)
# The fused query | key | value projection (see `BertBackbone.enable_lora`).
DEFAULT_LORA_TARGET_LAYER_NAMES = ("qkv_dense",)


def _check_backbone_inputs(method, inputs):
    missing = [name for name in BACKBONE_INPUTS if name not in inputs]
    if missing:
        raise ValueError(
            f"`{method}` needs the inputs {list(BACKBONE_INPUTS)}; "
            f"missing {missing}. Received: {sorted(inputs)}"
        )


@keras.saving.register_keras_serializable(package="keras_bert")
class BertBackbone(keras.Model):
    """BERT: embeddings, a stack of transformer encoder blocks, a pooler.

    A functional `keras.Model` that maps a dict of `token_ids`,
    `segment_ids` and `padding_mask` to a dict of `sequence_output` (the
    last block's hidden states) and `pooled_output` (dense + tanh on the
    `[CLS]` hidden state). It has no task head; use it through
    `BertMaskedLM` or `BertClassifier`, or on its own for features.

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
        optimizations: tuple of str. The speed optimisations the layers use
            (`keras_bert.layers.optimizations.OPTIMIZATIONS`), each
            computing the same function; `()` runs the blocks' reference
            computation with Keras' own layers. `"query_positions_only"`
            selects `outputs_at`'s last block at the heads' positions.
            Defaults to `None`: all of them.
        lora_rank: int or `None`. If set, LoRA of this rank is enabled
            once the backbone is built (see `enable_lora`); a saved
            `.keras` file records it, so a reloaded model has LoRA again.
            Defaults to `None`: no LoRA.
        lora_target_layer_names: tuple of str or `None`. With `lora_rank`,
            the blocks' dense layers that get LoRA. Defaults to `None`:
            `LORA_TARGET_LAYER_NAMES`.
        streams: int or `None`. Each block's inference as this many
            parallel streams (`TransformerEncoderBlock`'s `streams`), as
            `keras_bert.models.serving_copy` sets it. Defaults to `None`.
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

    The parameter count of every preset is in
    `keras_bert.models.presets`; `bert_base` has 109,482,240.

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
        streams=None,
        **kwargs,
    ):
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
        initializer = keras.initializers.TruncatedNormal(
            stddev=initializer_range
        )

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
                streams=streams,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooler_dense = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=clone_initializer(initializer),
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
        self.streams = streams
        self.lora_rank = None
        self.lora_target_layer_names = None
        if lora_rank is not None:
            self.enable_lora(lora_rank, lora_target_layer_names)

    def enable_lora(self, rank, target_layer_names=None):
        """Freezes the backbone and adds trainable LoRA weights to it.

        LoRA (low-rank adaptation) fine-tunes a model through a small
        update of some of its weight matrices: `W + A @ B`, with `A`
        `(input_dim, rank)` and `B` `(rank, output_dim)` trained and `W`
        frozen. This calls Keras' own `Dense.enable_lora(rank)` on the
        dense layers named `target_layer_names` in every transformer block
        (`A` random, `B` zeros, so the outputs are unchanged until
        training moves `B`; scale `lora_alpha / rank` = 1) and freezes
        every other weight of the backbone: embeddings, LayerNorms, the
        other kernels, biases and the pooler. A task head built on the
        backbone (a classifier's dense layer, the masked-LM head's own
        weights) stays trainable. LoRA usually wants a higher learning
        rate than full fine-tuning (docs/fine_tuning.md).

        The default target is `qkv_dense`, the blocks' fused query | key |
        value projection: Hu et al. adapt the query and value projections
        (`W_q`, `W_v`, rank `r` each: `4 * hidden_dim * r` weights per
        block); here one Keras LoRA of rank `r` updates the fused
        `(hidden_dim, 3 * hidden_dim)` matrix, the same `4 * hidden_dim *
        r` weights per block, with no change to the fused projection the
        fast paths compute.

        Saving keeps the LoRA weights apart from the frozen ones
        (`keras_bert.layers.LoraDense`), in `.weights.h5` and `.keras`
        files, and `get_config` records `lora_rank`, so that a reloaded
        model goes on training where it stopped.
        `keras_bert.models.merge_lora(model)` gives a copy with the
        updates added into the kernels (what `export_saved_model` serves).

        Args:
            rank: int. The rank of the update, at least 1 and at most
                `hidden_dim` (typically 4 to 16).
            target_layer_names: tuple of str or `None`. Names among
                `LORA_TARGET_LAYER_NAMES` (`"qkv_dense"`,
                `"attention_output_dense"`, `"intermediate_dense"`,
                `"output_dense"`). Defaults to `None`: `("qkv_dense",)`.

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
        check_positive_int("rank", rank, hint="the LoRA rank, e.g. 8")
        if rank > self.hidden_dim:
            raise ValueError(
                "Received an invalid value for argument `rank`, expected at "
                f"most hidden_dim={self.hidden_dim} (a LoRA update of rank "
                "r has r columns; typical ranks are 4 to 16). Received: "
                f"rank={rank}"
            )
        if target_layer_names is None:
            target_layer_names = DEFAULT_LORA_TARGET_LAYER_NAMES
        if isinstance(target_layer_names, str):
            target_layer_names = (target_layer_names,)
        target_layer_names = tuple(target_layer_names)
        unknown = set(target_layer_names) - set(LORA_TARGET_LAYER_NAMES)
        if unknown or not target_layer_names:
            raise ValueError(
                "Received an invalid value for argument `target_layer_names`"
                f", expected names among {list(LORA_TARGET_LAYER_NAMES)}. "
                f"Received: target_layer_names={target_layer_names!r}"
            )
        if self.lora_rank is not None:
            raise ValueError(
                f"LoRA is already enabled on this backbone (rank "
                f"{self.lora_rank}); it can be enabled once. Build the "
                "backbone again to change the rank."
            )
        for variable in self.weights:
            variable.trainable = False
        for block in self.transformer_layers:
            for name in target_layer_names:
                getattr(block, name).enable_lora(rank)
        self.lora_rank = rank
        self.lora_target_layer_names = target_layer_names

    def _encode(self, inputs, last_block_positions=None):
        """The last block's hidden states (at `last_block_positions`)."""
        padding_mask = inputs["padding_mask"]
        x = self.embedding(inputs["token_ids"], inputs["segment_ids"])
        for block in self.transformer_layers[:-1]:
            x = block(x, padding_mask=padding_mask)
        return self.transformer_layers[-1](
            x, padding_mask=padding_mask, query_positions=last_block_positions
        )

    def outputs_at(self, inputs, positions=None):
        """The backbone's outputs where a task head reads them, computed only
        there.

        A sentence head reads `[CLS]` alone, a masked-LM head the masked
        positions: every other output of the last transformer block is
        computed and thrown away. Here the last block still attends over
        every token (its keys and values), but its queries, attention
        output, feed-forward layer and LayerNorms run only on `[CLS]` and
        `positions`, which saves most of that block's work, in training
        and in inference (the `full_last_block` rows of the ablation
        sections of `benchmarks/RESULTS.md` measure it; without the
        optimisation `"query_positions_only"` the last block runs at every
        position and is then gathered). The results
        equal `self(inputs)`'s, gathered, to float rounding (tested).
        `BertClassifier` and `BertMaskedLM` build their graphs with it;
        call it on `keras.Input`s to do the same in a head of your own (it
        shares this backbone's layers and weights).

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
        _check_backbone_inputs("outputs_at", inputs)
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
        """Every layer's output: the embeddings and each block's hidden
        states (and, on request, each block's attention probabilities).

        The feature-based use of BERT (Devlin et al., section 5.3: the last
        hidden layer, the sum or concatenation of the last four, a weighted
        sum of all) and `transformers`' `output_hidden_states=True` /
        `output_attentions=True`. The backbone's own graph is unchanged:
        this builds a second path through the same layers and weights, so
        only a model built with it computes (and keeps) these outputs.
        Call it on `keras.Input`s inside a functional model of your own (a
        feature extractor, or a tagger on a frozen backbone: set
        `backbone.trainable = False`; the model saves and loads as any
        functional Keras model), or on concrete inputs, like `outputs_at`.

        Args:
            inputs: dict of `token_ids`, `segment_ids`, `padding_mask`
                `(batch_size, sequence_length)`, symbolic or concrete.
            return_attention_probabilities: bool. Whether to add each
                block's attention probabilities, for inspection (on
                concrete inputs only: Keras 3.15's functional models count
                a layer's outputs by its first call, so a block called
                without them in the backbone cannot return them in another
                functional model). Defaults to `False`.

        Returns:
            A dict with
            - `hidden_states`: a list of `num_layers + 1` float tensors
              `(batch_size, sequence_length, hidden_dim)`: the embedding
              block's output (after its LayerNorm and dropout), then each
              transformer block's output in order (`transformers`'
              `hidden_states`, a list instead of a tuple). Stack them with
              `keras.ops.stack(hidden_states, axis=1)` for one
              `(batch_size, num_layers + 1, sequence_length, hidden_dim)`
              tensor.
            - `sequence_output` (the last of `hidden_states`) and
              `pooled_output`, as `self(inputs)` returns them.
            - with `return_attention_probabilities=True`,
              `attention_probabilities`: a list of `num_layers` tensors
              `(batch_size, num_heads, sequence_length, sequence_length)`,
              the softmax over the keys (last axis) for each query,
              `transformers`' `attentions`; padding keys get 0.

            Hidden states at padding positions are computed but
            meaningless; mask them with `padding_mask`.

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
        _check_backbone_inputs("layer_outputs", inputs)
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
            "streams": self.streams,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @classmethod
    def from_preset(cls, name, load_weights=True, **kwargs):
        """Builds a preset: random weights, or a trained checkpoint's.

        The name says which (the table is in `keras_bert.models.presets`
        and README.md):

        - `bert_tiny`, `bert_mini`, `bert_small`, `bert_medium`,
          `bert_base`, `bert_large`: the architecture only, with *random*
          weights (vocabulary 30522), e.g. to pre-train from scratch.
        - `bert_tiny_en_uncased`, `bert_base_en_uncased`, `bert_base_en`,
          `bert_base_multi`, `all_minilm_l6_v2_en`, ... (keras-hub's
          names): *trained* weights, loaded from the checkpoint's Hugging
          Face Hub id as `from_checkpoint(name)` does.
        - anything `from_checkpoint` takes: a Hub id, `hf://` (keras-hub
          presets hosted there too: `hf://keras/bert_base_en_uncased`), a
          Hugging Face, Google or keras-hub directory, `kaggle://`.

        The backbone takes token ids and has no preprocessor (as
        keras-hub's `BertBackbone`); a task model's `from_preset` attaches
        one (`keras_bert.models.Task.from_preset`).

        Args:
            name: str. A preset name, Hub id or checkpoint path.
            load_weights: bool. `False` builds the checkpoint's
                architecture with random weights, fetching its config only.
                Architecture-only names always have random weights.
                Defaults to `True`.
            **kwargs: for an architecture, overrides of its config, e.g.
                `dropout=0.0` or `vocabulary_size=...`; for trained weights,
                what `from_checkpoint` takes (`dropout`, `dtype`).

        Raises:
            ValueError: an unknown preset name (naming the closest one), or
                a `.keras` file (which `keras.models.load_model` loads).

        Example:
        ```python
        backbone = keras_bert.BertBackbone.from_preset("bert_tiny")
        backbone.count_params()  # 4385920
        ```
        """
        from keras_bert.checkpoints import load_preset

        return load_preset(name, cls, load_weights, **kwargs)

    @classmethod
    def from_checkpoint(cls, path, **kwargs):
        """Builds a backbone from a checkpoint directory, with its weights.

        Reads a Hugging Face directory (`config.json` with
        `model.safetensors` or `pytorch_model.bin`) or an original Google
        one (`bert_config.json`, `bert_model.ckpt.*`); the architecture,
        activation and LayerNorm epsilon come from the config. Loading is
        all-or-nothing; see `keras_bert.checkpoints.load_checkpoint`.
        `path` may also be a Hugging Face Hub id
        (`google-bert/bert-base-uncased`, `hf://org/name@revision`) or a
        trained preset name (`bert_base_en_uncased`), fetched through
        `huggingface_hub`'s cache (see `keras_bert.checkpoints.hub`), or a
        keras-hub preset directory or `kaggle://` handle, which loads with
        the tanh GELU keras-hub runs (`activation="gelu_approximate"`; see
        `keras_bert.checkpoints.keras_hub_reader`).

        Args:
            path: str. The checkpoint directory, Hub id or keras-hub
                preset.
            **kwargs: overrides of the config, e.g. `dropout=0.0` or
                `dtype="mixed_bfloat16"`.

        Example:
        ```python
        keras_bert.checkpoints.save_huggingface(
            keras_bert.BertBackbone.from_preset("bert_tiny"), None, "tiny_bert"
        )
        backbone = keras_bert.BertBackbone.from_checkpoint("tiny_bert")
        ```
        """
        from keras_bert.checkpoints import load_checkpoint

        return load_checkpoint(path, cls, **kwargs)
