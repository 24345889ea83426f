"""`read_squad_examples`: the official format, v2.0, and every bad input."""

import json
import logging

import pytest
import tensorflow as tf

from keras_bert.fine_tuning.squad.examples import read_squad_examples
from tests.fine_tuning.squad.data import squad_path

CONTEXT = "Denver beat Carolina. Denver won the Super Bowl in Santa Clara."


def squad_json(questions, context=CONTEXT, version="1.1"):
    """A one-paragraph SQuAD file holding `questions` (the `qas` list)."""
    paragraph = {"context": context, "qas": questions}
    article = {"title": "Test", "paragraphs": [paragraph]}
    return {"version": version, "data": [article]}


def question(qid, text, answers, **extra):
    answers = [{"text": t, "answer_start": s} for t, s in answers]
    return {"id": qid, "question": text, "answers": answers, **extra}


def write(tmp_path, content, name="squad.json"):
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return str(path)


def read(tmp_path, content, **kwargs):
    return read_squad_examples(write(tmp_path, content), **kwargs)


def test_reads_every_field_of_a_v1_file(tmp_path):
    examples = read(
        tmp_path,
        squad_json(
            [
                question("q1", "Who won?", [("Denver", 22), ("Denver", 0)]),
                question("q2", "Where?", [("Santa Clara", 51)]),
            ]
        ),
    )
    assert examples == {
        "id": ["q1", "q2"],
        "title": ["Test", "Test"],
        "question": ["Who won?", "Where?"],
        "context": [CONTEXT, CONTEXT],
        "answer_text": ["Denver", "Santa Clara"],
        "answer_start": [22, 51],
        "answers": [["Denver", "Denver"], ["Santa Clara"]],
        "is_impossible": [False, False],
        "trainable": [True, True],
    }


def test_reads_v2_unanswerable_questions(tmp_path):
    questions = [
        question("answerable", "Who won?", [("Denver", 0)]),
        {
            "id": "impossible",
            "question": "Who lost the World Cup?",
            "answers": [],
            "plausible_answers": [{"text": "Carolina", "answer_start": 12}],
            "is_impossible": True,
        },
        question("no_answers", "Who sang?", []),
    ]
    examples = read(
        tmp_path,
        squad_json(questions, version="v2.0"),
        version_2_with_negative=True,
    )
    assert examples["is_impossible"] == [False, True, True]
    assert examples["answer_text"] == ["Denver", "", ""]
    assert examples["answer_start"] == [0, -1, -1]
    # The official v2.0 script scores an unanswerable question against "".
    assert examples["answers"] == [["Denver"], [""], [""]]
    # Training learns "no answer" ([CLS]) from them.
    assert examples["trainable"] == [True, True, True]


@pytest.mark.parametrize(
    "qa",
    [
        {"id": "q9", "question": "Who?", "answers": [], "is_impossible": True},
        {"id": "q9", "question": "Who?", "answers": []},
    ],
)
def test_unanswerable_question_without_the_v2_flag_names_id_and_flag(
    tmp_path, qa
):
    with pytest.raises(ValueError, match="'q9'.*version_2_with_negative"):
        read(tmp_path, squad_json([qa]))


def test_wrong_answer_start_uses_the_nearest_occurrence(tmp_path, caplog):
    # "Denver" is at 0 and 22; 20 is nearest to 22, 5 nearest to 0.
    examples = read(
        tmp_path,
        squad_json(
            [
                question("near_second", "Who?", [("Denver", 20)]),
                question("near_first", "Who?", [("Denver", 5)]),
                question("past_the_end", "Who?", [("Denver", 500)]),
                question("negative", "Who?", [("Denver", -3)]),
                question("right", "Who?", [("Denver", 22)]),
            ]
        ),
    )
    assert examples["answer_start"] == [22, 0, 22, 0, 22]
    assert all(examples["trainable"])
    assert "4 x answer_start corrected" in caplog.text
    assert "'near_second'" in caplog.text


def test_nearest_occurrence_tie_goes_to_the_earlier(tmp_path):
    # "x" at 0 and 4: start 2 is as far from both, 3 is nearer the second.
    examples = read(
        tmp_path,
        squad_json(
            [
                question("tie", "Q?", [("x", 2)]),
                question("b", "Q?", [("x", 3)]),
            ],
            context="x___x",
        ),
    )
    assert examples["answer_start"] == [0, 4]


def test_answer_not_in_context_is_kept_for_evaluation_only(tmp_path, caplog):
    examples = read(
        tmp_path,
        squad_json(
            [
                question("missing", "Who?", [("Green Bay", 3), ("Denver", 0)]),
                question("fine", "Who?", [("Denver", 0)]),
            ]
        ),
    )
    assert examples["id"] == ["missing", "fine"]
    assert examples["answer_start"] == [-1, 0]
    assert examples["answers"][0] == ["Green Bay", "Denver"]  # still scored
    assert examples["trainable"] == [False, True]
    assert "1 x answer text not in context" in caplog.text
    assert "skipped in training" in caplog.text
    assert "'missing'" in caplog.text


