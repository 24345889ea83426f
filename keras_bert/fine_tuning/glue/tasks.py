"""The GLUE tasks: where their data lives and how they are scored.

One `GlueTask` per task of the GLUE benchmark, in `GLUE_TASKS`. Each
entry says where the data is on TFDS (`glue/<task>`) and in the directory
GLUE's `download_glue_data.py` writes (file names, exact columns, header
or not, which splits have labels), the label strings of the TSV files and
of GLUE's submission files, the metrics, and the submission file of each
test split.

Label ids follow TFDS's `ClassLabel` order, so an id means the same thing
whichever source the data came from: for CoLA, SST-2, MRPC, QQP and WNLI
the TSV label string is the id itself (`"0"`, `"1"`); MNLI and AX use
`entailment, neutral, contradiction`; QNLI and RTE `entailment,
not_entailment`. STS-B is a regression on scores in `[0, 5]`.

Text features are named as TFDS names them (`premise`/`hypothesis` for
MNLI, `question1`/`question2` for QQP, ...).
"""

import dataclasses

MNLI_LABELS = ("entailment", "neutral", "contradiction")
_BINARY = ("0", "1")

_MNLI_TEST_COLUMNS = (
    "index",
    "promptID",
    "pairID",
    "genre",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
)
_MNLI_DEV_COLUMNS = _MNLI_TEST_COLUMNS + (
    "label1",
    "label2",
    "label3",
    "label4",
    "label5",
    "gold_label",
)
_STSB_TEST_COLUMNS = (
    "index",
    "genre",
    "filename",
    "year",
    "old_index",
    "source1",
    "source2",
    "sentence1",
    "sentence2",
)


@dataclasses.dataclass(frozen=True)
class GlueSplit:
    """One split of a GLUE task as a TSV file.

    Args:
        filename: str. File name inside the task's directory.
        columns: tuple of str. The columns, in order: the header line when
            `header` is true, otherwise the names this code gives them.
        header: bool. Whether the first line is a header.
        labelled: bool. Whether rows carry a label (test splits do not).
        submission: str or `None`. File name of GLUE's submission file
            for this split (test splits only).
    """

    filename: str
    columns: tuple
    header: bool = True
    labelled: bool = True
    submission: str = None


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """A GLUE task: its data on TFDS and on disk, its labels and metrics.

    Args:
        name: str. The task name, e.g. `"mnli"`.
        tfds_name: str. The TFDS dataset, e.g. `"glue/mnli"`.
        directory: str. The task's folder in a GLUE data directory.
        text_features: dict. Feature name (TFDS's) → TSV column, one or
            two entries (a sentence or a sentence pair), in input order.
        label_column: str or `None`. The TSV column holding the label.
        labels: tuple of str or `None`. The label strings as written in
            the TSV and submission files, in id order; `None` for
            regression.
        label_names: tuple of str or `None`. Readable names of the labels
            (TFDS's class names), in id order.
        metrics: tuple of str. Metric names; the first one picks the best
            epoch.
        splits: dict. Split name → `GlueSplit`.
        training_task: str or `None`. For a task with test data only
            (`ax`), the task whose model predicts it.
        skip_malformed_rows: bool. Drop rows with the wrong number of
            fields instead of failing (QQP's train file has some).
    """

    name: str
    tfds_name: str
    directory: str
    text_features: dict
    label_column: str
    labels: tuple
    label_names: tuple
    metrics: tuple
    splits: dict
    training_task: str = None
    skip_malformed_rows: bool = False

    @property
    def is_regression(self):
        """Whether the task predicts a score rather than a class."""
        return self.labels is None

    @property
    def num_classes(self):
        """Width of the classifier: the number of labels, 1 to regress."""
        return 1 if self.is_regression else len(self.labels)

    @property
    def eval_splits(self):
        """The labelled splits other than `train`, evaluated in training."""
        return tuple(
            name
            for name, split in self.splits.items()
            if name != "train" and split.labelled
        )

    @property
    def test_splits(self):
        """The unlabelled splits, with a GLUE submission file each."""
        return tuple(
            name for name, split in self.splits.items() if not split.labelled
        )


def _standard_splits(columns, test_columns, submission):
    return {
        "train": GlueSplit("train.tsv", columns),
        "validation": GlueSplit("dev.tsv", columns),
        "test": GlueSplit(
            "test.tsv", test_columns, labelled=False, submission=submission
        ),
    }


_PAIR = ("index", "sentence1", "sentence2")

