"""BERT with a classification (or regression) head on `[CLS]`."""

import keras

from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.classifier_keywords import ClassifierKeywords
from keras_bert.models.classifier_keywords import classifier_axes
from keras_bert.models.labels import checked_labels
from keras_bert.models.task import Task
from keras_bert.models.task import logits_dense
from keras_bert.models.text_inputs import pair_layout
from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(ClassifierKeywords, Task):
    """BERT for sentence and sentence-pair classification or regression.

    Dropout and one dense layer on the backbone's `pooled_output`, as in
    the BERT paper; every weight trains. The last block runs on `[CLS]`
    only, which the head reads (`BertBackbone.outputs_at`).

    What the labels are is the model's label mode
    (`keras_bert.models.label_modes`): one class per example
    (`SingleLabel`, the default), one score (`Regression`, the default for
    `num_classes=1`, e.g. STS-B), or any number of labels per example
    (`MultiLabel(thresholds)`, or `multi_label=True`: a sigmoid per label;
    `predict` returns probabilities, `predicted_labels` the names over
    threshold, `tune_thresholds` fits the thresholds to a dev set). It
    gives `compile("auto")`'s loss and metrics: cross-entropy and
    `accuracy`, mean squared error, or binary cross-entropy with
    `micro_f1`, `macro_f1` and `subset_accuracy`; with AdamW at 2e-5.

    Long documents: with `windows=DocumentWindowing(doc_stride)` (or
    `doc_stride=`) each text is read whole in overlapping windows, its
    window logits aggregated (`keras_bert.models.document_windowing`,
    docs/long_documents.md); otherwise a long text is truncated.

    With a `preprocessor` (saved and exported with the model), `fit`,
    `evaluate` and `predict` also take raw strings, or a tuple `(texts_a,
    texts_b)` of pairs (`keras_bert.models.Task.fit`). Labels are checked
    before anything is traced (`keras_bert.models.labels`).

    Args:
        backbone: `keras_bert.BertBackbone`.
        num_classes: int. Number of classes (labels, multi-label); `1` for
            regression.
        dropout: float. Dropout on the pooled output. Defaults to `0.1`.
        pair: bool or `None`. Whether the model reads sentence pairs
            (`True`) or single texts (`False`); `None` (the default):
            `fit` on raw text records it. The export's `serving_default`
            takes `text_a` and `text_b` for pairs, else `text`.
        label_names: list of str or `None`. The name of each class:
            labels `fit` and `evaluate` take, and the export's `label`
            output. Defaults to `None`: class ids only.
        label_mode: `SingleLabel()`, `Regression()`, `MultiLabel(...)` or
            `None` (the default): `Regression()` for `num_classes=1`,
            else `SingleLabel()`.
        windows: `DocumentWindowing` or `None` (the default: truncate).
        preprocessor: `keras_bert.BertPreprocessor` or `None` (the
            default: the model takes ids only).
        **kwargs: `name`, `trainable`; and `multi_label` (bool),
            `thresholds`, `doc_stride`, `aggregation`, `max_windows`:
            the keyword spelling of `label_mode=MultiLabel(thresholds)`
            and `windows=DocumentWindowing(doc_stride, aggregation,
            max_windows)` (`keras_bert.models.classifier_keywords`).

    Inputs: the backbone's dict, or raw text with a preprocessor; with
        windows, each `(batch_size, windows, sequence_length)`.

    Outputs: float32 logits (or scores) `(batch_size, num_classes)`.

    Example:
    ```python
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                  "a", "good", "bad", "film", "book", "dull"]
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocabulary), sequence_length=16
    )
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(vocabulary), num_layers=2, num_heads=2,
        hidden_dim=8, intermediate_dim=32, max_sequence_length=16,
    )
    classifier = keras_bert.BertClassifier(
        backbone, num_classes=2, preprocessor=preprocessor,
        label_names=["neg", "pos"],
    )
    classifier.fit(["a good film", "a dull book", "good", "bad"],
                   ["pos", "neg", "pos", "neg"], batch_size=2, verbose=0)
    classifier.predict(["a good book"], verbose=0)  # logits (1, 2)
    pairs = keras_bert.BertClassifier(backbone, 3, preprocessor=preprocessor)
    pairs.predict((["a good film"], ["a bad film"]), verbose=0)  # (1, 3)
    # Long documents: windows of 14 tokens every 7, mean of their logits.
    reader = keras_bert.BertClassifier(
        backbone, 2, preprocessor=preprocessor,
        windows=keras_bert.models.DocumentWindowing(doc_stride=7),
    )
    reader.fit(["a good film " * 20, "a dull book " * 9], [1, 0], verbose=0)
    # Several labels per text: names in, probabilities out.
    tagger = keras_bert.BertClassifier(
        backbone, 3, preprocessor=preprocessor,
        label_mode=keras_bert.models.MultiLabel(),
        label_names=["film", "book", "opinion"],
    )
    tagger.fit(["a good film", "a dull book", "film"],
               [["film", "opinion"], ["book", "opinion"], ["film"]],
               verbose=0)
    probabilities = tagger.predict(["a bad book"], verbose=0)  # (1, 3)
    tagger.tune_thresholds(["a good book"], [["book", "opinion"]])
    tagger.predicted_labels(probabilities)  # e.g. [["book", "opinion"]]
    ```
    """

    TASK_NAME = "classifier"
    TEXT_METHODS = ("fit", "evaluate", "predict")

    def __init__(
        self,
        backbone,
        num_classes,
        dropout=0.1,
        pair=None,
        label_names=None,
        label_mode=None,
        windows=None,
        **kwargs,
    ):
        check_positive_int("num_classes", num_classes, hint="1 for regression")
        check_rate("dropout", dropout)
        label_mode, windows = classifier_axes(
            num_classes, label_mode, windows, pair, kwargs
        )
        label_names = label_mode.check_label_names(label_names, num_classes)

        # === Layers ===
        self.backbone = backbone
        self.output_dropout = HalfBitsDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = logits_dense(num_classes, backbone, name="logits")
        self.window_rows, self.window_aggregation = (
            windows.layers() if windows else (None, None)
        )

        # === Functional Model ===
        inputs = keras_inputs(windows=windows is not None)
        # Documents: the backbone reads their real windows as rows.
        rows, document = self.window_rows(inputs) if windows else (inputs, None)
        # The last block runs on [CLS] only (see BertBackbone.outputs_at).
        pooled = backbone.outputs_at(rows)["pooled_output"]
        outputs = self.output_dense(self.output_dropout(pooled))
        if windows:
            outputs = self.window_aggregation(
                outputs, document, inputs["padding_mask"]
            )
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout
        self.pair = pair
        self.label_names = label_names
        self.label_mode = label_mode
        self.windows = windows
        if self.preprocessor is not None:
            self._text_packer()  # checks doc_stride against its length

        self.compile()

    def _head_labels(self, labels, argument):
        return self.label_mode.labels(
            labels, self.num_classes, self.label_names, argument, self.loss
        )

    def predict(self, x, *args, **kwargs):
        """Logits `(batch, num_classes)`; a multi-label model's
        probabilities (their sigmoid). See `RawTextMethods.predict`."""
        outputs = super().predict(x, *args, **kwargs)
        return self.label_mode.predictions(outputs)

    def tune_thresholds(self, x, y, batch_size=None):
        """Sets each label's threshold to the one of best F1 on `(x, y)`.

        A multi-label model only: predicts `x` (a dev set, as `evaluate`
        takes it) and picks for each label the threshold among `0.05,
        0.10, ..., 0.95` of best F1 on `y` (names per example or
        multi-hot rows; `keras_bert.training.tune_thresholds`). Saved
        with the model; decides `predicted_labels` and the export's
        `labels`. `batch_size`: to predict with. Returns the thresholds.
        """
        self.label_mode.thresholded("tune_thresholds")
        labels = checked_labels(x, y, "evaluate", self._head_labels)
        probabilities = self.predict(x, batch_size=batch_size, verbose=0)
        self.label_mode = self.label_mode.tuned(labels, probabilities)
        return self.thresholds

    def predicted_labels(self, probabilities):
        """Names (`class_names()`) per example, from `predict`'s output
        `(batch, num_classes)`: a multi-label model's labels over
        threshold, in label order (the export's `labels` without `""`);
        a single-label model's class, one name (the export's `label`)."""
        return self.label_mode.predicted_labels(
            probabilities, self.class_names()
        )

    def class_names(self):
        """`label_names`, else `"0"`, `"1"`, ...: what exports give."""
        if self.label_names is not None:
            return list(self.label_names)
        return [str(i) for i in range(self.num_classes)]

    def _note_text_layout(self, x):
        pair = pair_layout(x, self.pair)
        if self.windows:
            self.windows.check_layout(pair)
        self.pair = pair

    def _check_text_layout(self, x):
        pair_layout(x, self.pair)

    def document_windows(self, preprocessor=None):
        """A `keras_bert.text.document_windows.DocumentWindows` that cuts
        raw texts as this model reads them, or `None` (it truncates).

        The one cut `fit`, `evaluate`, `predict`, the export's text
        endpoint and `ClassificationFineTuning` use. `preprocessor`: the
        tokenizer and window length to cut with; `None` (the default):
        the model's own (see `DocumentWindowing.cutter`).

        Example (the class example's `reader`):
        ```python
        windows = reader.document_windows()
        windows(tf.constant(["a good film " * 20]))["token_ids"].shape
        # (1, 8, 16): 60 tokens in windows of 14 every 7
        ```
        """
        if self.windows is None:
            return None
        if preprocessor is None:
            preprocessor = self.preprocessor
        return self.windows.cutter(preprocessor)

    def _text_packer(self):
        """The preprocessor, or the `DocumentWindows` over it (made once
        per preprocessor: they keep their traced functions)."""
        if self.windows is None:
            return self.preprocessor
        cached = getattr(self, "_cutter", None)
        if cached is None or cached.preprocessor is not self.preprocessor:
            cached = self.document_windows(self.preprocessor)
            # A plain attribute: neither Keras nor a SavedModel tracks it.
            self._cutter = cached
        return cached

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives BERT's fine-tuning setup.

        Args:
            optimizer: `"auto"` for AdamW with
                `keras_bert.training.TRAINING_DEFAULTS["classifier"]`
                (2e-5, weight decay 0.01 except LayerNorm and biases,
                global-norm clipping 1.0).
            loss, metrics: `"auto"` for the label mode's (`loss()`,
                `metrics()`; multi-label metrics at threshold 0.5).
            **kwargs: passed to `keras.Model.compile`, and
                `gradient_accumulation_steps` (see `Task.compile`).
        """
        if optimizer == "auto":
            optimizer = self.auto_optimizer()
        if loss == "auto":
            loss = self.label_mode.loss()
        if metrics == "auto":
            metrics = self.label_mode.metrics()
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def get_config(self):
        serialize = keras.saving.serialize_keras_object
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "pair": self.pair,
            "label_names": self.label_names,
            "label_mode": serialize(self.label_mode),
            "windows": serialize(self.windows),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for name in ("label_mode", "windows"):
            if isinstance(config.get(name), dict):
                config[name] = keras.saving.deserialize_keras_object(
                    config[name]
                )
        return super().from_config(config)
