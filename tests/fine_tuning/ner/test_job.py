"""`NerFineTuning` + `run_fine_tuning` on a tiny CoNLL corpus, tiny model.

The files are CoNLL-2003-like: four columns, `-DOCSTART-` lines, IOB1
tags. The validation file has a tag the training file lacks (`MISC`) and a
sentence longer than one window of 16 positions.
"""

import json
import logging
import os
from unittest import mock

import keras
import pytest

import keras_bert
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.ner import NerFineTuning
from keras_bert.fine_tuning.ner import entity_scores
from keras_bert.fine_tuning.ner import read_conll
from keras_bert.training.ner_features import ner_features
from tests.helpers import tiny_backbone_config

# (word, tag) per sentence, IOB1: an entity starts with I- unless it
# directly follows one of its type.
TRAIN_DOCUMENTS = [
    [
        [("John", "I-PER"), ("Smith", "I-PER"), ("lives", "O"),
         ("in", "O"), ("Paris", "I-LOC"), (".", "O")],
        [("Mary", "I-PER"), ("works", "O"), ("at", "O"),
         ("Acme", "I-ORG"), ("Corp", "I-ORG"), (".", "O")],
        [("Paris", "I-LOC"), ("Berlin", "B-LOC"), ("and", "O"),
         ("Rome", "I-LOC"), ("are", "O"), ("cities", "O"), (".", "O")],
        [("The", "O"), ("Yorkers", "I-ORG"), ("play", "O"), ("in", "O"),
         ("Berlin", "I-LOC")],
        [("John", "I-PER"), ("met", "O"), ("Mary", "B-PER"), (".", "O")],
    ],
    [
        [("Acme", "I-ORG"), ("hired", "O"), ("John", "I-PER"),
         ("Smith", "I-PER"), ("in", "O"), ("Rome", "I-LOC"), (".", "O")],
        [("Mary", "I-PER"), ("lives", "O"), ("in", "O"), ("Berlin", "I-LOC")],
        [("The", "O"), ("cities", "O"), ("are", "O"), ("big", "O"),
         (".", "O")],
        [("Smith", "I-PER"), ("works", "O"), ("at", "O"),
         ("Yorkers", "I-ORG"), ("Corp", "I-ORG")],
        [("Rome", "I-LOC"), ("and", "O"), ("Paris", "I-LOC"), ("and", "O"),
         ("Berlin", "I-LOC")],
        [("John", "I-PER"), ("and", "O"), ("Mary", "I-PER"), ("play", "O"),
         ("in", "O"), ("Rome", "I-LOC"), (".", "O")],
    ],
]  # fmt: skip
LONG_SENTENCE = [
    (word, "I-LOC" if word in ("Paris", "Rome", "Berlin") else "O")
    for word in (
        "The Yorkers play in Paris and John met Mary in Rome and the big "
        "cities are Berlin and Paris and Rome , John Smith works at Acme ."
    ).split()
]
VALID_DOCUMENTS = [
    [
        [("John", "I-PER"), ("lives", "O"), ("in", "O"), ("Rome", "I-LOC"),
         (".", "O")],
        # MISC: a tag the training file lacks.
        [("Mary", "I-PER"), ("likes", "O"), ("Euro", "I-MISC"),
         ("Cup", "I-MISC"), (".", "O")],
        [("Acme", "I-ORG"), ("Corp", "I-ORG"), ("is", "O"), ("in", "O"),
         ("Paris", "I-LOC")],
    ],
    [
        LONG_SENTENCE,
        [("Smith", "I-PER"), ("and", "O"), ("Yorkers", "I-ORG"),
         ("Berlin", "I-LOC"), ("Rome", "B-LOC")],
    ],
]  # fmt: skip
# A test file: no tag the training file lacks.
TEST_DOCUMENTS = [
    [
        [("Mary", "I-PER"), ("lives", "O"), ("in", "O"), ("Paris", "I-LOC")],
        [("Acme", "I-ORG"), ("hired", "O"), ("Smith", "I-PER"), (".", "O")],
    ],
]  # fmt: skip
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# "Yorkers" is two WordPieces; "likes" and "is" are [UNK].
VOCABULARY = SPECIAL + sorted(
    {
        word.lower()
        for documents in (TRAIN_DOCUMENTS, VALID_DOCUMENTS)
        for document in documents
        for sentence in document
        for word, _ in sentence
        if word not in ("Yorkers", "likes", "is")
    }
    | {"york", "##ers"}
)
SEQUENCE_LENGTH = 16
TRAINING = {"batch_size": 4, "learning_rate": 5e-3, "seed": 3}


