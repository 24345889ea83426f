"""BERT's pre-training model: masked LM + next-sentence prediction."""

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert.decoding.fill_mask import FILL_MASK_PADDING
from keras_bert.decoding.fill_mask import check_top_k
from keras_bert.decoding.fill_mask import fill_mask_text_function
from keras_bert.decoding.run_text import run_text_function
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.models.bert_backbone import BACKBONE_INPUTS
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.task import Task
from keras_bert.models.task import logits_dense
from keras_bert.training.losses import pretraining_losses
from keras_bert.training.metrics import MaskedLMAccuracy

MASKED_LM_INPUTS = BACKBONE_INPUTS + ("masked_positions",)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLM(Task):
    """BERT with its two pre-training heads: masked LM and NSP.

    The masked-LM head predicts the original token at `masked_positions`
    with the output projection tied to the token embedding; the
    next-sentence head is a dense layer on `pooled_output` predicting
    whether segment B follows segment A (label 0 = "is next", 1 = "random",
    the original BERT convention). The backbone's last block runs only on
    `[CLS]` and the masked positions, which is all the heads read
    (`BertBackbone.outputs_at`: the same logits, less work).

    The model is compiled on construction with the paper's objective, so
    `fit` works at once: the mean masked-LM cross-entropy over real
    prediction slots plus the NSP cross-entropy; metrics `mlm_accuracy`
    and `nsp_accuracy`. Unused prediction slots are marked with label `0`
    (`[PAD]`), as the original data pipeline writes them, and weigh zero.
    Call `compile()` again to change any of it.

    With a `preprocessor`, `predict` also takes raw text (a list, array
    or `tf.data.Dataset` of `str`, or a pair `(texts_a, texts_b)`) with
    `[MASK]` written where a token is to be predicted: `masked_positions`
    are where the texts' `[MASK]` tokens land, padded with position 0 to
    the most masks of a text (of all the texts given in a list; of each
    batch of a dataset), so `mlm_logits` has one slot per mask. `fit`
    and `evaluate` take ids. `fill_mask(texts, top_k)` gives the
    likeliest tokens at each mask and their probabilities, as the
    model's SavedModel does (`transformers`' fill-mask pipeline).

    Args:
        backbone: `keras_bert.BertBackbone`.
        activation: str or `None`. Activation of the MLM transform; `None`
            uses the backbone's.
        preprocessor: `keras_bert.BertPreprocessor` or `None`. Turns raw
            text into the model's inputs for `predict`. Defaults to `None`.
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict plus `masked_positions`, int
        `(batch_size, num_predictions)`.

    Outputs: a dict with float32 `mlm_logits` `(batch_size,
        num_predictions, vocabulary_size)` and `nsp_logits`
        `(batch_size, 2)`.

    Labels for `fit`: a dict `{"mlm_logits": masked_lm_ids,
        "nsp_logits": next_sentence_labels}`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    model = keras_bert.BertMaskedLM(backbone)
    features = {
        "token_ids": np.array([[2, 4, 1, 3]] * 8),
        "segment_ids": np.zeros((8, 4), "int32"),
        "padding_mask": np.ones((8, 4), "int32"),
        "masked_positions": np.array([[2, 0]] * 8),
    }
    labels = {"mlm_logits": np.array([[7, 0]] * 8),
              "nsp_logits": np.zeros((8,), "int32")}
    model.fit(features, labels, epochs=1, verbose=0)
    # Raw text, with a preprocessor: one slot per [MASK].
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox"]
    model.preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=16
    )
    outputs = model.predict(["the [MASK] fox", "[MASK] [MASK]"], verbose=0)
    outputs["mlm_logits"].shape  # (2, 2, 100)
    ```
    """

    TASK_NAME = "masked_lm"
    TEXT_METHODS = ("predict",)

    def __init__(self, backbone, activation=None, **kwargs):
        if activation is None:
            activation = backbone.activation
        dtype = backbone.dtype_policy

        # === Layers ===
        self.backbone = backbone
        self.masked_lm_head = MaskedLMHead(
            vocabulary_size=backbone.vocabulary_size,
            token_embedding=backbone.token_embedding,
            activation=activation,
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=backbone.initializer_range
            ),
            dtype=dtype,
            name="masked_lm_head",
        )
        self.nsp_dense = logits_dense(2, backbone, name="nsp_dense")

        # === Functional Model ===
        inputs = keras_inputs(MASKED_LM_INPUTS)
        # The last block runs on [CLS] and the masked positions only (see
        # BertBackbone.outputs_at): the heads read nothing else.
        backbone_outputs = backbone.outputs_at(
            {name: inputs[name] for name in BACKBONE_INPUTS},
            inputs["masked_positions"],
        )
        mlm_logits = self.masked_lm_head(backbone_outputs["sequence_output"])
        nsp_logits = self.nsp_dense(backbone_outputs["pooled_output"])
        super().__init__(
            inputs=inputs,
            outputs={"mlm_logits": mlm_logits, "nsp_logits": nsp_logits},
            **kwargs,
        )

        # === Config ===
        self.activation = activation

        self.compile()

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives BERT's pre-training setup.

        Args:
            optimizer: `"auto"` for AdamW with
                `keras_bert.training.TRAINING_DEFAULTS["masked_lm"]`
                (1e-4, weight decay 0.01 except LayerNorm and biases,
                global-norm clipping 1.0), or any Keras optimizer.
            loss: `"auto"` for masked-LM cross-entropy averaged over real
                prediction slots (label != 0) plus NSP cross-entropy, both
                averaged over the global batch (see
                `keras_bert.training.pretraining_losses`).
            metrics: `"auto"` for `mlm_accuracy` and `nsp_accuracy`.
            **kwargs: passed to `keras.Model.compile` (e.g. `jit_compile`),
                and `gradient_accumulation_steps` (see `Task.compile`).
        """
        if optimizer == "auto":
            optimizer = self.auto_optimizer()
        if loss == "auto":
            # Means over the global batch: the same numbers on one device
            # and under any tf.distribute strategy.
            loss = pretraining_losses()
        if metrics == "auto":
            metrics = {
                "mlm_logits": [MaskedLMAccuracy(name="mlm_accuracy")],
                "nsp_logits": [
                    keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")
                ],
            }
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def fill_mask(self, texts, top_k=5, batch_size=None, verbose="auto"):
        """The likeliest tokens at each `[MASK]` of raw texts, with their
        probabilities: `transformers`' `pipeline("fill-mask")`.

        Runs the function the model's SavedModel `serving_default` runs
        (`keras_bert.serving.export_saved_model(model, ...,
        top_k=top_k)`; `keras_bert.decoding.fill_mask`), so the export
        answers as this method does. Every mask of a text is predicted at
        once (the others stay `[MASK]`); each mask's scores are the softmax
        over the whole vocabulary at its position, best first. Needs the
        model's `preprocessor`, whose tokenizer must keep `[MASK]` written
        in text as the mask token (`special_tokens_in_strings=True`, its
        default).

        Args:
            texts: list, array or tensor of str (or one str: a batch of
                one), with `[MASK]` where a token is to be guessed (as
                the tokenizer splits text: for a vocabulary of single
                letters, such as a protein model's, letters separated by
                spaces).
            top_k: int. Tokens per mask, from 1 to the vocabulary size.
                Defaults to `5`.
            batch_size: int or `None`. Texts per batch; defaults to 32.
            verbose: `"auto"`, 0 or 1. Progress bar.

        Returns:
            A dict of numpy arrays over the texts, in order:
            - `token`: str `(num_texts, masks, top_k)`, the tokens as the
              vocabulary writes them (`"##ing"` for a continuation);
            - `token_id`: int32 `(num_texts, masks, top_k)`;
            - `score`: float32 `(num_texts, masks, top_k)`, probabilities,
              decreasing;
            - `num_masks`: int32 `(num_texts,)`.

            `masks` is the most masks of any text; a text's masks come in
            reading order and the rows past its last hold `""`, `-1` and
            `0.0`. A text without `[MASK]` (an empty one too) gets
            `num_masks` 0 and a logged warning, not an error; a `[MASK]`
            past the preprocessor's `sequence_length` is not predicted.

        Example:
        ```python
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                      "quick", "fox"]
        backbone = keras_bert.BertBackbone(
            vocabulary_size=len(vocabulary), num_layers=2, num_heads=2,
            hidden_dim=8, intermediate_dim=32, max_sequence_length=16,
        )
        model = keras_bert.BertMaskedLM(
            backbone,
            preprocessor=keras_bert.BertPreprocessor(
                keras_bert.BertTokenizer(vocabulary), sequence_length=16
            ),
        )
        guesses = model.fill_mask(
            ["the [MASK] fox", "[MASK] quick [MASK]", "no mask"], top_k=3,
            verbose=0,
        )
        guesses["token"].shape  # (3, 2, 3)
        guesses["num_masks"].tolist()  # [1, 2, 0]
        ```
        """
        check_top_k(top_k, self.backbone.vocabulary_size)
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        outputs = run_text_function(
            self,
            fill_mask_text_function,
            {"text": texts},
            batch_size=batch_size,
            verbose=verbose,
            padding=FILL_MASK_PADDING,
            method="fill_mask",
            top_k=top_k,
        )
        without = np.flatnonzero(outputs["num_masks"] == 0)
        if len(without):
            mask_token = self.preprocessor.tokenizer.mask_token
            logging.warning(
                "fill_mask: %d of %d texts have no %s (indices %s%s); they "
                "get no predictions. Write %s where a token is to be "
                "guessed.",
                len(without),
                len(outputs["num_masks"]),
                mask_token,
                without[:10].tolist(),
                ", ..." if len(without) > 10 else "",
                mask_token,
            )
        return outputs

    def _inputs_from_text(self, features, all_features=None):
        """Adds `masked_positions`: where the texts wrote `[MASK]`.

        Padded with position 0 to the most `[MASK]`s of a text in
        `all_features` (the whole input, when known; else this batch),
        at least 1, so that every batch predicts as many slots.
        """
        mask_token_id = self.preprocessor.tokenizer.mask_token_id
        if all_features is not None:
            counts = np.sum(all_features["token_ids"] == mask_token_id, axis=1)
            num_predictions = max(1, int(counts.max(initial=0)))
        else:
            num_predictions = None
        token_ids = tf.convert_to_tensor(features["token_ids"])
        positions = tf.broadcast_to(
            tf.range(tf.shape(token_ids)[1]), tf.shape(token_ids)
        )
        positions = tf.ragged.boolean_mask(
            positions, token_ids == mask_token_id
        ).to_tensor(0)  # (batch, most masks in the batch)
        if num_predictions is None:
            num_predictions = tf.maximum(tf.shape(positions)[1], 1)
        positions = tf.pad(
            positions, [[0, 0], [0, num_predictions - tf.shape(positions)[1]]]
        )
        return {**features, "masked_positions": positions}

    def get_config(self):
        return {**super().get_config(), "activation": self.activation}
