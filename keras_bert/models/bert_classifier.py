"""BERT with a classification (or regression) head on `[CLS]`."""

import keras

from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.layers.window_aggregation import WindowAggregation
from keras_bert.layers.window_aggregation import check_aggregation
from keras_bert.layers.window_rows import WindowRows
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.labels import check_label_names
from keras_bert.models.labels import class_labels
from keras_bert.models.task import Task
from keras_bert.models.task import logits_dense
from keras_bert.models.text_inputs import pair_layout
from keras_bert.text.document_windows import DocumentWindows
from keras_bert.text.document_windows import check_max_windows
from keras_bert.validation import check_positive_int
from keras_bert.validation import check_rate


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(Task):
    """BERT for sentence and sentence-pair classification or regression.

    Dropout and one dense layer on the backbone's `pooled_output`, as in
    the BERT paper's fine-tuning setup; every weight trains. With
    `num_classes=1` the model is a regressor (e.g. STS-B). The backbone's
    last block runs on `[CLS]` only, the one position the head reads
    (`BertBackbone.outputs_at`: the same logits, less work).

    The model is compiled on construction: sparse categorical
    cross-entropy on logits and `accuracy` for classification, mean
    squared error for regression, AdamW with learning rate 2e-5. Call
    `compile()` to change it.

    With a `preprocessor`, `fit`, `evaluate` and `predict` also take raw
    strings: a list, array or `tf.data.Dataset` of `str`, or a tuple
    `(texts_a, texts_b)` for sentence pairs, with labels as usual.
    Tokenizing runs in the `tf.data` pipeline; where `fit` batches the
    texts itself it batches as the GLUE recipe does (shuffled per epoch,
    like-length examples together, each batch cut to its longest row;
    see `keras_bert.models.Task.fit`). `fit` and `evaluate` check the
    labels (raw text or arrays) before anything is traced: class ids in
    range (or names in `label_names`), finite scores for a regressor, one
    per example; a bad one is a `ValueError` naming it and the fix
    (`keras_bert.models.labels`). The preprocessor is saved with the
    model, and `keras_bert.serving.export_saved_model(model, export_dir)`
    exports with it.

    Args:
        backbone: `keras_bert.BertBackbone`.
        num_classes: int. Number of classes; `1` for regression.
        dropout: float. Dropout on the pooled output. Defaults to `0.1`.
        pair: bool or `None`. Whether the model reads sentence pairs
            (`True`) or single texts (`False`). `None` (the default):
            `fit` on raw text records it (and refuses the other layout
            once recorded). Saved in the config; the export's
            `serving_default` takes `text_a` and `text_b` for pairs, else
            `text` (`keras_bert.serving.export_saved_model`).
        label_names: list of str or `None`. The name of each class:
            `fit` and `evaluate` then also take these names as labels,
            and the export's `label` output gives them. Saved in the
            config. Defaults to `None`: class ids only.
        doc_stride: int or `None`. `None` (the default): a text longer
            than the preprocessor's `sequence_length` is truncated. An
            int: each text is read whole, in overlapping windows of
            `sequence_length - 2` tokens that start every `doc_stride`
            tokens (`keras_bert.text.document_windows`); each window is
            scored and the logits aggregated per document, in `fit`
            (documents are the unit of labels, loss and metrics),
            `evaluate`, `predict` and the export. Single texts only.
            docs/long_documents.md.
        aggregation: str. How a document's window logits combine, with
            `doc_stride`: `"mean"` (the default) or `"max"`.
        max_windows: int or `None`. With `doc_stride`, the windows read
            per document, the first ones (bounds the cost of the longest
            documents); `None` (the default): all.
        preprocessor: `keras_bert.BertPreprocessor` or `None`. Turns raw
            text into the backbone's inputs; `None` (the default): the
            model takes ids only.
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
        `padding_mask`), or raw text with a preprocessor. With
        `doc_stride`, each `(batch_size, windows, sequence_length)`: a
        document's windows first, then windows of padding only (all 0).

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
        backbone, num_classes=2, preprocessor=preprocessor
    )
    classifier.fit(["a good film", "a dull book", "good", "bad"], [1, 0, 1, 0],
                   batch_size=2, epochs=1, verbose=0)
    classifier.predict(["a good book"], verbose=0)  # logits (1, 2)
    # Sentence pairs: a tuple of two lists.
    pairs = keras_bert.BertClassifier(backbone, 3, preprocessor=preprocessor)
    pairs.predict((["a good film"], ["a bad film"]), verbose=0)  # (1, 3)
    # Named classes: string labels in; the export's `label` gives them.
    named = keras_bert.BertClassifier(
        backbone, 2, preprocessor=preprocessor, label_names=["neg", "pos"]
    )
    named.fit(["a good film", "a dull book"], ["pos", "neg"], verbose=0)
    # Long documents: windows of 14 tokens every 7, mean of their logits.
    reader = keras_bert.BertClassifier(
        backbone, 2, preprocessor=preprocessor, doc_stride=7
    )
    reader.fit(["a good film " * 20, "a dull book " * 9], [1, 0], verbose=0)
    reader.predict(["a good book " * 30], verbose=0)  # (1, 2)
    # Without a preprocessor, ids in.
    features = {
        "token_ids": np.array([[2, 9, 3]] * 4),
        "segment_ids": np.zeros((4, 3), "int32"),
        "padding_mask": np.ones((4, 3), "int32"),
    }
    classifier.fit(features, np.array([0, 1, 1, 0]), epochs=1, verbose=0)
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
        doc_stride=None,
        aggregation="mean",
        max_windows=None,
        **kwargs,
    ):
        check_positive_int("num_classes", num_classes, hint="1 for regression")
        check_document_windows(doc_stride, aggregation, max_windows, pair)
        check_rate("dropout", dropout)
        label_names = check_label_names(label_names, num_classes)
        if pair not in (None, True, False):
            raise ValueError(
                "Received an invalid value for argument `pair`, expected "
                f"True, False or None. Received: pair={pair!r}"
            )

        # === Layers ===
        self.backbone = backbone
        self.output_dropout = HalfBitsDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = logits_dense(num_classes, backbone, name="logits")
        windows = doc_stride is not None
        self.window_rows = WindowRows(name="window_rows") if windows else None
        self.window_aggregation = (
            WindowAggregation(aggregation, name="window_aggregation")
            if windows
            else None
        )

        # === Functional Model ===
        inputs = keras_inputs(windows=windows)
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
        self.doc_stride = doc_stride
        self.aggregation = aggregation
        self.max_windows = max_windows
        if self.preprocessor is not None:
            self._text_packer()  # checks doc_stride against its length

        self.compile()

    def _head_labels(self, labels, argument):
        return class_labels(
            labels, self.num_classes, self.label_names, argument
        )

    def _note_text_layout(self, x):
        pair = pair_layout(x, self.pair)
        check_document_windows(self.doc_stride, self.aggregation, None, pair)
        self.pair = pair

    def _text_packer(self):
        """The preprocessor, or with `doc_stride` the `DocumentWindows`
        over it that cut raw text into this model's inputs."""
        if self.doc_stride is None:
            return self.preprocessor
        cached = getattr(self, "_windows", None)
        if cached is None or cached.preprocessor is not self.preprocessor:
            cached = DocumentWindows(
                self.preprocessor, self.doc_stride, self.max_windows
            )
            # A plain attribute: neither Keras nor a SavedModel tracks it.
            self._windows = cached
        return cached

    def _check_text_layout(self, x):
        pair_layout(x, self.pair)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Configures training; `"auto"` gives BERT's fine-tuning setup.

        Args:
            optimizer: `"auto"` for AdamW with
                `keras_bert.training.TRAINING_DEFAULTS["classifier"]`
                (2e-5, weight decay 0.01 except LayerNorm and biases,
                global-norm clipping 1.0).
            loss: `"auto"` for cross-entropy on logits, or mean squared
                error when `num_classes == 1`.
            metrics: `"auto"` for accuracy, or mean squared error for
                regression.
            **kwargs: passed to `keras.Model.compile`, and
                `gradient_accumulation_steps` (see `Task.compile`).
        """
        regression = self.num_classes == 1
        if optimizer == "auto":
            optimizer = self.auto_optimizer()
        if loss == "auto":
            loss = (
                keras.losses.MeanSquaredError()
                if regression
                else keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                )
            )
        if metrics == "auto":
            metrics = (
                [keras.metrics.MeanSquaredError(name="mse")]
                if regression
                else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
            )
        super().compile(
            optimizer=optimizer, loss=loss, metrics=metrics, **kwargs
        )

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "pair": self.pair,
            "label_names": self.label_names,
            "doc_stride": self.doc_stride,
            "aggregation": self.aggregation,
            "max_windows": self.max_windows,
        }


def check_document_windows(doc_stride, aggregation, max_windows, pair):
    """Raises a `ValueError` naming the bad value unless `BertClassifier`'s
    window arguments agree (`doc_stride` None or a positive int, a known
    `aggregation`, `max_windows` only with `doc_stride`, single texts)."""
    if doc_stride is not None:
        check_positive_int(
            "doc_stride",
            doc_stride,
            hint="tokens between window starts, or None to truncate",
        )
    check_aggregation(aggregation)
    check_max_windows(max_windows)
    if doc_stride is None and max_windows is not None:
        raise ValueError(
            f"Received max_windows={max_windows!r} without doc_stride: "
            "`max_windows` bounds the windows a document is read in. Pass "
            "doc_stride=N too, or max_windows=None."
        )
    if doc_stride is not None and pair:
        raise ValueError(
            f"Received doc_stride={doc_stride} for sentence pairs: windows "
            "read single documents. Pass single texts, or doc_stride=None "
            "to read pairs truncated."
        )
