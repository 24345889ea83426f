"""BERT for multiple choice: one score per candidate, softmax over them."""

import keras
from keras import ops

from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.models.choice_text_methods import ChoiceTextMethods
from keras_bert.models.task import Task
from keras_bert.models.task import logits_dense
from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS
from keras_bert.validation import check_rate


def multiple_choice_inputs():
    """Named int32 `keras.Input`s `(batch, num_choices, sequence_length)`."""
    return {
        name: keras.Input(shape=(None, None), dtype="int32", name=name)
        for name in BACKBONE_INPUTS
    }


@keras.saving.register_keras_serializable(package="keras_bert")
class FlattenChoices(keras.layers.Layer):
    """`(batch, choices, sequence)` inputs as `(batch * choices, sequence)`.

    What `BertMultipleChoice` runs its backbone on: every choice of every
    example as one row.
    """

    def call(self, inputs):
        return {
            name: ops.reshape(value, (-1, ops.shape(value)[-1]))
            for name, value in inputs.items()
        }

    def compute_output_spec(self, inputs):
        return {
            name: keras.KerasTensor((None, value.shape[-1]), value.dtype)
            for name, value in inputs.items()
        }


@keras.saving.register_keras_serializable(package="keras_bert")
class ChoiceScores(keras.layers.Layer):
    """One score per row `(batch * choices, 1)` as `(batch, choices)`.

    Call arguments:
        scores: float `(batch * choices, 1)`.
        token_ids: the model's `(batch, choices, sequence)` input, whose
            first two sizes the scores are laid out by.
    """

    def call(self, scores, token_ids):
        shape = ops.shape(token_ids)
        return ops.reshape(scores, (shape[0], shape[1]))

    def compute_output_spec(self, scores, token_ids):
        return keras.KerasTensor(tuple(token_ids.shape[:2]), scores.dtype)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(ChoiceTextMethods, Task):
    """BERT for multiple choice (SWAG), as in the BERT paper.

    Each choice is read with its context as a sentence pair, `[CLS]
    context [SEP] choice [SEP]`; the backbone runs on every pair
    (`(batch * choices, sequence)` rows), and dropout and one dense layer
    on each pair's `pooled_output` give one score; the scores of an
    example's choices are its logits, and a softmax over them the
    probability of each choice. This is `transformers`'
    `BertForMultipleChoice` (pooler output, dropout, `classifier`), whose
    checkpoints `from_checkpoint` loads and
    `keras_bert.checkpoints.save_huggingface` writes. The backbone's last
    block runs on `[CLS]` only, the one position the head reads
    (`BertBackbone.outputs_at`).

    The model is compiled on construction: sparse categorical
    cross-entropy over the choices on logits, `accuracy`, AdamW with
    learning rate 2e-5. Call `compile()` to change it.

    With a `preprocessor`, `fit`, `evaluate` and `predict` take raw text:
    `(contexts, choices)`, a list of strings and a list of as many lists
    of strings, every example with the same number of choices; labels are
    the index of each example's right choice. Each pair is tokenized once;
    batches are cut to their longest row. Ragged or empty choice lists,
    and labels out of range or of the wrong length, are a `ValueError`
    naming them, raised before anything is traced
    (`keras_bert.models.choice_inputs`; the methods:
    `keras_bert.models.choice_text_methods`). The preprocessor is saved with
    the model, and `keras_bert.serving.export_saved_model(model,
    export_dir)` exports a `serving_default` taking `context (batch,)`
    and `choices (batch, num_choices)` strings.

    Args:
        backbone: `keras_bert.BertBackbone`.
        dropout: float. Dropout on the pooled output. Defaults to `0.1`.
        preprocessor: `keras_bert.BertPreprocessor` or `None`. Packs each
            context and choice; `None` (the default): the model takes ids
            only.
        **kwargs: `name`, `trainable`.

    Inputs: a dict of int32 `token_ids`, `segment_ids`, `padding_mask`
        `(batch_size, num_choices, sequence_length)`, or raw text with a
        preprocessor.

    Outputs: float32 logits `(batch_size, num_choices)`.

    Example:
    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                  "cat", "sat", "flew", "on", "mat", "moon"]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=16
    )
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(vocabulary), num_layers=2, num_heads=2,
        hidden_dim=8, intermediate_dim=32, max_sequence_length=16,
    )
    model = keras_bert.BertMultipleChoice(backbone, preprocessor=preprocessor)
    contexts = ["the cat sat", "the cat flew"]
    choices = [["on the mat", "on the moon"], ["on the mat", "to the moon"]]
    model.fit((contexts, choices), [0, 1], epochs=1, verbose=0)
    model.predict((contexts, choices), verbose=0)  # logits (2, 2)
    # Ids: (batch, choices, sequence).
    features = {
        "token_ids": np.array([[[2, 6, 3, 10, 3], [2, 6, 3, 11, 3]]]),
        "segment_ids": np.array([[[0, 0, 0, 1, 1]] * 2]),
        "padding_mask": np.ones((1, 2, 5), "int32"),
    }
    model.predict(features, verbose=0).shape  # (1, 2)
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805), 4.4
        - [Zellers et al., 2018](https://arxiv.org/abs/1808.05326) (SWAG)
    """

    TASK_NAME = "multiple_choice"

    def __init__(self, backbone, dropout=0.1, **kwargs):
        check_rate("dropout", dropout)

        # === Layers ===
        self.backbone = backbone
        self.flatten_choices = FlattenChoices(name="flatten_choices")
        self.output_dropout = HalfBitsDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = logits_dense(1, backbone, name="choice_score")
        # float32 as the scores: the logits stay float32 under any policy.
        self.choice_scores = ChoiceScores(dtype="float32", name="choice_logits")

        # === Functional Model ===
        inputs = multiple_choice_inputs()  # (batch, choices, seq)
        rows = self.flatten_choices(inputs)  # (batch * choices, seq)
        # The last block runs on [CLS] only (see BertBackbone.outputs_at).
        pooled = backbone.outputs_at(rows)["pooled_output"]
        scores = self.output_dense(self.output_dropout(pooled))
        logits = self.choice_scores(scores, inputs["token_ids"])
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.dropout = dropout

        self.compile()

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives BERT's fine-tuning setup.

        Args:
            optimizer: `"auto"` for AdamW with
                `keras_bert.training.TRAINING_DEFAULTS["multiple_choice"]`
                (2e-5, weight decay 0.01 except LayerNorm and biases,
                global-norm clipping 1.0).
            loss: `"auto"` for cross-entropy over the choices, on logits.
            metrics: `"auto"` for accuracy.
            **kwargs: passed to `keras.Model.compile`, and
                `gradient_accumulation_steps` (see `Task.compile`).
        """
        if optimizer == "auto":
            optimizer = self.auto_optimizer()
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def get_config(self):
        return {**super().get_config(), "dropout": self.dropout}
