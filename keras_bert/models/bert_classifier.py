"""BERT with a classification (or regression) head on `[CLS]`."""

import keras
import numpy as np

from keras_bert.decoding.multi_labels import labels_over_thresholds
from keras_bert.layers.half_bits_dropout import HalfBitsDropout
from keras_bert.layers.window_aggregation import WindowAggregation
from keras_bert.layers.window_aggregation import check_aggregation
from keras_bert.layers.window_rows import WindowRows
from keras_bert.models.bert_backbone import keras_inputs
from keras_bert.models.labels import check_label_names
from keras_bert.models.labels import checked_labels
from keras_bert.models.labels import class_labels
from keras_bert.models.labels import multi_hot_labels
from keras_bert.models.task import Task
from keras_bert.models.task import logits_dense
from keras_bert.models.text_inputs import pair_layout
from keras_bert.text.document_windows import DocumentWindows
from keras_bert.text.document_windows import check_max_windows
from keras_bert.training.multi_label_metrics import MultiLabelF1
from keras_bert.training.multi_label_metrics import SubsetAccuracy
from keras_bert.training.multi_label_metrics import tune_thresholds
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

    With `multi_label=True` each class is a label of its own, any number
    of which apply to a text (topics, tags, toxicity types;
    `transformers`' `problem_type="multi_label_classification"`): one
    sigmoid per label, binary cross-entropy, micro and macro F1 and
    subset accuracy. A label is predicted where its probability is over
    its threshold (`thresholds`, `0.5` each until `tune_thresholds` fits
    them to a dev set; saved with the model and the export). `predict`
    then returns probabilities, `predicted_labels` the names over
    threshold, and `fit` takes a list of names per text (or multi-hot
    rows).

    The model is compiled on construction: sparse categorical
    cross-entropy on logits and `accuracy` for classification, mean
    squared error for regression, binary cross-entropy on logits with
    `micro_f1`, `macro_f1` and `subset_accuracy` for multi-label, AdamW
    with learning rate 2e-5. Call `compile()` to change it.

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
        num_classes: int. Number of classes (labels, with
            `multi_label`); `1` for regression.
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
        multi_label: bool. Whether several classes may apply to one text
            (a sigmoid and a decision per label) rather than exactly one.
            Defaults to `False`.
        thresholds: list of float or `None`. With `multi_label`, each
            label's decision threshold on its probability, in `(0, 1)`;
            `None` (the default): `0.5` each. Set by `tune_thresholds`;
            saved in the config.
        preprocessor: `keras_bert.BertPreprocessor` or `None`. Turns raw
            text into the backbone's inputs; `None` (the default): the
            model takes ids only.
        **kwargs: `name`, `trainable`.

    Inputs: the backbone's dict (`token_ids`, `segment_ids`,
        `padding_mask`), or raw text with a preprocessor. With
        `doc_stride`, each `(batch_size, windows, sequence_length)`: a
        document's windows first, then windows of padding only (all 0).

    Outputs: float32 logits (or scores) `(batch_size, num_classes)`.
        `predict` of a multi-label model returns their sigmoid, the
        probabilities.

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
    # Several labels per text: names in, probabilities out.
    tagger = keras_bert.BertClassifier(
        backbone, 3, preprocessor=preprocessor, multi_label=True,
        label_names=["film", "book", "opinion"],
    )
    tagger.fit(["a good film", "a dull book", "film"],
               [["film", "opinion"], ["book", "opinion"], ["film"]],
               verbose=0)
    probabilities = tagger.predict(["a bad book"], verbose=0)  # (1, 3)
    tagger.tune_thresholds(["a good book"], [["book", "opinion"]])
    tagger.predicted_labels(probabilities)  # e.g. [["book", "opinion"]]
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
        multi_label=False,
        thresholds=None,
        **kwargs,
    ):
        check_positive_int("num_classes", num_classes, hint="1 for regression")
        check_document_windows(doc_stride, aggregation, max_windows, pair)
        check_rate("dropout", dropout)
        if multi_label not in (True, False):
            raise ValueError(
                "Received an invalid value for argument `multi_label`, "
                f"expected True or False. Received: multi_label={multi_label!r}"
            )
        label_names = check_label_names(
            label_names,
            num_classes,
            regression=num_classes == 1 and not multi_label,
        )
        thresholds = _check_thresholds(thresholds, num_classes, multi_label)
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
        self.multi_label = multi_label
        self.thresholds = thresholds

        self.compile()

    def _head_labels(self, labels, argument):
        if self.multi_label:
            return multi_hot_labels(
                labels, self.num_classes, self.label_names, argument
            )
        return class_labels(
            labels, self.num_classes, self.label_names, argument
        )

    def predict(self, x, *args, **kwargs):
        """Logits `(batch, num_classes)`; a multi-label model's
        probabilities (their sigmoid). See `RawTextMethods.predict`."""
        outputs = super().predict(x, *args, **kwargs)
        if not self.multi_label:
            return outputs
        return (1.0 / (1.0 + np.exp(-np.asarray(outputs, "float64")))).astype(
            "float32"
        )

    def tune_thresholds(self, x, y, batch_size=None):
        """Sets each label's threshold to the one of best F1 on `(x, y)`.

        A multi-label model only. Predicts `x` (a dev set: raw text or
        ids), then for each label picks the threshold on its probability,
        among `0.05, 0.10, ..., 0.95`, that maximises its F1 on `y`
        (`keras_bert.training.tune_thresholds`). The thresholds are saved
        with the model and decide `predicted_labels` and the export's
        `labels`.

        Args:
            x: the dev set's inputs, as `evaluate` takes them.
            y: its labels: a list of names per example, or multi-hot rows.
            batch_size: int or `None`. Batch size to predict with.

        Returns:
            list of float: the thresholds, one per label.
        """
        self._check_multi_label("tune_thresholds")
        labels = checked_labels(x, y, "evaluate", self._head_labels)
        probabilities = self.predict(x, batch_size=batch_size, verbose=0)
        self.thresholds = tune_thresholds(labels, probabilities)
        return self.thresholds

    def predicted_labels(self, probabilities):
        """The names of the labels over threshold, per example.

        A multi-label model only; what its export's `labels` output gives
        (without the `""` padding).

        Args:
            probabilities: float array `(batch, num_classes)`, as
                `predict` returns.

        Returns:
            list of lists of str, in label order (`label_names`, else
            `"0"`, `"1"`, ...).
        """
        self._check_multi_label("predicted_labels")
        probabilities = np.asarray(probabilities, "float32")
        if (
            probabilities.ndim != 2
            or probabilities.shape[1] != self.num_classes
        ):
            raise ValueError(
                "Received an invalid value for argument `probabilities`: "
                f"shape {probabilities.shape}. Pass `predict`'s output, "
                f"shape (batch, {self.num_classes})."
            )
        names = labels_over_thresholds(
            probabilities, self.thresholds, self.class_names()
        ).numpy()
        return [[name.decode("utf-8") for name in row if name] for row in names]

    def class_names(self):
        """`label_names`, else `"0"`, `"1"`, ...: what exports give."""
        if self.label_names is not None:
            return list(self.label_names)
        return [str(i) for i in range(self.num_classes)]

    def _check_multi_label(self, method):
        if not self.multi_label:
            raise ValueError(
                f"`{method}` is for a multi-label classifier; this one "
                "gives each example one class (argmax of the logits). "
                "Build it with `multi_label=True` for labels that apply "
                "independently."
            )

    def _note_text_layout(self, x):
        pair = pair_layout(x, self.pair)
        check_document_windows(self.doc_stride, self.aggregation, None, pair)
        self.pair = pair

    def document_windows(self, preprocessor=None):
        """How this model cuts raw texts into windows, or `None`.

        The one place a `doc_stride` model's windows are defined: `fit`,
        `evaluate`, `predict`, the export's text endpoint
        (`keras_bert.serving`) and `ClassificationFineTuning` all cut
        documents with what it returns.

        Args:
            preprocessor: `keras_bert.BertPreprocessor` or `None`. The
                tokenizer and window length (`sequence_length`) to cut
                with; `None` (the default): the model's own.

        Returns:
            A new `keras_bert.text.document_windows.DocumentWindows` over
            `preprocessor` with the model's `doc_stride` and
            `max_windows`, or `None` for a model built without
            `doc_stride` (it truncates long texts).

        Raises:
            ValueError: `doc_stride` is set but there is no preprocessor
                to cut with (neither passed nor the model's), or the
                preprocessor's `sequence_length` leaves no room for
                windows `doc_stride` apart.

        Example:
        ```python
        reader = keras_bert.BertClassifier(
            backbone, 2, preprocessor=preprocessor, doc_stride=7
        )  # the class example's backbone and preprocessor (length 16)
        windows = reader.document_windows()
        windows(tf.constant(["a good film " * 20]))["token_ids"].shape
        # (1, 8, 16): 60 tokens in windows of 14 every 7
        keras_bert.BertClassifier(backbone, 2).document_windows()  # None
        ```
        """
        if self.doc_stride is None:
            return None
        if preprocessor is None:
            preprocessor = self.preprocessor
        if preprocessor is None:
            raise ValueError(
                f"This classifier reads documents in windows (doc_stride="
                f"{self.doc_stride}) but has no preprocessor to cut them "
                "with. Pass `preprocessor=` to `document_windows`, or "
                "build the model with one."
            )
        return DocumentWindows(preprocessor, self.doc_stride, self.max_windows)

    def _text_packer(self):
        """The preprocessor, or with `doc_stride` the `DocumentWindows`
        over it that cut raw text into this model's inputs (made once per
        preprocessor: they keep their traced functions)."""
        if self.doc_stride is None:
            return self.preprocessor
        cached = getattr(self, "_windows", None)
        if cached is None or cached.preprocessor is not self.preprocessor:
            cached = self.document_windows(self.preprocessor)
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
            loss: `"auto"` for cross-entropy on logits, binary
                cross-entropy on logits with `multi_label`, or mean
                squared error for regression.
            metrics: `"auto"` for accuracy; `micro_f1`, `macro_f1` and
                `subset_accuracy` (threshold 0.5) with `multi_label`; mean
                squared error for regression.
            **kwargs: passed to `keras.Model.compile`, and
                `gradient_accumulation_steps` (see `Task.compile`).
        """
        multi_label = getattr(self, "multi_label", False)
        regression = self.num_classes == 1 and not multi_label
        if optimizer == "auto":
            optimizer = self.auto_optimizer()
        if loss == "auto":
            if multi_label:
                loss = keras.losses.BinaryCrossentropy(from_logits=True)
            elif regression:
                loss = keras.losses.MeanSquaredError()
            else:
                loss = keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                )
        if metrics == "auto":
            if multi_label:
                metrics = [
                    MultiLabelF1("micro"),
                    MultiLabelF1("macro"),
                    SubsetAccuracy(),
                ]
            elif regression:
                metrics = [keras.metrics.MeanSquaredError(name="mse")]
            else:
                metrics = [
                    keras.metrics.SparseCategoricalAccuracy(name="accuracy")
                ]
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
            "multi_label": self.multi_label,
            "thresholds": self.thresholds,
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


def _check_thresholds(thresholds, num_classes, multi_label):
    """`thresholds` as a list of floats (0.5 each for `None`) for a
    multi-label model; `None` for any other."""
    if not multi_label:
        if thresholds is not None:
            raise ValueError(
                "Received thresholds for a classifier that is not "
                f"multi-label: thresholds={thresholds!r}. Pass "
                "multi_label=True, or thresholds=None."
            )
        return None
    if thresholds is None:
        return [0.5] * num_classes
    values = (
        np.asarray(thresholds, "float64").ravel()
        if not isinstance(thresholds, (str, bytes))
        else np.array([np.nan])
    )
    if (
        len(values) != num_classes
        or not np.all(np.isfinite(values))
        or np.any(values <= 0)
        or np.any(values >= 1)
    ):
        raise ValueError(
            "Received an invalid value for argument `thresholds`: "
            f"{thresholds!r} for num_classes={num_classes}. Pass "
            f"{num_classes} numbers in (0, 1), one per label, or None "
            "(0.5 each)."
        )
    return [float(value) for value in values]