def conll_text(documents):
    lines = []
    for document in documents:
        lines += ["-DOCSTART- -X- -X- O", ""]
        for sentence in document:
            lines += [f"{word} NNP I-NP {tag}" for word, tag in sentence]
            lines.append("")
    return "\n".join(lines) + "\n"


@pytest.fixture
def files(tmp_path):
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    train.write_text(conll_text(TRAIN_DOCUMENTS), encoding="utf-8")
    valid.write_text(conll_text(VALID_DOCUMENTS), encoding="utf-8")
    return str(train), str(valid)


def tokenizer():
    return keras_bert.BertTokenizer(VOCABULARY)


def model_fn(labels):
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=tokenizer().vocabulary_size(),
            max_sequence_length=SEQUENCE_LENGTH,
        )
    )
    return keras_bert.BertTokenClassifier(backbone, len(labels), labels=labels)


def ner_task(files, **options):
    train, valid = files
    return NerFineTuning(
        model_fn,
        tokenizer(),
        train,
        valid,
        sequence_length=SEQUENCE_LENGTH,
        **options,
    )


def read_predictions(path):
    """`[[(token, gold, predicted), ...], ...]`; checks the layout."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    assert text.endswith("\n\n")  # a blank line after every sentence
    sentences = []
    for block in text[:-2].split("\n\n"):
        lines = block.split("\n")
        assert all(len(line.split(" ")) == 3 for line in lines), block
        sentences.append([tuple(line.split(" ")) for line in lines])
    return sentences


def valid_sentences():
    return [sentence for document in VALID_DOCUMENTS for sentence in document]


@pytest.mark.slow
def test_trains_scores_and_writes_conll_predictions(files, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    test_file = tmp_path / "test.txt"
    test_file.write_text(conll_text(TEST_DOCUMENTS), encoding="utf-8")
    task = ner_task(files, test_file=str(test_file))
    model_dir = tmp_path / "run"
    result = run_fine_tuning(task, str(model_dir), epochs=2, **TRAINING)

    # The unknown tag is warned about, naming the file.
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    ]
    assert any("MISC" in w and files[1] in w for w in warnings), warnings

    with open(model_dir / "results.json") as file:
        results = json.load(file)
    assert results == result.results
    assert results["task"] == "ner"
    assert results["monitor"] == "validation/f1"
    assert [e["epoch"] for e in results["epochs"]] == [1, 2]
    assert results["resumed_from_epoch"] is None
    # Labels from the training file only: no MISC.
    assert results["labels"] == [
        "O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER",
    ]  # fmt: skip
    assert results["num_sentences"] == {
        "train": 11, "validation": 5, "test": 2,
    }  # fmt: skip
    assert results["files"]["test"] == str(test_file)
    # The long sentence (29 tokens) spans several windows.
    assert results["num_windows"]["validation"] > 5
    assert results["num_windows"]["train"] == 11
    assert results["num_train_examples"] == 11
    validation = results["metrics"]["validation"]
    for name in ("precision", "recall", "f1", "accuracy"):
        assert 0 <= validation[name] <= 1, name
    for entity_type in ("PER", "LOC", "ORG", "MISC"):
        for name in ("precision", "recall", "f1"):
            assert f"{entity_type}_{name}" in validation
    assert validation["MISC_recall"] == 0.0
    per_type = results["per_type"]["validation"]
    assert per_type["MISC"]["support"] == 1
    assert per_type["MISC"]["num_correct"] == 0
    path = results["predictions"]["validation"]
    assert path == str(model_dir / "predictions_validation.txt")

    # The file: `token gold predicted`, every word once, gold in IOB2.
    written = read_predictions(path)
    assert len(written) == 5
    for sentence, lines in zip(valid_sentences(), written):
        assert [line[0] for line in lines] == [word for word, _ in sentence]
    assert [line[1] for line in written[1]] == [
        "B-PER", "O", "B-MISC", "I-MISC", "O",
    ]  # fmt: skip
    assert [line[1] for line in written[4]] == [
        "B-PER", "O", "B-ORG", "B-LOC", "B-LOC",
    ]  # fmt: skip
    assert len(written[3]) == len(LONG_SENTENCE)  # > one window
    for lines in written:
        for _, _, predicted in lines:
            assert predicted in results["labels"]

    # The scores are the file's, the MISC entity counted as missed.
    gold = [[line[1] for line in lines] for lines in written]
    predicted = [[line[2] for line in lines] for lines in written]
    scores = entity_scores(gold, predicted)
    assert scores["num_gold"] == 15
    assert scores["per_type"]["MISC"]["support"] == 1
    for name in ("precision", "recall", "f1", "accuracy"):
        assert scores[name] == pytest.approx(validation[name]), name
    assert scores["per_type"] == per_type
    # read_conll reads the file back the same way.
    assert read_conll(path, tag_column=1)["tags"] == gold

    # The test file is scored every epoch and written like the validation
    # file.
    assert results["num_windows"]["test"] == 2
    for epoch in results["epochs"]:
        assert set(epoch["metrics"]) == {"validation", "test"}
    test_metrics = results["metrics"]["test"]
    assert set(test_metrics) == {
        "precision", "recall", "f1", "accuracy",
        "LOC_precision", "LOC_recall", "LOC_f1", "ORG_precision",
        "ORG_recall", "ORG_f1", "PER_precision", "PER_recall", "PER_f1",
    }  # fmt: skip
    test_path = results["predictions"]["test"]
    assert test_path == str(model_dir / "predictions_test.txt")
    test_written = read_predictions(test_path)
    test_sentences = [s for document in TEST_DOCUMENTS for s in document]
    assert [[line[0] for line in lines] for lines in test_written] == [
        [word for word, _ in sentence] for sentence in test_sentences
    ]
    test_gold = [[line[1] for line in lines] for lines in test_written]
    assert test_gold == [
        ["B-PER", "O", "O", "B-LOC"], ["B-ORG", "O", "B-PER", "O"],
    ]  # fmt: skip
    test_scores = entity_scores(
        test_gold, [[line[2] for line in lines] for lines in test_written]
    )
    for name in ("precision", "recall", "f1", "accuracy"):
        assert test_scores[name] == pytest.approx(test_metrics[name]), name
    assert test_scores["per_type"] == results["per_type"]["test"]

    # The best model predicts the same tags again.
    assert (
        task.predict_tags(
            result.model, [[w for w, _ in s] for s in valid_sentences()]
        )
        == predicted
    )


# With it the validation file's two documents make 6 windows, its five
# sentences 8: a test can tell which were windowed.
DOCUMENT_STRIDE = 7


def num_windows(sequences, stride):
    """Windows of `sequences` (lists of words), computed without the task."""
    features = ner_features(
        tokenizer(), sequences, sequence_length=SEQUENCE_LENGTH, stride=stride
    )
    return len(features["token_ids"])


def joined_documents(documents):
    """Each document's words as one sequence."""
    return [
        [word for sentence in document for word, _ in sentence]
        for document in documents
    ]


