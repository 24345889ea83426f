"""`ClassificationFineTuning` with a model that reads documents in windows.

The files are those of test_job.py with each text repeated into a
document of up to 48 tokens: 16-token windows (14 tokens every 7) read it
in up to 6 windows.
"""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.classify import ClassificationFineTuning
from tests.fine_tuning.classify.test_job import DEV
from tests.fine_tuning.classify.test_job import TRAIN
from tests.fine_tuning.classify.test_job import VOCABULARY
from tests.fine_tuning.classify.test_job import write_jsonl
from tests.helpers import tiny_backbone_config


def documents(rows):
    """Each text repeated 1 to 12 times: documents of unlike lengths."""
    return [
        (" ".join([text] * (1 + 5 * i % 12)), labels)
        for i, (text, labels) in enumerate(rows)
    ]


def single_label(rows):
    return [
        (text, "PER" if "PER" in labels else "none") for text, labels in rows
    ]


def window_model_fn(**window_arguments):
    """A `model_fn` whose classifier reads windows; the preprocessor is
    also attached to the model so that tests can `predict` raw text."""

    def model_fn(job):
        keras.utils.set_random_seed(0)
        preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY), sequence_length=16
        )
        backbone = keras_bert.BertBackbone(
            **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
        )
        model = keras_bert.BertClassifier(
            backbone,
            num_classes=len(job.label_names),
            label_names=job.label_names,
            multi_label=job.multi_label,
            preprocessor=preprocessor,
            **window_arguments,
        )
        return model, preprocessor

    return model_fn


def window_job(tmp_path, multi_label=False, **window_arguments):
    train, dev = documents(TRAIN), documents(DEV)
    key = "labels" if multi_label else "label"
    if not multi_label:
        train, dev = single_label(train), single_label(dev)
    return ClassificationFineTuning(
        write_jsonl(tmp_path / "train.jsonl", train, key),
        write_jsonl(tmp_path / "dev.jsonl", dev, key),
        window_model_fn(doc_stride=7, **window_arguments),
        multi_label=multi_label,
        eval_batch_size=2,
    )


def test_training_batches_hold_documents_and_replay_on_resume(tmp_path):
    job = window_job(tmp_path)
    job.load_data()
    job.build_model()
    windows = job._packed()["train"]
    assert windows["document"].max() == len(TRAIN) - 1
    assert job.num_train_examples == len(TRAIN)  # documents, not windows
    run = list(job.train_dataset(3, seed=5, first_epoch=0, num_epochs=2))
    assert len(run) == 2 * math.ceil(len(TRAIN) / 3)
    seen = []
    for features, labels in run:
        assert features["token_ids"].shape[0] == labels.shape[0] <= 3
        assert features["token_ids"].shape[2] <= 16
        seen.append(features["token_ids"].shape[1])
    assert max(seen) > 1  # documents of several windows
    # A run resumed at epoch 1 sees the uninterrupted run's epoch 1.
    resumed = list(job.train_dataset(3, seed=5, first_epoch=1, num_epochs=2))
    assert len(resumed) == len(run) // 2
    for (features, labels), (again, again_labels) in zip(
        run[len(resumed) :], resumed
    ):
        np.testing.assert_array_equal(labels, again_labels)
        for name, value in features.items():
            np.testing.assert_array_equal(value, again[name])


def test_single_label_run_scores_documents_as_predict(tmp_path):
    job = window_job(tmp_path, aggregation="max")
    result = run_fine_tuning(
        job, str(tmp_path / "run"), epochs=1, batch_size=4,
        learning_rate=1e-3,
    )  # fmt: skip
    model = result.model
    assert result.results["num_train_examples"] == len(TRAIN)
    assert result.results["num_eval_examples"] == {"validation": len(DEV)}
    # Trained: the head moved from the weights it was built with.
    initial = window_model_fn(doc_stride=7)(job)[0]
    assert not np.allclose(
        model.output_dense.get_weights()[0],
        initial.output_dense.get_weights()[0],
    )
    texts = [text for text, _ in documents(DEV)]
    logits = model.predict(texts, verbose=0)
    np.testing.assert_allclose(
        job.probabilities(model, "validation"),
        tf.nn.softmax(logits).numpy(),
        rtol=0,
        atol=1e-6,
    )
    with open(result.results["predictions"]["validation"]) as file:
        rows = [json.loads(line) for line in file]
    assert [row["text"] for row in rows] == texts
    assert [row["predicted"] for row in rows] == [
        job.label_names[i] for i in logits.argmax(axis=-1)
    ]


@pytest.mark.slow  # ~15 s: trains, tunes and exports
def test_multi_label_run_exports_windows_answering_as_predict(tmp_path):
    job = window_job(tmp_path, multi_label=True, max_windows=4)
    run = run_fine_tuning(
        job, str(tmp_path / "run"), epochs=1, batch_size=4,
        learning_rate=1e-3, export_dir=str(tmp_path / "export"),
    )  # fmt: skip
    model, result = run.model, run.results
    assert list(result["thresholds"]) == ["LOC", "ORG", "PER"]
    assert model.thresholds == list(result["thresholds"].values())
    texts = [text for text, _ in documents(DEV)]
    expected = model.predict(texts, verbose=0)  # per document
    np.testing.assert_allclose(
        job.probabilities(model, "validation"), expected, rtol=0, atol=1e-6
    )
    saved = tf.saved_model.load(result["export_dir"])
    outputs = saved.signatures["serving_default"](text=tf.constant(texts))
    served = outputs["probabilities"].numpy()
    np.testing.assert_allclose(served, expected, rtol=0, atol=1e-6)
    assert [
        [name.decode() for name in row if name]
        for row in outputs["labels"].numpy()
    ] == model.predicted_labels(served)
    with open(result["predictions"]["validation"]) as file:
        rows = [json.loads(line) for line in file]
    assert [row["labels"] for row in rows] == [labels for _, labels in DEV]
    # The ids endpoint takes the windows, one row of them per document.
    spec = saved.signatures["predict_ids"].structured_input_signature[1]
    assert spec["token_ids"].shape.rank == 3


@pytest.mark.parametrize(
    "rows, message",
    [
        ([("", "PER"), ("john", "none")], r"train.jsonl`: the documents at "
         r"indices \[0\] are empty"),
        ("pairs", r"sentence pairs .*doc_stride=7.*single texts only"),
    ],
)  # fmt: skip
def test_what_windows_cannot_read_is_refused_before_training(
    tmp_path, rows, message
):
    path = tmp_path / "train.jsonl"
    if rows == "pairs":
        path.write_text(
            "".join(
                json.dumps({"text_a": a, "text_b": b, "label": label}) + "\n"
                for a, b, label in [("john", "rome", "PER"), ("a", "day", "x")]
            )
        )
    else:
        write_jsonl(path, rows, "label")
    job = ClassificationFineTuning(
        str(path), str(path), window_model_fn(doc_stride=7)
    )
    job.load_data()
    with pytest.raises(ValueError, match=message):
        job.build_model()
