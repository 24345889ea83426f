"""`BertClassifier`'s keyword spellings of its label mode and windows.

`BertClassifier` is given a label mode (`keras_bert.models.label_modes`)
and document windows (`keras_bert.models.document_windowing`). The
keyword arguments that spelled them before, and that configs saved by
earlier versions hold, keep working, mapped here and nowhere else:

- `multi_label=True, thresholds=T`: `label_mode=MultiLabel(T)`;
- `num_classes=1` without a label mode: `label_mode=Regression()`;
- `doc_stride=S, aggregation=A, max_windows=M`:
  `windows=DocumentWindowing(S, A, M)`;

and the model's attributes of the same names read the objects
(`ClassifierKeywords`).
"""

from keras_bert.models.document_windowing import DocumentWindowing
from keras_bert.models.document_windowing import check_document_windows
from keras_bert.models.label_modes import LabelMode
from keras_bert.models.label_modes import MultiLabel
from keras_bert.models.label_modes import Regression
from keras_bert.models.label_modes import SingleLabel

KEYWORDS = (
    "multi_label",
    "thresholds",
    "doc_stride",
    "aggregation",
    "max_windows",
)


def classifier_axes(num_classes, label_mode, windows, pair, keywords):
    """`(label_mode, windows)` from a `BertClassifier`'s arguments.

    Args:
        num_classes: int. The head's logits.
        label_mode: a `LabelMode` or `None`.
        windows: a `DocumentWindowing` or `None`.
        pair: bool or `None`: the model's text layout (checked here too).
        keywords: dict, the constructor's other keyword arguments: those
            of `KEYWORDS` are taken out of it and mapped.

    Returns:
        The label mode, fitted to `num_classes` (`LabelMode.for_classes`),
        and the windows or `None`.

    Raises:
        ValueError: naming the value, for a bad one, an object given
            with the keywords that spell it, or windows over pairs.
    """
    if pair not in (None, True, False):
        raise ValueError(
            "Received an invalid value for argument `pair`, expected "
            f"True, False or None. Received: pair={pair!r}"
        )
    given = {name: keywords.pop(name) for name in KEYWORDS if name in keywords}
    label_mode = label_mode_of(
        num_classes,
        label_mode,
        given.get("multi_label", False),
        given.get("thresholds"),
    )
    spelled = {
        name: given[name]
        for name in ("doc_stride", "aggregation", "max_windows")
        if name in given
    }
    if windows is not None:
        if not isinstance(windows, DocumentWindowing):
            raise ValueError(
                "Received an invalid value for argument `windows`, expected "
                f"a DocumentWindowing or None. Received: windows={windows!r}"
            )
        if any(value not in (None, "mean") for value in spelled.values()):
            raise ValueError(
                f"Received windows={windows!r} and {spelled}: the same "
                "thing twice. Pass windows=DocumentWindowing(...) only."
            )
    else:
        spelled = {"doc_stride": None, "aggregation": "mean", **spelled}
        spelled.setdefault("max_windows", None)
        check_document_windows(**spelled, pair=pair)
        if spelled["doc_stride"] is not None:
            windows = DocumentWindowing(**spelled)
    if windows is not None:
        windows.check_layout(pair)
    return label_mode, windows


def label_mode_of(num_classes, label_mode, multi_label, thresholds):
    """`label_mode`, or the one `multi_label` and `thresholds` spell (else
    `Regression()` for `num_classes=1`, `SingleLabel()`), for
    `num_classes`."""
    if multi_label not in (True, False):
        raise ValueError(
            "Received an invalid value for argument `multi_label`, expected "
            f"True or False. Received: multi_label={multi_label!r}"
        )
    if label_mode is not None:
        if not isinstance(label_mode, LabelMode):
            raise ValueError(
                "Received an invalid value for argument `label_mode`, "
                "expected SingleLabel(), Regression(), MultiLabel(...) or "
                f"None. Received: label_mode={label_mode!r}"
            )
        if multi_label or thresholds is not None:
            raise ValueError(
                f"Received label_mode={label_mode!r} and multi_label="
                f"{multi_label!r}, thresholds={thresholds!r}: the same "
                "thing twice. Pass label_mode=MultiLabel(thresholds) only."
            )
    elif multi_label:
        label_mode = MultiLabel(thresholds)
    elif thresholds is not None:
        raise ValueError(
            "Received thresholds for a classifier that is not multi-label: "
            f"thresholds={thresholds!r}. Pass multi_label=True, or "
            "thresholds=None."
        )
    else:
        label_mode = Regression() if num_classes == 1 else SingleLabel()
    return label_mode.for_classes(num_classes)


class ClassifierKeywords:
    """`BertClassifier`'s attributes of the keyword names, read from its
    `label_mode` and `windows` (`thresholds` may be set: a multi-label
    model's label mode is then `MultiLabel` of the new thresholds)."""

    # Taken in `**kwargs` (`from_checkpoint` reads it).
    KEYWORD_ARGUMENTS = KEYWORDS

    @property
    def multi_label(self):
        return self.label_mode.multi_label

    @property
    def thresholds(self):
        return getattr(self.label_mode, "thresholds", None)

    @thresholds.setter
    def thresholds(self, thresholds):
        self.label_mode.thresholded("thresholds")
        self.label_mode = MultiLabel(thresholds).for_classes(self.num_classes)

    @property
    def doc_stride(self):
        return self.windows.doc_stride if self.windows else None

    @property
    def aggregation(self):
        return self.windows.aggregation if self.windows else "mean"

    @property
    def max_windows(self):
        return self.windows.max_windows if self.windows else None
