"""A classifier's label mode: what its labels are and what it predicts.

A `BertClassifier` is given one (`label_mode=`), a small serializable
object saved in its config, and asks it rather than branching on flags:
`labels` checks and converts `fit`'s labels (`keras_bert.models.labels`),
`loss` and `metrics` are `compile("auto")`'s, `predictions` is what
`predict` returns. `SingleLabel` (one class per example), `Regression`
(one score) and `MultiLabel(thresholds)` (a sigmoid and a threshold per
label).
"""

import keras
import numpy as np

from keras_bert.decoding.multi_labels import labels_over_thresholds
from keras_bert.models.labels import class_labels
from keras_bert.models.multi_hot_labels import check_thresholds
from keras_bert.models.multi_hot_labels import multi_hot_labels
from keras_bert.models.one_hot_labels import one_hot_ids
from keras_bert.training.multi_label_metrics import MultiLabelF1
from keras_bert.training.multi_label_metrics import SubsetAccuracy
from keras_bert.training.multi_label_metrics import tune_thresholds


class LabelMode:
    """Base of the label modes: one class per example, the defaults."""

    multi_label = False
    regression = False

    def for_classes(self, num_classes):
        """This mode for a head of `num_classes` logits, checked (a
        `ValueError` naming the value where they disagree)."""
        if num_classes < 2:
            raise ValueError(
                f"Received num_classes={num_classes} for {self!r}, which "
                "picks one class of several. Pass num_classes >= 2, or "
                "label_mode=Regression() for one score per example."
            )
        return self

    def check_label_names(self, label_names, num_classes):
        """`label_names` as a list, one distinct str per class, or `None`."""
        return check_label_names(label_names, num_classes, self.regression)

    def labels(
        self, labels, num_classes, label_names=None, argument="y", loss=None
    ):
        """`labels` checked and as the loss takes them (class ids; one-hot
        rows become ids unless the compiled `loss` takes rows)."""
        labels = one_hot_ids(labels, num_classes, argument, loss)
        return class_labels(labels, num_classes, label_names, argument)

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def predictions(self, logits):
        """What `predict` returns for the model's outputs `logits`."""
        return logits

    def predicted_labels(self, logits, names):
        """Per example, the name of its class (the argmax)."""
        logits = np.asarray(logits)
        if logits.ndim != 2 or logits.shape[1] != len(names):
            raise ValueError(
                "Received an invalid value for argument `probabilities`: "
                f"shape {logits.shape}. Pass `predict`'s output, shape "
                f"(batch, {len(names)})."
            )
        return [names[i] for i in logits.argmax(axis=1)]

    def thresholded(self, method):
        """This mode if it decides by thresholds, else a `ValueError`
        naming `method`, which needs them."""
        raise ValueError(
            f"`{method}` is for a multi-label classifier; this one gives "
            "each example one class (argmax of the logits). Build it with "
            "`label_mode=MultiLabel()` (or `multi_label=True`) for labels "
            "that apply independently."
        )

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return type(self) is type(other) and (
            self.get_config() == other.get_config()
        )

    def __repr__(self):
        arguments = ", ".join(
            f"{k}={v!r}" for k, v in self.get_config().items()
        )
        return f"{type(self).__name__}({arguments})"


@keras.saving.register_keras_serializable(package="keras_bert")
class SingleLabel(LabelMode):
    """One class per example: softmax cross-entropy, accuracy.

    What a classifier of `num_classes >= 2` is by default. `fit` takes a
    class id per example (or a name of `label_names`); `predict` returns
    logits, the argmax is the class.

    Example:
    ```python
    classifier = keras_bert.BertClassifier(
        backbone, 3, label_mode=keras_bert.models.SingleLabel()
    )  # the same as BertClassifier(backbone, 3)
    classifier.label_mode.labels([2, 0], num_classes=3)  # array([2, 0])
    ```
    """


@keras.saving.register_keras_serializable(package="keras_bert")
class Regression(LabelMode):
    """One score per example (e.g. STS-B): mean squared error.

    What a classifier of `num_classes=1` is by default. `fit` takes a
    finite number per example; `predict` returns the scores
    `(batch_size, 1)`. A regressor has no classes to name.

    Example:
    ```python
    scorer = keras_bert.BertClassifier(
        backbone, 1, label_mode=keras_bert.models.Regression()
    )  # the same as BertClassifier(backbone, 1)
    scorer.label_mode.labels([0.5, 4.0], num_classes=1)  # array([0.5, 4.])
    ```
    """

    regression = True

    def for_classes(self, num_classes):
        if num_classes != 1:
            raise ValueError(
                f"Received num_classes={num_classes} for Regression(), "
                "which gives one score per example. Pass num_classes=1."
            )
        return self

    def loss(self):
        return keras.losses.MeanSquaredError()

    def predicted_labels(self, scores, names):
        raise ValueError(
            "`predicted_labels` names classes; a regressor (num_classes=1) "
            "gives a score per example: read `predict`'s output."
        )

    def metrics(self):
        return [keras.metrics.MeanSquaredError(name="mse")]