@pytest.mark.parametrize("split", ["validation", "test"])
def test_an_empty_eval_file_is_refused_before_training(files, tmp_path, split):
    train, valid = files
    empty = tmp_path / "empty.txt"
    # What read_conll accepts and reads as no sentence.
    empty.write_text("-DOCSTART- -X- -X- O\n\n \n\t\n", encoding="utf-8")
    assert read_conll(str(empty))["words"] == []

    def no_model(labels):
        raise AssertionError("a model was built")

    paths = {"validation": valid, "test": None, split: str(empty)}
    task = NerFineTuning(
        no_model,
        tokenizer(),
        train,
        paths["validation"],
        test_file=paths["test"],
        sequence_length=SEQUENCE_LENGTH,
    )
    model_dir = tmp_path / "run"
    with pytest.raises(ValueError) as error:
        run_fine_tuning(task, str(model_dir), epochs=1, **TRAINING)
    message = str(error.value)
    assert str(empty) in message
    assert "holds no sentence to score" in message
    assert f"--{split}_file" in message
    assert not os.path.exists(model_dir / "results.json")


def test_an_empty_training_file_is_refused(files, tmp_path):
    _, valid = files
    empty = tmp_path / "empty.txt"
    empty.write_text("\n-DOCSTART- -X- -X- O\n\n", encoding="utf-8")
    task = NerFineTuning(model_fn, tokenizer(), str(empty), valid)
    with pytest.raises(ValueError, match="holds no sentence to train on"):
        task.load_data()


