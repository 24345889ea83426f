"""BERT with a classification head on every token (tagging, NER)."""

import keras
import numpy as np

from keras_bert.decoding.entities import ENTITY_PADDING
from keras_bert.decoding.entities import entity_text_function
from keras_bert.decoding.run_text import run_text_function
from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.task import Task
from keras_bert.models.task import logits_dense
from keras_bert.models.word_tags import WordTagMethods
from keras_bert.models.word_tags import is_word_lists
from keras_bert.training.losses import IGNORED_LABEL
from keras_bert.training.losses import GlobalBatchCrossEntropy
from keras_bert.training.metrics import MaskedLMAccuracy
from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate
from keras_bert.validation import check_text_only_options


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(WordTagMethods, Task):
    """BERT for token classification (named entities, tags), as in the paper.

    Dropout and one dense layer on every token of the backbone's
    `sequence_output` give each token a logit per class; every weight
    trains. A word is labelled on its first sub-token (see
    `keras_bert.fine_tuning.ner`), the other positions carry the label `-100`.

    The head's kernel is drawn from a normal distribution of standard
    deviation `backbone.initializer_range` (Hugging Face's
    `BertForTokenClassification` init, which trains faster than the
    truncated normal of Google's sentence and span heads: docs/ner.md,
    "Why the head starts from a normal distribution"), its bias is 0.

    The model is compiled on construction: cross-entropy on logits over
    the labelled positions only (label `-100` is left out; the mean is over
    the labelled positions of the whole global batch, so a `tf.distribute`
    run equals one device), `accuracy` over the same positions, AdamW with
    learning rate 5e-5. Call `compile()` to change it. The backbone's pooler
    is not used and is frozen; checkpoints are written without it, as
    `transformers` writes a `BertForTokenClassification`.

    With a `preprocessor`, `fit`, `evaluate` (adding entity F1) and
    `predict` (a tag per word) take word lists with tag names, as
    `recipes/ner.py` does (`keras_bert.models.word_tags`).

    Args:
        backbone: `keras_bert.BertBackbone`.
        num_classes: int. Number of tags.
        dropout: float. Dropout on the sequence output. Defaults to `0.1`.
        labels: list of str or `None`. The name of each class (e.g.
            `["O", "B-PER", "I-PER"]`), saved with the model, written to a
            Hugging Face `config.json` as `id2label` and used by the serving
            endpoints. Defaults to `"LABEL_0"`, `"LABEL_1"`, ...
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
        `padding_mask`), int32 `(batch_size, sequence_length)`.

    Outputs: float32 logits `(batch_size, sequence_length, num_classes)`.

    Example:
    ```python
    backbone = keras_bert.BertBackbone(
        vocabulary_size=100, num_layers=2, num_heads=2, hidden_dim=8,
        intermediate_dim=32, max_sequence_length=16,
    )
    model = keras_bert.BertTokenClassifier(
        backbone, num_classes=3, labels=["O", "B-PER", "I-PER"]
    )
    features = {  # [CLS] w w w [SEP]
        "token_ids": np.array([[2, 9, 8, 7, 3]] * 4),
        "segment_ids": np.zeros((4, 5), "int32"),
        "padding_mask": np.ones((4, 5), "int32"),
    }
    labels = np.array([[-100, 1, 2, 0, -100]] * 4)
    model.fit(features, labels, epochs=1, verbose=0)
    model.predict(features, verbose=0).shape  # (4, 5, 3)
    ```

    References:
        - [Devlin et al., 2019](https://arxiv.org/abs/1810.04805), 5.3
    """

    TASK_NAME = "token_classification"

    def __init__(
        self, backbone, num_classes, dropout=0.1, labels=None, **kwargs
    ):
        check_positive_int(
            "num_classes", num_classes, hint="the number of tags"
        )
        check_rate("dropout", dropout)
        if labels is not None:
            labels = [str(label) for label in labels]
            if len(labels) != num_classes or len(set(labels)) != num_classes:
                raise ValueError(
                    f"Expected {num_classes} distinct labels, one per class. "
                    f"Received: labels={labels!r}. Pass one name per class, "
                    "or labels=None."
                )

        # === Layers ===
        self.backbone = backbone
        # Unused here (Hugging Face's BertForTokenClassification has none):
        # frozen, so that training does not warn about missing gradients.
        backbone.pooler_dense.trainable = False
        self.output_dropout = HalfBitsDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        # Normal, not truncated normal: Google's BERT has no tagging
        # head, and Hugging Face's (normal, std initializer_range) trains
        # faster (docs/ner.md, "Why the head starts from a normal
        # distribution").
        self.output_dense = logits_dense(
            num_classes,
            backbone,
            name="logits",
            initializer=keras.initializers.RandomNormal,
        )

        # === Functional Model ===
        inputs = keras_inputs()
        sequence = backbone(inputs)["sequence_output"]
        outputs = self.output_dense(self.output_dropout(sequence))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout
        self.labels = labels

        self.compile()

    @property
    def label_names(self):
        """list of str. `labels`, or `"LABEL_<i>"` when none were given."""
        if self.labels is not None:
            return list(self.labels)
        return [f"LABEL_{i}" for i in range(self.num_classes)]

    def predict(
        self,
        x,
        batch_size=None,
        verbose="auto",
        steps=None,
        callbacks=None,
        **options,
    ):
        """Logits for ids; entities, as the exported model gives, for text.

        On the ids dict this is `keras.Model.predict`: the logits. On raw
        text — a list, array or tensor of strings — it needs the model's
        `preprocessor` and returns what the model's SavedModel
        `serving_default` returns (`keras_bert.serving.export_saved_model`
        with this preprocessor and `options`), computed by the same
        function (`keras_bert.decoding.entities`): texts of any length are
        read in overlapping windows of `preprocessor.sequence_length`
        positions, each word is tagged on its first sub-token, and the
        entities are the tags' chunks. On word lists, a tag name per word.

        Args:
            x: the ids dict (`token_ids`, `segment_ids`, `padding_mask`),
                raw text (a list, array or tensor of strings), or word
                lists (a list of lists of str; `options` unused).
            batch_size: int or `None`. Examples per batch (on text: texts,
                however many windows they make). Defaults to 32.
            verbose: `"auto"`, 0 or 1. Progress bar.
            steps, callbacks: as `keras.Model.predict`; ids only.
            **options: on text only, the export's options, with its
                defaults: `labels` (the tag of each class; defaults to the
                model's `labels`) and `stride` (tokens between window
                starts; defaults to half a window); see
                `keras_bert.decoding.entities.entity_text_function`.

        Returns:
            On ids, float32 logits `(num_examples, sequence_length,
            num_classes)`. On text, a dict of numpy arrays, the entities of
            each text padded to the most any text has: `entity` and
            `entity_type` (str), `start` and `end` (int32, Unicode code
            points, `text[start:end] == entity`), `score` (float32, the
            mean of its words' probabilities), all `(num_texts,
            max_entities)` (padding: `""`, `-1`, `0.0`), and
            `num_entities` int32 `(num_texts,)`.

        Example:
        ```python
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john",
                      "lives", "in", "paris", "."]
        backbone = keras_bert.BertBackbone(
            vocabulary_size=len(vocabulary), num_layers=2, num_heads=2,
            hidden_dim=8, intermediate_dim=32, max_sequence_length=16,
        )
        preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(vocabulary), sequence_length=8
        )
        model = keras_bert.BertTokenClassifier(
            backbone, num_classes=3, labels=["O", "B-PER", "I-PER"],
            preprocessor=preprocessor,
        )
        entities = model.predict(
            ["John lives in Paris.", "John lives in Paris. " * 5], verbose=0
        )
        entities["num_entities"].shape  # (2,)
        entities["entity"].shape == entities["score"].shape  # True
        ```
        """
        if is_word_lists(x):
            return self._predict_word_tags(x, batch_size)
        if not _is_text(x):
            check_text_only_options(f"{type(self).__name__}.predict", options)
            return super().predict(
                x,
                batch_size=batch_size,
                verbose=verbose,
                steps=steps,
                callbacks=callbacks,
            )
        if isinstance(x, (str, bytes)):
            raise ValueError(
                f"{type(self).__name__}.predict takes a list of texts; "
                f"received one string: x={x!r}. Wrap it in a list."
            )
        return run_text_function(
            self,
            entity_text_function,
            {"text": x},
            batch_size=batch_size,
            verbose=verbose,
            steps=steps,
            callbacks=callbacks,
            padding=ENTITY_PADDING,
            **options,
        )

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives BERT's tagging setup.

        Args:
            optimizer: `"auto"` for AdamW with `keras_bert.training.
                TRAINING_DEFAULTS["token_classification"]` (5e-5, weight
                decay 0.01 except LayerNorm and biases, global-norm
                clipping 1.0).
            loss: `"auto"` for cross-entropy on logits over the positions
                whose label is not `-100`, averaged over the global batch.
            metrics: `"auto"` for the accuracy over the same positions.
            **kwargs: passed to `keras.Model.compile`, and
                `gradient_accumulation_steps` (see `Task.compile`).
        """
        if optimizer == "auto":
            optimizer = self.auto_optimizer()
        loss, metrics = tagging_loss_and_metrics(loss, metrics)
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "labels": self.labels,
        }


def _is_text(x):
    """Whether `x` is a str, or a list, tuple, array or tensor of str."""
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(value, (str, bytes)) for value in x)
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "SU" or (
            x.dtype == object
            and all(isinstance(value, (str, bytes)) for value in x.flat)
        )
    return keras.ops.is_tensor(x) and x.dtype.name == "string"


def tagging_loss_and_metrics(loss="auto", metrics="auto"):
    """`(loss, metrics)` with `"auto"` replaced by BERT's tagging setup.

    Cross-entropy on logits over the positions whose label is not
    `IGNORED_LABEL` (-100), averaged over the global batch, and the
    accuracy over the same positions; anything else is returned as given.
    Shared by every per-token tagger's `compile`.
    """
    if loss == "auto":
        loss = GlobalBatchCrossEntropy(
            ignore_class=IGNORED_LABEL, name="token_cross_entropy"
        )
    if metrics == "auto":
        metrics = [
            MaskedLMAccuracy(padding_label=IGNORED_LABEL, name="accuracy")
        ]
    return loss, metrics