@keras.saving.register_keras_serializable(package="keras_bert")
class MultiLabel(LabelMode):
    """Any number of labels per example, each decided by its threshold.

    Topics, tags, toxicity types (`transformers`' `problem_type=
    "multi_label_classification"`): one sigmoid per label, binary
    cross-entropy on logits, `micro_f1`, `macro_f1` and `subset_accuracy`.
    `fit` takes a list of names per example (or multi-hot rows);
    `predict` returns the probabilities; a label is predicted where its
    probability is over its threshold (`predicted_labels`, the export's
    `labels`).

    Args:
        thresholds: list of float or `None`. Each label's threshold, in
            `(0, 1)`; `None` (the default): `0.5` each.
            `BertClassifier.tune_thresholds` fits them to a dev set.

    Example:
    ```python
    mode = keras_bert.models.MultiLabel(thresholds=[0.5, 0.4, 0.6])
    mode.predicted_labels([[0.9, 0.45, 0.5]], ["film", "book", "opinion"])
    # [["film", "book"]]
    tagger = keras_bert.BertClassifier(
        backbone, 3, label_names=["film", "book", "opinion"], label_mode=mode
    )  # the same as BertClassifier(..., multi_label=True, thresholds=...)
    tagger.thresholds  # [0.5, 0.4, 0.6]
    ```
    """

    multi_label = True

    def __init__(self, thresholds=None):
        if thresholds is not None:
            thresholds = check_thresholds(thresholds)
        self.thresholds = thresholds

    def for_classes(self, num_classes):
        if self.thresholds is None:
            return MultiLabel([0.5] * num_classes)
        if len(self.thresholds) != num_classes:
            raise ValueError(
                "Received an invalid value for argument `thresholds`: "
                f"{self.thresholds!r} for num_classes={num_classes}. Pass "
                f"{num_classes} numbers in (0, 1), one per label, or None "
                "(0.5 each)."
            )
        return self

    def labels(
        self, labels, num_classes, label_names=None, argument="y", loss=None
    ):
        """Multi-hot float32 rows `(n, num_classes)` (`loss` unread)."""
        return multi_hot_labels(labels, num_classes, label_names, argument)

    def loss(self):
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def metrics(self):
        return [MultiLabelF1("micro"), MultiLabelF1("macro"), SubsetAccuracy()]

    def predictions(self, logits):
        """The probabilities: float32 sigmoids of the logits."""
        logits = np.asarray(logits, "float64")
        return (1.0 / (1.0 + np.exp(-logits))).astype("float32")

    def thresholded(self, method):
        return self

    def tuned(self, labels, probabilities):
        """A `MultiLabel` with each label's threshold of best F1 on
        multi-hot `labels` (`keras_bert.training.tune_thresholds`)."""
        return MultiLabel(tune_thresholds(labels, probabilities))

    def predicted_labels(self, probabilities, names):
        """Per example, the `names` of the labels over their threshold."""
        probabilities = np.asarray(probabilities, "float32")
        if self.thresholds is None:  # not yet given its classes
            width = probabilities.shape[-1] if probabilities.ndim else 0
            return self.for_classes(width).predicted_labels(
                probabilities, names
            )
        width = len(self.thresholds)
        if probabilities.ndim != 2 or probabilities.shape[1] != width:
            raise ValueError(
                "Received an invalid value for argument `probabilities`: "
                f"shape {probabilities.shape}. Pass `predict`'s output, "
                f"shape (batch, {width})."
            )
        over = labels_over_thresholds(probabilities, self.thresholds, names)
        return [[n.decode("utf-8") for n in row if n] for row in over.numpy()]

    def get_config(self):
        return {"thresholds": self.thresholds}


def check_label_names(label_names, num_classes, regression=None):
    """`label_names` as a list of str, one per class, or `None`.

    `regression` (default: `num_classes == 1`) says the model has no
    classes to name (a multi-label classifier of one label has one)."""
    if label_names is None:
        return None
    if isinstance(label_names, (str, bytes)) or not all(
        isinstance(name, str) for name in label_names
    ):
        raise ValueError(
            "Received an invalid value for argument `label_names`: expected "
            f"a list of str, one per class. Received: {label_names!r}"
        )
    label_names = list(label_names)
    if regression is None:
        regression = num_classes == 1
    if regression:
        raise ValueError(
            "A regressor (num_classes=1) has no classes to name; received "
            f"label_names={label_names!r}. Pass label_names=None."
        )
    if len(label_names) != num_classes or len(set(label_names)) != len(
        label_names
    ):
        raise ValueError(
            f"Received an invalid value for argument `label_names`: "
            f"{label_names!r} for num_classes={num_classes}. Pass "
            f"{num_classes} distinct names, the one of class i at index i."
        )
    return label_names