def test_document_context_joins_documents_and_splits_them_back(files):
    task = ner_task(files, document_context=True, stride=DOCUMENT_STRIDE)
    task.load_data()
    data = task.data["validation"]
    sequences, lengths, sentence_lengths = task._sequences(data)
    assert sequences == joined_documents(VALID_DOCUMENTS)
    assert lengths == [15, len(LONG_SENTENCE) + 5]
    assert sentence_lengths == [5, 5, 5, len(LONG_SENTENCE), 5]
    labels, _, _ = task._sequences(data, key="label_ids")
    ids = data["label_ids"]
    assert labels == [ids[0] + ids[1] + ids[2], ids[3] + ids[4]]
    # Windows of whole documents, not of sentences: fewer here.
    by_document = num_windows(
        joined_documents(VALID_DOCUMENTS), stride=DOCUMENT_STRIDE
    )
    by_sentence = num_windows(data["words"], stride=DOCUMENT_STRIDE)
    assert by_document != by_sentence
    assert len(task._windows("validation")["token_ids"]) == by_document
    # Each document's tags go back to its sentences, in order.
    with (
        mock.patch.object(task, "_windows"),
        mock.patch.object(
            task,
            "_tags",
            side_effect=lambda model, features, lengths: (
                [[f"tag-{i}" for i in range(length)] for length in lengths],
                [[1.0] * length for length in lengths],  # the scores
            ),
        ),
    ):
        predicted = task._predict(None, "validation")
    assert [len(tags) for tags in predicted] == sentence_lengths
    assert predicted[1] == [f"tag-{i}" for i in range(5, 10)]
    assert predicted[4] == [
        f"tag-{i}" for i in range(len(LONG_SENTENCE), len(LONG_SENTENCE) + 5)
    ]

    # Without document context, sentences are the sequences.
    task = ner_task(files)
    task.load_data()
    sequences, lengths, pieces = task._sequences(task.data["validation"])
    assert sequences == task.data["validation"]["words"]
    assert pieces is None


def test_label_all_tokens_labels_later_pieces_of_b_words_with_i(files):
    # "Yorkers" is `york ##ers`: its second piece gets the continuation.
    task = ner_task(files, label_all_tokens=True)
    task.labels = ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC"]
    words = [["The", "Yorkers", "Paris", "Yorkers", "Yorkers"]]
    # B-ORG, I-ORG, and B-MISC, which has no I- label: kept.
    label_ids = [[0, 3, 1, 4, 5]]
    features = task._make_features(words, label_ids)
    ignored = -100
    assert features["labels"][0].tolist()[:10] == [
        ignored, 0, 3, 4, 1, 4, 4, 5, 5, ignored,
    ]  # fmt: skip
    # Without label_all_tokens only first pieces are labelled.
    task = ner_task(files)
    task.labels = ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC"]
    features = task._make_features(words, label_ids)
    assert features["labels"][0].tolist()[:10] == [
        ignored, 0, 3, ignored, 1, 4, ignored, 5, ignored, ignored,
    ]  # fmt: skip


@pytest.mark.slow
def test_document_context_predicts_every_word(files, tmp_path):
    task = ner_task(files, document_context=True, stride=DOCUMENT_STRIDE)
    run_fine_tuning(task, str(tmp_path / "run"), epochs=1, **TRAINING)
    with open(tmp_path / "run" / "results.json") as file:
        results = json.load(file)
    # Two documents, each windowed as a whole: not as sentences.
    by_document = num_windows(
        joined_documents(VALID_DOCUMENTS), stride=DOCUMENT_STRIDE
    )
    by_sentence = num_windows(
        [[word for word, _ in s] for s in valid_sentences()],
        stride=DOCUMENT_STRIDE,
    )
    assert by_document != by_sentence
    assert results["num_windows"]["validation"] == by_document
    assert results["num_windows"]["train"] == num_windows(
        joined_documents(TRAIN_DOCUMENTS), stride=DOCUMENT_STRIDE
    )
    written = read_predictions(results["predictions"]["validation"])
    assert [len(lines) for lines in written] == [
        len(sentence) for sentence in valid_sentences()
    ]
    for sentence, lines in zip(valid_sentences(), written):
        assert [line[0] for line in lines] == [word for word, _ in sentence]


@pytest.mark.slow
def test_a_rerun_resumes_after_a_crash(files, tmp_path):
    original = keras.callbacks.BackupAndRestore.on_epoch_end

    def crash_after_epoch_one(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 0:
            raise RuntimeError("simulated crash")

    model_dir = str(tmp_path / "run")
    with mock.patch.object(
        keras.callbacks.BackupAndRestore, "on_epoch_end", crash_after_epoch_one
    ):
        with pytest.raises(RuntimeError, match="simulated crash"):
            run_fine_tuning(ner_task(files), model_dir, epochs=2, **TRAINING)
    assert not os.path.exists(os.path.join(model_dir, "results.json"))

    # Started again in the same model_dir, nothing deleted.
    result = run_fine_tuning(ner_task(files), model_dir, epochs=2, **TRAINING)
    assert result.results["resumed_from_epoch"] == 1
    assert [e["epoch"] for e in result.results["epochs"]] == [1, 2]
    assert "backup" not in os.listdir(model_dir)
    assert os.path.exists(os.path.join(model_dir, "predictions_validation.txt"))
