"""`recipes/ner.py` end to end on hand-written CoNLL files, `bert_tiny`.

The recipe runs in a subprocess (its absl flags would clash with the other
recipes' in this process); its export is then loaded here and tags raw
text as the recipe's own predictions file does.
"""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_bert.fine_tuning.ner import get_entities

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

TRAIN = [
    [("John", "I-PER"), ("Smith", "I-PER"), ("lives", "O"), ("in", "O"),
     ("Paris", "I-LOC"), (".", "O")],
    [("Mary", "I-PER"), ("works", "O"), ("at", "O"), ("Acme", "I-ORG"),
     (".", "O")],
    [("Rome", "I-LOC"), ("Berlin", "B-LOC"), ("and", "O"),
     ("Paris", "I-LOC"), ("are", "O"), ("cities", "O"), (".", "O")],
    [("Acme", "I-ORG"), ("hired", "O"), ("Mary", "I-PER"), ("in", "O"),
     ("Berlin", "I-LOC")],
    [("John", "I-PER"), ("met", "O"), ("Mary", "B-PER"), (".", "O")],
]  # fmt: skip
VALID = [
    [("Mary", "I-PER"), ("lives", "O"), ("in", "O"), ("Rome", "I-LOC"),
     (".", "O")],
    # Longer than one window of 16 positions.
    [(word, "I-LOC" if word in ("Paris", "Rome") else "O")
     for word in ("John and Mary met in Paris and Rome and the cities are "
                  "Paris and Rome , John Smith works at Acme .").split()],
    [("Acme", "I-ORG"), ("hired", "O"), ("John", "I-PER"),
     ("Smith", "I-PER")],
]  # fmt: skip


def conll_text(sentences):
    lines = ["-DOCSTART- -X- -X- O", ""]
    for sentence in sentences:
        lines += [f"{word} NNP I-NP {tag}" for word, tag in sentence]
        lines.append("")
    return "\n".join(lines) + "\n"


def write_inputs(tmp_path, train_text=None):
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    train.write_text(train_text or conll_text(TRAIN), encoding="utf-8")
    valid.write_text(conll_text(VALID), encoding="utf-8")
    words = {w.lower() for s in TRAIN + VALID for w, _ in s}
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        + "\n"
        + "\n".join(sorted(words))
        + "\n",
        encoding="utf-8",
    )
    return train, valid, vocabulary


def run_recipe(tmp_path, train, valid, vocabulary, *extra):
    flags = [
        f"--train_file={train}",
        f"--validation_file={valid}",
        "--preset=bert_tiny",
        f"--vocabulary={vocabulary}",
        f"--model_dir={tmp_path / 'run'}",
        "--epochs=1",
        "--sequence_length=16",
        "--batch_size=4",
        "--learning_rate=1e-3",
        *extra,
    ]
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "recipes", "ner.py"), *flags],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_ner_recipe_trains_scores_and_exports(tmp_path):
    train, valid, vocabulary = write_inputs(tmp_path)
    export_dir = tmp_path / "export"
    result = run_recipe(
        tmp_path, train, valid, vocabulary, f"--export_dir={export_dir}"
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "NER validation (best epoch 1)" in result.stdout

    with open(tmp_path / "run" / "results.json") as file:
        results = json.load(file)
    assert results["task"] == "ner"
    assert results["labels"] == [
        "O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER",
    ]  # fmt: skip
    assert results["config"]["sequence_length"] == 16
    assert results["config"]["preset"] == "bert_tiny"
    assert results["num_windows"]["validation"] > len(VALID)
    assert set(results["metrics"]["validation"]) >= {
        "precision", "recall", "f1", "accuracy", "PER_f1", "LOC_f1",
    }  # fmt: skip
    assert results["export_dir"] == str(export_dir / "1")

    # The recipe's predictions, word by word.
    with open(results["predictions"]["validation"], encoding="utf-8") as f:
        blocks = f.read().strip("\n").split("\n\n")
    predicted = [[line.split(" ")[2] for line in b.split("\n")] for b in blocks]
    assert [len(tags) for tags in predicted] == [len(s) for s in VALID]
    # Trained enough to tag some entities (seeded: 5 at the time of
    # writing), so the comparison below is not between empty lists.
    assert sum(len(get_entities(tags)) for tags in predicted) >= 1

    # The export tags raw text: the entities of those predictions.
    serve = tf.saved_model.load(results["export_dir"]).signatures[
        "serving_default"
    ]
    texts = [" ".join(word for word, _ in sentence) for sentence in VALID]
    outputs = serve(text=tf.constant(texts))
    for index, (sentence, tags) in enumerate(zip(VALID, predicted)):
        words = [word for word, _ in sentence]
        expected = [
            (" ".join(words[first : last + 1]), entity_type)
            for entity_type, first, last in get_entities(tags)
        ]
        count = int(outputs["num_entities"][index])
        served = [
            (
                outputs["entity"][index, j].numpy().decode("utf-8"),
                outputs["entity_type"][index, j].numpy().decode("utf-8"),
            )
            for j in range(count)
        ]
        assert served == expected, index
        for j in range(count):
            start = int(outputs["start"][index, j])
            end = int(outputs["end"][index, j])
            assert texts[index][start:end] == served[j][0]


@pytest.mark.slow
def test_a_bad_line_fails_naming_file_and_line_before_training(tmp_path):
    lines = conll_text(TRAIN).split("\n")
    lines[5] = "Paris NNP I-LOC"  # three columns among four
    train, valid, vocabulary = write_inputs(tmp_path, "\n".join(lines))
    result = run_recipe(tmp_path, train, valid, vocabulary)
    assert result.returncode != 0
    assert f"{train}, line 6" in result.stderr, result.stderr[-3000:]
    assert "3 columns" in result.stderr
    # Nothing trained: no epoch ran, nothing was written.
    assert "Epoch" not in result.stdout
    assert not os.path.exists(tmp_path / "run" / "eval_history.json")
    assert not os.path.exists(tmp_path / "run" / "results.json")


@pytest.mark.slow
def test_features_flag_trains_a_frozen_features_tagger(tmp_path):
    train, valid, vocabulary = write_inputs(tmp_path)
    result = run_recipe(
        tmp_path, train, valid, vocabulary, "--features=weighted_sum_all"
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "NER validation (best epoch 1)" in result.stdout
    with open(tmp_path / "run" / "results.json") as file:
        results = json.load(file)
    assert results["config"]["features"] == "weighted_sum_all"
    # bert_tiny (2 blocks, hidden 128): 3 layer weights and a scale, two
    # BiLSTMs of 64 units per direction, the 7-way output layer; not one
    # backbone weight.
    lstm = 2 * 4 * 64 * (128 + 64 + 1)
    assert results["trainable_parameters"] == 3 + 1 + 2 * lstm + 128 * 7 + 7
    # --learning_rate=1e-3 was given; unset, the tagger's 1e-3 is logged.
    assert results["config"]["learning_rate"] == 1e-3
    assert set(results["metrics"]["validation"]) >= {"precision", "f1"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "flag, message",
    [
        # absl names the choices.
        (
            "--features=last_four",
            "value should be one of <embeddings|second_to_last|last|"
            "sum_last_four|concat_last_four|weighted_sum_all>",
        ),
        ("--export_dir=/tmp/never", "has no serving export yet"),
        ("--lstm_units=0", "--lstm_units must be positive"),
    ],
)
def test_bad_features_flags_fail_before_training(tmp_path, flag, message):
    train, valid, vocabulary = write_inputs(tmp_path)
    extra = (
        [flag] if flag.startswith("--features") else ["--features=last", flag]
    )
    result = run_recipe(tmp_path, train, valid, vocabulary, *extra)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-3000:]
    assert not os.path.exists(tmp_path / "run" / "eval_history.json")


def run_predictions(tmp_path, *flags):
    """`recipes/ner.py` without --train_file: the finished run predicts."""
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "recipes", "ner.py"),
         f"--model_dir={tmp_path / 'run'}", *flags],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip


