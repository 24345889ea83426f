"""How a classifier reads whole documents: in windows, logits aggregated.

A `BertClassifier` given `windows=DocumentWindowing(doc_stride, ...)`
reads each text whole instead of truncating it: cut into overlapping
windows (`keras_bert.text.document_windows.DocumentWindows`), each window
scored, the window logits combined per document (`WindowRows` and
`WindowAggregation`, `keras_bert.layers`). docs/long_documents.md.
"""

import keras

from keras_bert.layers.window_aggregation import WindowAggregation
from keras_bert.layers.window_aggregation import check_aggregation
from keras_bert.layers.window_rows import WindowRows
from keras_bert.text.document_windows import DocumentWindows
from keras_bert.text.document_windows import check_max_windows
from keras_bert.validation import check_positive_int


@keras.saving.register_keras_serializable(package="keras_bert")
class DocumentWindowing:
    """Reads each document in overlapping windows, one score per document.

    Windows of the preprocessor's `sequence_length - 2` tokens start every
    `doc_stride` tokens; each is scored and a document's window logits
    combined, in `fit` (documents are the unit of labels, loss and
    metrics), `evaluate`, `predict` and the export. Single texts only. A
    small serializable object, saved in the classifier's config.

    Args:
        doc_stride: int. Tokens between the starts of consecutive windows,
            at most `sequence_length - 2` (checked against the
            preprocessor).
        aggregation: str. How a document's window logits combine:
            `"mean"` (the default) or `"max"`.
        max_windows: int or `None`. The windows read per document, the
            first ones (bounds the cost of the longest documents); `None`
            (the default): all.

    Example:
    ```python
    reader = keras_bert.BertClassifier(
        backbone, 2, preprocessor=preprocessor,
        windows=keras_bert.models.DocumentWindowing(7, aggregation="max"),
    )  # the same as BertClassifier(..., doc_stride=7, aggregation="max")
    reader.predict(["a good book " * 30], verbose=0)  # (1, 2)
    ```
    """

    def __init__(self, doc_stride, aggregation="mean", max_windows=None):
        check_positive_int(
            "doc_stride",
            doc_stride,
            hint="tokens between window starts, or None to truncate",
        )
        check_aggregation(aggregation)
        check_max_windows(max_windows)
        self.doc_stride = int(doc_stride)
        self.aggregation = aggregation
        self.max_windows = max_windows

    def check_layout(self, pair):
        """Raises a `ValueError` for sentence pairs (`pair=True`)."""
        if pair:
            raise ValueError(
                f"Received doc_stride={self.doc_stride} for sentence pairs: "
                "windows read single documents. Pass single texts, or "
                "doc_stride=None to read pairs truncated."
            )

    def layers(self):
        """`(WindowRows, WindowAggregation)`: the layers a classifier puts
        around its backbone and head."""
        return (
            WindowRows(name="window_rows"),
            WindowAggregation(self.aggregation, name="window_aggregation"),
        )

    def cutter(self, preprocessor):
        """A `DocumentWindows` that cuts raw texts into these windows with
        `preprocessor`'s tokenizer and `sequence_length`.

        Raises:
            ValueError: `preprocessor` is `None`, or its `sequence_length`
                leaves no room for windows `doc_stride` apart.
        """
        if preprocessor is None:
            raise ValueError(
                f"This classifier reads documents in windows (doc_stride="
                f"{self.doc_stride}) but has no preprocessor to cut them "
                "with. Pass `preprocessor=` to `document_windows`, or "
                "build the model with one."
            )
        return DocumentWindows(preprocessor, self.doc_stride, self.max_windows)

    def get_config(self):
        return {
            "doc_stride": self.doc_stride,
            "aggregation": self.aggregation,
            "max_windows": self.max_windows,
        }

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
        return f"DocumentWindowing({arguments})"


def check_document_windows(doc_stride, aggregation, max_windows, pair):
    """Raises a `ValueError` naming the bad value unless `BertClassifier`'s
    window arguments agree (`doc_stride` None or a positive int, a known
    `aggregation`, `max_windows` only with `doc_stride`, single texts)."""
    check_aggregation(aggregation)
    check_max_windows(max_windows)
    if doc_stride is None:
        if max_windows is not None:
            raise ValueError(
                f"Received max_windows={max_windows!r} without doc_stride: "
                "`max_windows` bounds the windows a document is read in. "
                "Pass doc_stride=N too, or max_windows=None."
            )
        return
    DocumentWindowing(doc_stride, aggregation, max_windows).check_layout(pair)