GLUE_TASKS = {
    "cola": GlueTask(
        name="cola",
        tfds_name="glue/cola",
        directory="CoLA",
        text_features={"sentence": "sentence"},
        label_column="label",
        labels=_BINARY,
        label_names=("unacceptable", "acceptable"),
        metrics=("matthews_corrcoef",),
        splits={
            # GLUE's only header-less files: CoLA's train and dev.
            "train": GlueSplit(
                "train.tsv",
                ("source", "label", "original_mark", "sentence"),
                header=False,
            ),
            "validation": GlueSplit(
                "dev.tsv",
                ("source", "label", "original_mark", "sentence"),
                header=False,
            ),
            "test": GlueSplit(
                "test.tsv",
                ("index", "sentence"),
                labelled=False,
                submission="CoLA.tsv",
            ),
        },
    ),
    "sst2": GlueTask(
        name="sst2",
        tfds_name="glue/sst2",
        directory="SST-2",
        text_features={"sentence": "sentence"},
        label_column="label",
        labels=_BINARY,
        label_names=("negative", "positive"),
        metrics=("accuracy",),
        splits=_standard_splits(
            ("sentence", "label"), ("index", "sentence"), "SST-2.tsv"
        ),
    ),
    "mrpc": GlueTask(
        name="mrpc",
        tfds_name="glue/mrpc",
        directory="MRPC",
        text_features={"sentence1": "#1 String", "sentence2": "#2 String"},
        label_column="Quality",
        labels=_BINARY,
        label_names=("not_equivalent", "equivalent"),
        metrics=("f1", "accuracy"),
        splits=_standard_splits(
            ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"),
            ("index", "#1 ID", "#2 ID", "#1 String", "#2 String"),
            "MRPC.tsv",
        ),
    ),
    "qqp": GlueTask(
        name="qqp",
        tfds_name="glue/qqp",
        directory="QQP",
        text_features={"question1": "question1", "question2": "question2"},
        label_column="is_duplicate",
        labels=_BINARY,
        label_names=("not_duplicate", "duplicate"),
        metrics=("f1", "accuracy"),
        splits=_standard_splits(
            ("id", "qid1", "qid2", "question1", "question2", "is_duplicate"),
            ("id", "question1", "question2"),
            "QQP.tsv",
        ),
        skip_malformed_rows=True,
    ),
    "stsb": GlueTask(
        name="stsb",
        tfds_name="glue/stsb",
        directory="STS-B",
        text_features={"sentence1": "sentence1", "sentence2": "sentence2"},
        label_column="score",
        labels=None,
        label_names=None,
        metrics=("pearson", "spearman"),
        splits=_standard_splits(
            _STSB_TEST_COLUMNS + ("score",), _STSB_TEST_COLUMNS, "STS-B.tsv"
        ),
    ),
    "mnli": GlueTask(
        name="mnli",
        tfds_name="glue/mnli",
        directory="MNLI",
        text_features={"premise": "sentence1", "hypothesis": "sentence2"},
        label_column="gold_label",
        labels=MNLI_LABELS,
        label_names=MNLI_LABELS,
        metrics=("accuracy",),
        splits={
            "train": GlueSplit(
                "train.tsv", _MNLI_TEST_COLUMNS + ("label1", "gold_label")
            ),
            "validation_matched": GlueSplit(
                "dev_matched.tsv", _MNLI_DEV_COLUMNS
            ),
            "validation_mismatched": GlueSplit(
                "dev_mismatched.tsv", _MNLI_DEV_COLUMNS
            ),
            "test_matched": GlueSplit(
                "test_matched.tsv",
                _MNLI_TEST_COLUMNS,
                labelled=False,
                submission="MNLI-m.tsv",
            ),
            "test_mismatched": GlueSplit(
                "test_mismatched.tsv",
                _MNLI_TEST_COLUMNS,
                labelled=False,
                submission="MNLI-mm.tsv",
            ),
        },
    ),
    "qnli": GlueTask(
        name="qnli",
        tfds_name="glue/qnli",
        directory="QNLI",
        text_features={"question": "question", "sentence": "sentence"},
        label_column="label",
        labels=("entailment", "not_entailment"),
        label_names=("entailment", "not_entailment"),
        metrics=("accuracy",),
        splits=_standard_splits(
            ("index", "question", "sentence", "label"),
            ("index", "question", "sentence"),
            "QNLI.tsv",
        ),
    ),
    "rte": GlueTask(
        name="rte",
        tfds_name="glue/rte",
        directory="RTE",
        text_features={"sentence1": "sentence1", "sentence2": "sentence2"},
        label_column="label",
        labels=("entailment", "not_entailment"),
        label_names=("entailment", "not_entailment"),
        metrics=("accuracy",),
        splits=_standard_splits(_PAIR + ("label",), _PAIR, "RTE.tsv"),
    ),
    "wnli": GlueTask(
        name="wnli",
        tfds_name="glue/wnli",
        directory="WNLI",
        text_features={"sentence1": "sentence1", "sentence2": "sentence2"},
        label_column="label",
        labels=_BINARY,
        label_names=("not_entailment", "entailment"),
        metrics=("accuracy",),
        splits=_standard_splits(_PAIR + ("label",), _PAIR, "WNLI.tsv"),
    ),
    # The diagnostic set: test data only, predicted by an MNLI model.
    "ax": GlueTask(
        name="ax",
        tfds_name="glue/ax",
        directory="diagnostic",
        text_features={"premise": "sentence1", "hypothesis": "sentence2"},
        label_column=None,
        labels=MNLI_LABELS,
        label_names=MNLI_LABELS,
        metrics=("accuracy",),
        splits={
            "test": GlueSplit(
                "diagnostic.tsv", _PAIR, labelled=False, submission="AX.tsv"
            )
        },
        training_task="mnli",
    ),
}


def get_glue_task(name):
    """Returns the `GlueTask` called `name`.

    Args:
        name: str. One of `cola sst2 mrpc stsb qqp mnli qnli rte wnli ax`.

    Example:
    ```python
    task = get_glue_task("mnli")
    task.splits["validation_matched"].filename  # "dev_matched.tsv"
    task.num_classes  # 3
    ```
    """
    if name not in GLUE_TASKS:
        raise ValueError(
            f"Unknown GLUE task {name!r}. Valid tasks: {', '.join(GLUE_TASKS)}."
        )
    return GLUE_TASKS[name]
