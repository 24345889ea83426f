"""`SquadFineTuning` + `run_fine_tuning` on hand-written files, tiny model.

The predict file repeats a question id, as some hand-made files do: the
run must finish, write one answer per id and score it as the official
scripts score `predictions.json`.
"""

import json
import logging

import pytest

import keras_bert
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.squad import SquadFineTuning
from keras_bert.fine_tuning.squad import squad_v1_metrics
from keras_bert.fine_tuning.squad import squad_v2_metrics
from tests.fine_tuning.squad.squad_references import examples_from_data
from tests.helpers import tiny_backbone_config

FOX = "The quick brown fox jumped over the lazy dog in Paris on Monday."
LYON = "Lyon is a city in France. The river Rhône runs through Lyon."
# (context, [(id, question, answer or None if unanswerable)]).
TRAIN = [
    (FOX, [("t1", "Who jumped?", "The quick brown fox"),
           ("t2", "Where did the fox jump?", "Paris")]),
    (LYON, [("t3", "Which river runs through Lyon?", "Rhône"),
            ("t4", "Where is Lyon?", "France")]),
]  # fmt: skip
# "q1" names two questions of different paragraphs.
PREDICT = [
    (FOX, [("q1", "When did the fox jump?", "Monday"),
           ("q2", "Who jumped?", "The quick brown fox")]),
    (LYON, [("q1", "Which river runs through Lyon?", "Rhône"),
            ("q3", "Where is Lyon?", "France")]),
]  # fmt: skip
UNANSWERABLE = ("q4", "Who founded Paris?", None)
WINDOWS = dict(max_seq_length=32, doc_stride=8, max_query_length=8)


def squad_data(paragraphs):
    data = []
    for context, questions in paragraphs:
        qas = []
        for qid, question, answer in questions:
            answers = []
            if answer is not None:
                start = context.find(answer)
                answers.append({"text": answer, "answer_start": start})
            qas.append(
                {
                    "id": qid,
                    "question": question,
                    "answers": answers,
                    "is_impossible": answer is None,
                }
            )
        data.append({"context": context, "qas": qas})
    return [{"title": "Fixture", "paragraphs": data}]


def write(path, data):
    path.write_text(json.dumps({"data": data}), encoding="utf-8")
    return str(path)


def tokenizer():
    """A tokenizer whose vocabulary holds every word of the files."""
    texts = [UNANSWERABLE[1]]
    for context, questions in TRAIN + PREDICT:
        texts += [context] + [question for _, question, _ in questions]
    text = " ".join(texts).lower()
    words = set("".join(c if c.isalnum() else f" {c} " for c in text).split())
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    return keras_bert.BertTokenizer(special + sorted(words))


def model_fn():
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=tokenizer().vocabulary_size(),
            max_sequence_length=WINDOWS["max_seq_length"],
        )
    )
    return keras_bert.BertQuestionAnswerer(backbone)


@pytest.mark.parametrize("version_2", [False, True], ids=["v1", "v2"])
def test_repeated_predict_ids_are_answered_and_scored(
    tmp_path, caplog, version_2
):
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.WARNING, logger="absl")
    predict_paragraphs = [
        (context, list(questions)) for context, questions in PREDICT
    ]
    if version_2:
        predict_paragraphs[0][1].append(UNANSWERABLE)
    predict_data = squad_data(predict_paragraphs)
    task = SquadFineTuning(
        model_fn,
        tokenizer(),
        write(tmp_path / "train.json", squad_data(TRAIN)),
        write(tmp_path / "predict.json", predict_data),
        version_2_with_negative=version_2,
        n_best_size=5,
        **WINDOWS,
    )
    model_dir = tmp_path / "run"
    # Nothing raises, after training or when writing the outputs.
    run_fine_tuning(
        task, str(model_dir), epochs=1, batch_size=4, learning_rate=1e-3
    )

    # Detected when the file is read, before training.
    assert "predict.json: 1 question ids occur more than once" in caplog.text
    with open(model_dir / "results.json") as file:
        results = json.load(file)
    with open(model_dir / "predictions.json") as file:
        predictions = json.load(file)
    with open(model_dir / "nbest_predictions.json") as file:
        nbest = json.load(file)
    ids = ["q1", "q2", "q3"] + (["q4"] if version_2 else [])
    assert sorted(predictions) == ids  # one answer per id
    assert results["num_predict_questions"] == len(ids) + 1
    # "q1" is answered from its last occurrence, in the Lyon paragraph.
    for entry in nbest["q1"]:
        if entry["start"] >= 0:
            assert LYON[entry["start"] : entry["end"]] == entry["text"]

    # The scores are those of predictions.json over the file's questions,
    # by the official rules (examples built apart from the reader).
    examples = examples_from_data(predict_data)
    if version_2:
        with open(model_dir / "null_odds.json") as file:
            null_odds = json.load(file)
        expected = squad_v2_metrics(examples, predictions, null_odds)
        assert results["metrics"]["predict"]["total"] == len(ids)
        assert results["exact_match"] == expected["exact"]
    else:
        expected = squad_v1_metrics(examples, predictions)
        assert results["exact_match"] == expected["exact_match"]
    assert results["metrics"]["predict"] == pytest.approx(expected)
    assert results["f1"] == expected["f1"]