@pytest.mark.parametrize(
    "questions, context, problem",
    [
        ([question("q", "", [("Denver", 0)])], CONTEXT, "empty question"),
        ([question("q", "  \n", [("Denver", 0)])], CONTEXT, "empty question"),
        ([question("q", "Who?", [("Denver", 0)])], "", "empty context"),
        ([question("q", "Who?", [("", 0)])], CONTEXT, "empty answer text"),
    ],
)
def test_empty_texts_are_kept_for_evaluation_only(
    tmp_path, caplog, questions, context, problem
):
    examples = read(tmp_path, squad_json(questions, context=context))
    assert examples["id"] == ["q"]
    assert examples["trainable"] == [False]
    assert f"1 x {problem}" in caplog.text


def test_empty_question_keeps_its_answer_offset(tmp_path):
    examples = read(tmp_path, squad_json([question("q", "", [("Denver", 22)])]))
    assert examples["answer_start"] == [22]
    assert examples["trainable"] == [False]


def test_unanswerable_question_with_empty_context_is_untrainable(tmp_path):
    qa = {"id": "q", "question": "Who?", "answers": [], "is_impossible": True}
    examples = read(
        tmp_path,
        squad_json([qa], context=""),
        version_2_with_negative=True,
    )
    assert examples["trainable"] == [False]
    assert examples["answer_start"] == [-1]


def test_not_json_names_the_file(tmp_path):
    path = write(tmp_path, '{"data": [', name="broken.json")
    with pytest.raises(ValueError, match="broken.json is not a SQuAD JSON"):
        read_squad_examples(path)


@pytest.mark.parametrize(
    "content, field",
    [
        ({"version": "1.1"}, "missing field data"),
        ([], "the top level should be a JSON object"),
        ({"data": {}}, "field data should be of type list"),
        ({"data": [{"title": "T"}]}, r"missing field data\[0\].paragraphs"),
        (
            squad_json([{"id": "q", "answers": []}]),
            r"missing field data\[0\].paragraphs\[0\].qas\[0\].question",
        ),
        (
            squad_json([question("q", "Who?", [("Denver", "0")])]),
            r"field data\[0\].paragraphs\[0\].qas\[0\].answers\[0\]"
            r".answer_start should be of type integer; found str '0'",
        ),
        (
            squad_json([{"id": "q", "question": "Who?",
                         "answers": [{"answer_start": 0}]}]),
            r"missing field data\[0\].paragraphs\[0\].qas\[0\].answers\[0\]"
            r".text",
        ),
        (
            squad_json([question("q", "Who?", [("Denver", True)])]),
            "answer_start should be of type integer; found bool",
        ),
        (
            squad_json([question("q", None, [("Denver", 0)])]),
            r"qas\[0\].question should be of type string; found NoneType",
        ),
        (
            squad_json([question("q", "Q", [("Denver", 0)],
                                 is_impossible="no")]),
            r"qas\[0\].is_impossible should be of type boolean",
        ),
        (
            {"data": [{"paragraphs": [{"qas": []}]}]},
            r"missing field data\[0\].paragraphs\[0\].context",
        ),
        (
            {"data": [{"paragraphs": ["text"]}]},
            r"data\[0\].paragraphs\[0\] should be a JSON object",
        ),
    ],
)  # fmt: skip
def test_malformed_file_names_the_file_and_the_field(tmp_path, content, field):
    path = write(tmp_path, content, name="bad.json")
    with pytest.raises(ValueError, match="bad.json") as error:
        read_squad_examples(path)
    assert error.match(field)


def test_numeric_ids_become_strings(tmp_path):
    qa = question(17, "Who?", [("Denver", 0)])
    assert read(tmp_path, squad_json([qa]))["id"] == ["17"]


def test_lone_surrogate_is_replaced_in_place(tmp_path, caplog):
    # json.dumps writes the surrogate as the escape "\ud800".
    context = "Den\ud800ver won."
    examples = read(
        tmp_path,
        squad_json([question("q", "Who?", [("won", 8)])], context=context),
    )
    assert examples["context"] == ["Den\ufffdver won."]
    assert examples["answer_start"] == [8]  # not corrected
    assert "lone surrogates replaced by U+FFFD" in caplog.text
    assert "answer_start corrected" not in caplog.text
    tf.constant(examples["context"])  # TensorFlow can encode it now


def test_duplicate_ids_are_logged(tmp_path, caplog):
    qa = question("same", "Who?", [("Denver", 0)])
    examples = read(tmp_path, squad_json([qa, qa]))
    assert examples["id"] == ["same", "same"]
    assert "1 question ids occur more than once" in caplog.text


def test_reads_through_tf_io_gfile(tmp_path):
    path = "ram://squad_test/dev.json"
    with tf.io.gfile.GFile(path, "w") as file:
        file.write(json.dumps(squad_json([question("q", "W?", [("D", 0)])])))
    assert read_squad_examples(path)["id"] == ["q"]


def test_reads_the_real_dev_set():
    examples = read_squad_examples(squad_path("dev.json"))
    assert len(examples["id"]) == 1702
    assert {len(values) for values in examples.values()} == {1702}
    assert all(examples["trainable"])
    assert not any(examples["is_impossible"])
    assert all(len(answers) >= 1 for answers in examples["answers"])
    for context, text, start in zip(
        examples["context"], examples["answer_text"], examples["answer_start"]
    ):
        assert context[start : start + len(text)] == text


@pytest.fixture(autouse=True)
def _capture_warnings(caplog):
    caplog.set_level(logging.INFO)
    # absl's logger keeps its own level (WARNING once any test parsed
    # absl flags): the INFO lines these tests read need it lowered.
    caplog.set_level(logging.INFO, logger="absl")
