"""Predictions for a file of texts, from a trained classifier or its run.

`recipes/classify.py --predict_file=F` writes one JSON line per input
text (`write_predictions`), with the model it just trained or, without
`--train_file`, with the best epoch of a finished `--model_dir`
(`load_finished_classifier`). Loading a run, naming and writing the
JSONL are shared with the other recipes (`keras_bert.fine_tuning.
predictions`).
"""

import numpy as np

from keras_bert import files
from keras_bert.data.packed_batches import pack_texts
from keras_bert.data.packed_batches import packed_batches
from keras_bert.data.window_batches import pack_windows
from keras_bert.data.window_batches import window_batches
from keras_bert.fine_tuning.classify.examples import (
    read_classification_examples,
)
from keras_bert.fine_tuning.predictions import check_predict_file
from keras_bert.fine_tuning.predictions import load_finished_run
from keras_bert.fine_tuning.predictions import write_jsonl


def read_texts(path, text_column=None, text_b_column=None, **unused):
    """The texts of a file to predict: `(texts,)` or `(texts_a, texts_b)`.

    A `.txt` file holds one text per line (blank lines skipped); any
    other file is read as training files are
    (`read_classification_examples`: JSONL, TSV, CSV), its labels, if
    any, ignored.

    Args:
        path: str. Any path `tf.io.gfile` reads.
        text_column: str or `None`. The column of the texts (as for
            training files; `None`: `text`, or `text_a` and `text_b`).
        text_b_column: str or `None`. The column of pairs' second texts.
        **unused: other column arguments (`label_column`), ignored.

    Returns:
        A tuple of one or two str arrays `(n,)`.
    """
    check_predict_file(path)
    if path.endswith(".txt"):
        lines = [line for line in files.read_text(path).splitlines()]
        texts = [line for line in lines if line.strip()]
        if not texts:
            raise ValueError(f"{path} has no texts (one per line).")
        return (np.array(texts, dtype=object).astype(str),)
    return read_classification_examples(
        path,
        text_column=text_column,
        text_b_column=text_b_column,
        labels=False,
    ).texts


def class_probabilities(model, preprocessor, texts, batch_size=64):
    """Probabilities `(n, num_classes)` of a classifier on packed texts.

    Softmax of a single-label model's logits, a multi-label model's
    sigmoids; one row per document for a model that reads windows
    (`doc_stride`).

    Args:
        model: a `keras_bert.BertClassifier` (a preprocessor attached or
            not).
        preprocessor: the `keras_bert.BertPreprocessor` it reads with.
        texts: `(texts,)` or `(texts_a, texts_b)`, str arrays.
        batch_size: int. Examples (documents) per predict batch.
    """
    windows = (
        model.document_windows(preprocessor)
        if getattr(model, "doc_stride", None) is not None
        else None
    )
    if windows is None:
        batches = packed_batches(
            pack_texts(texts, preprocessor), None, batch_size
        )
    else:
        cut = windows.flat_function()
        batches = window_batches(pack_windows(texts[0], cut), None, batch_size)
    outputs = model.predict(batches, verbose=0)
    return probabilities_of(outputs, model.label_mode.multi_label)


def probabilities_of(outputs, multi_label):
    """`predict`'s outputs as probabilities: a multi-label model's are
    already sigmoids; single-label logits get a float64 softmax."""
    if multi_label:
        return np.asarray(outputs, "float32")
    logits = np.asarray(outputs, "float64")
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (exp / exp.sum(axis=-1, keepdims=True)).astype("float32")


def predicted_names(model, probabilities):
    """Per example, the predicted label name (single-label: the most
    probable) or the list of names over threshold (multi-label)."""
    names = model.class_names()
    if model.label_mode.multi_label:
        return model.predicted_labels(probabilities)
    return [names[i] for i in np.argmax(probabilities, axis=-1)]


def write_predictions(
    model, preprocessor, predict_file, output_file, batch_size=64, texts=None
):
    """Predicts every text of `predict_file` and writes `output_file`.

    One JSON line per input text, in input order: the text (`text`, or
    `text_a` and `text_b`), the prediction (`label`; multi-label:
    `labels`, the names over threshold) and every label's probability.

    Args:
        model: the trained `keras_bert.BertClassifier`.
        preprocessor: the `keras_bert.BertPreprocessor` it was trained
            with.
        predict_file: str. `.txt` (one text per line), or a file in the
            training formats (labels optional, ignored).
        output_file: str. The JSONL to write (any `tf.io.gfile` path).
        batch_size: int. Texts per predict batch.
        texts: `read_texts(predict_file)`, if read already (a recipe reads
            it before training, so that a bad file stops the run early).

    Returns:
        The number of predictions written.

    Example:
    ```python
    result = keras_bert.fine_tuning.run_fine_tuning(job, "runs/topics")
    write_predictions(
        result.model, result.preprocessor, "new.txt", "new.predictions.jsonl"
    )
    ```
    """
    if texts is None:
        texts = read_texts(predict_file)
    pair = len(texts) == 2
    if model.pair is not None and pair != bool(model.pair):
        layouts = {True: "sentence pairs", False: "single texts"}
        raise ValueError(
            f"{predict_file} holds {layouts[pair]} but the model was "
            f"trained on {layouts[bool(model.pair)]}. Give it the same "
            "text fields as the training file."
        )
    probabilities = class_probabilities(model, preprocessor, texts, batch_size)
    predicted = predicted_names(model, probabilities)
    names = model.class_names()
    key = "labels" if model.label_mode.multi_label else "label"
    rows = []
    for i in range(len(texts[0])):
        if pair:
            row = {"text_a": texts[0][i], "text_b": texts[1][i]}
        else:
            row = {"text": texts[0][i]}
        row[key] = predicted[i]
        row["probabilities"] = {
            name: round(float(p), 6) for name, p in zip(names, probabilities[i])
        }
        rows.append(row)
    return write_jsonl(output_file, rows)


def load_finished_classifier(model_dir, build_model, results=None):
    """The best classifier of a finished run, ready to predict.

    `keras_bert.fine_tuning.predictions.load_finished_run`, and a
    multi-label model's tuned thresholds.

    Args:
        model_dir: str. A finished `recipes/classify.py` run (its
            `results.json` and `best.weights.h5`).
        build_model: callable `(results) -> (model, preprocessor)`:
            builds the classifier the run trained, from its results
            (`config`, `label_names`, `multi_label`).
        results: dict or `None`. The run's `results.json`, if read
            already.

    Returns:
        `(model, preprocessor, results)`, the model with the best
        epoch's weights (and a multi-label model's tuned thresholds).

    Example:
    ```python
    model, preprocessor, _ = load_finished_classifier("runs/topics", build)
    ```
    """
    model, preprocessor, results = load_finished_run(
        model_dir, build_model, results
    )
    if results.get("multi_label") and results.get("thresholds"):
        model.thresholds = [
            results["thresholds"][name] for name in results["label_names"]
        ]
    return model, preprocessor, results
