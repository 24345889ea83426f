"""`ClassificationFineTuning` + `run_fine_tuning` on tiny files, tiny model."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.classify import ClassificationFineTuning
from tests.helpers import tiny_backbone_config

TRAIN = [
    ("john went to paris", ["PER", "LOC"]),
    ("acme hired mary", ["ORG", "PER"]),
    ("a quiet day", []),
    ("rome and paris", ["LOC"]),
    ("mary met john in rome", ["PER", "LOC"]),
    ("acme and fifa", ["ORG"]),
    ("nothing happened today", []),
    ("fifa in rome", ["ORG", "LOC"]),
]
DEV = [
    ("mary went to rome", ["PER", "LOC"]),
    ("fifa hired john", ["ORG", "PER"]),
    ("a day", []),
]
WORDS = sorted({w for text, _ in TRAIN + DEV for w in text.split()})
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


def write_jsonl(path, rows, key="labels"):
    with open(path, "w") as file:
        for text, labels in rows:
            file.write(json.dumps({"text": text, key: labels}) + "\n")
    return str(path)


def model_fn(job):
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY))
    )
    model = keras_bert.BertClassifier(
        backbone,
        num_classes=len(job.label_names),
        label_names=job.label_names,
        multi_label=job.multi_label,
    )
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    return model, keras_bert.BertPreprocessor(tokenizer, sequence_length=16)


@pytest.mark.slow
def test_multi_label_run_tunes_thresholds_and_exports_them(tmp_path):
    job = ClassificationFineTuning(
        write_jsonl(tmp_path / "train.jsonl", TRAIN),
        write_jsonl(tmp_path / "dev.jsonl", DEV),
        model_fn,
        multi_label=True,
        eval_batch_size=2,
    )
    result = run_fine_tuning(
        job, str(tmp_path / "run"), epochs=1, batch_size=4,
        learning_rate=1e-3, export_dir=str(tmp_path / "export"),
    ).results  # fmt: skip
    assert result["monitor"] == "validation/micro_f1"
    assert result["label_names"] == ["LOC", "ORG", "PER"]
    assert set(result["metrics"]["validation"]) == {
        "micro_f1", "macro_f1", "subset_accuracy"
    }  # fmt: skip
    thresholds = list(result["thresholds"].values())
    assert set(result["tuned_metrics"]["validation"]) == set(
        result["metrics"]["validation"]
    )
    # The tuned scores are at least those at 0.5: 0.5 is on the grid.
    assert (
        result["tuned_metrics"]["validation"]["macro_f1"]
        >= result["metrics"]["validation"]["macro_f1"]
    )
    with open(result["predictions"]["validation"]) as file:
        rows = [json.loads(line) for line in file]
    assert [row["labels"] for row in rows] == [labels for _, labels in DEV]
    assert set(rows[0]["probabilities"]) == {"LOC", "ORG", "PER"}
    # The export decides with the tuned thresholds, as the file says.
    serve = tf.saved_model.load(result["export_dir"]).signatures[
        "serving_default"
    ]
    outputs = serve(text=tf.constant([text for text, _ in DEV]))
    probabilities = outputs["probabilities"].numpy()
    for row, served, names in zip(rows, probabilities, outputs["labels"]):
        expected = [
            name
            for name, p, t in zip(["LOC", "ORG", "PER"], served, thresholds)
            if p > t
        ]
        assert [n.decode() for n in names.numpy() if n] == expected
        np.testing.assert_allclose(
            served, list(row["probabilities"].values()), atol=2e-6
        )


@pytest.mark.slow
def test_single_label_tsv_run_scores_accuracy(tmp_path):
    def tsv(path, rows):
        lines = ["text\tlabel"] + [
            f"{text}\t{'people' if 'PER' in labels else 'other'}"
            for text, labels in rows
        ]
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    job = ClassificationFineTuning(
        tsv(tmp_path / "train.tsv", TRAIN), tsv(tmp_path / "dev.tsv", DEV),
        model_fn,
    )  # fmt: skip
    result = run_fine_tuning(
        job, str(tmp_path / "run"), epochs=1, batch_size=4
    ).results
    assert result["monitor"] == "validation/accuracy"
    assert result["label_names"] == ["other", "people"]
    assert 0 <= result["metrics"]["validation"]["accuracy"] <= 1
    assert "thresholds" not in result
    with open(result["predictions"]["validation"]) as file:
        row = json.loads(file.readline())
    assert row["label"] == "people" and row["predicted"] in ("other", "people")


@pytest.mark.parametrize(
    "dev, multi_label, message",
    [
        ([("a day", ["MISC"])], True, r"never has: \['MISC'\]"),
        ([("a day", ["PER"])], False, "no `label` field.*--multi_label"),
    ],
)
def test_eval_labels_the_train_file_lacks_are_refused(
    tmp_path, dev, multi_label, message
):
    job = ClassificationFineTuning(
        write_jsonl(tmp_path / "train.jsonl", TRAIN),
        write_jsonl(tmp_path / "dev.jsonl", dev, "label" if not multi_label
                    else "labels"),
        model_fn,
        multi_label=multi_label,
    )  # fmt: skip
    with pytest.raises(ValueError, match=message):
        job.load_data()


def test_a_single_label_file_of_one_label_is_refused(tmp_path):
    rows = [(text, "news") for text, _ in TRAIN]
    path = write_jsonl(tmp_path / "train.jsonl", rows, "label")
    job = ClassificationFineTuning(path, path, model_fn)
    with pytest.raises(ValueError, match=r"one label only \(\['news'\]\)"):
        job.load_data()


def test_pairs_need_pairs_in_both_files(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"text_a": "a", "text_b": "day", "labels": []}) + "\n"
    )
    job = ClassificationFineTuning(
        write_jsonl(tmp_path / "train.jsonl", TRAIN), str(pairs), model_fn,
        multi_label=True,
    )  # fmt: skip
    with pytest.raises(ValueError, match="sentence pairs.*single texts"):
        job.load_data()