def read_rows(path):
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def scores(rows):
    return [e["score"] for row in rows for e in row["entities"]]


def without_scores(rows):
    return [
        {
            **row,
            "entities": [
                {k: v for k, v in e.items() if k != "score"}
                for e in row["entities"]
            ],
        }
        for row in rows
    ]


@pytest.mark.slow
def test_predict_file_after_training_and_from_the_finished_run(tmp_path):
    train, valid, vocabulary = write_inputs(tmp_path)
    texts = tmp_path / "new.txt"
    texts.write_text("John Smith lives in Paris.\n\nMary works at Acme .\n")
    result = run_recipe(
        tmp_path, train, valid, vocabulary, f"--predict_file={texts}"
    )
    assert result.returncode == 0, result.stderr[-4000:]
    after_training = tmp_path / "run" / "predictions_new.jsonl"
    assert f"NER: wrote 2 predictions to {after_training}" in result.stdout
    rows = read_rows(after_training)
    assert [row["text"] for row in rows] == [
        "John Smith lives in Paris.",
        "Mary works at Acme .",
    ]
    assert rows[0]["words"] == ["John", "Smith", "lives", "in", "Paris", "."]
    # Seeded: 3 entities at the time of writing, so that the comparisons
    # below are not between empty lists.
    assert sum(len(row["entities"]) for row in rows) >= 1
    for row in rows:
        assert len(row["tags"]) == len(row["words"])
        for entity in row["entities"]:
            text = row["text"][entity["start"] : entity["end"]]
            assert text == entity["entity"]

    # Later, without --train_file: the best epoch of the run, reloaded,
    # tags the text as the trained model did ...
    again = tmp_path / "again.jsonl"
    result = run_predictions(
        tmp_path, f"--predict_file={texts}", f"--predictions_file={again}"
    )
    assert result.returncode == 0, result.stderr[-4000:]
    reloaded = read_rows(again)
    assert without_scores(reloaded) == without_scores(rows)
    assert scores(reloaded) == pytest.approx(scores(rows), abs=2e-6)
    # ... and CoNLL words as the run's own validation predictions.
    result = run_predictions(tmp_path, f"--predict_file={valid}")
    assert result.returncode == 0, result.stderr[-4000:]
    words = read_rows(tmp_path / "run" / "predictions_valid.jsonl")
    with open(tmp_path / "run" / "predictions_validation.txt") as file:
        blocks = file.read().strip("\n").split("\n\n")
    assert [row["words"] for row in words] == [
        [word for word, _ in sentence] for sentence in VALID
    ]
    assert [row["tags"] for row in words] == [
        [line.split(" ")[2] for line in block.split("\n")] for block in blocks
    ]
    for row in words:
        assert [
            (e["type"], e["start"], e["end"] - 1) for e in row["entities"]
        ] == get_entities(row["tags"])
