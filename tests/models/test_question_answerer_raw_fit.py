"""BertQuestionAnswerer.fit / evaluate / predict on raw SQuAD-style data."""

import re

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.fine_tuning.squad.features import squad_features
from keras_bert.models import span_answer_methods
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "what", "where",
    "the", "a", "fox", "dog", "cat", "jumped", "over", "lazy", "brown",
    "quick", "in", "paris", "lyon", ".", ",", "?", "is",
]  # fmt: skip
WINDOWS = dict(doc_stride=4, max_query_length=4)
X = {
    "question": ["Who jumped?", "Where is the cat?", "What is lazy?"],
    "context": [
        "The quick brown fox jumped.",
        "The dog is in Lyon. The cat is in Paris.",  # longer than a window
        "The cat jumped over the fox.",
    ],
}
Y = {"text": ["The quick brown fox", "Paris", ""], "answer_start": [0, 34, -1]}


def question_answerer(sequence_length=16):
    keras.utils.set_random_seed(0)
    return keras_bert.BertQuestionAnswerer(
        keras_bert.BertBackbone(
            **tiny_backbone_config(
                vocabulary_size=len(VOCABULARY), max_sequence_length=32
            )
        ),
        preprocessor=keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY),
            sequence_length=sequence_length,
        ),
    )


def test_fit_on_a_dict_lowers_the_loss_and_windows_long_contexts():
    model = question_answerer()
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    before = model.evaluate(X, Y, verbose=0, **WINDOWS)["loss"]
    history = model.fit(
        x=X, y=Y, validation_data=(X, Y), epochs=15, batch_size=4,
        seed=0, verbose=0, **WINDOWS,
    )  # fmt: skip
    after = model.evaluate(X, Y, verbose=0, **WINDOWS)["loss"]
    assert after < 0.5 * before
    assert "val_loss" in history.history
    # The Paris context makes several windows of 16 tokens: each was a
    # training row (steps = windows / batch size).
    windows = squad_features(
        {**X, "answer_text": Y["text"], "answer_start": Y["answer_start"]},
        model.preprocessor.tokenizer, max_seq_length=16, **WINDOWS,
    )  # fmt: skip
    assert np.sum(windows["example_index"] == 1) > 1
    assert history.params["steps"] == int(
        np.ceil(len(windows["token_ids"]) / 4)
    )


def test_evaluate_gives_exact_match_and_f1_with_the_loss():
    model = question_answerer()
    model.fit(X, Y, epochs=1, batch_size=4, seed=0, verbose=0, **WINDOWS)
    answerable = {name: values[:2] for name, values in X.items()}
    gold = {name: values[:2] for name, values in Y.items()}
    scores = model.evaluate(answerable, gold, verbose=0, **WINDOWS)
    assert {"loss", "exact_match", "f1"} <= set(scores)
    assert 0 <= scores["exact_match"] <= scores["f1"] <= 100
    assert "HasAns_f1" not in scores  # v1.1: every question has an answer
    assert "NoAns_f1" in model.evaluate(X, Y, verbose=0, **WINDOWS)


def test_a_trained_model_answers_and_evaluate_scores_it():
    model = question_answerer()
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    x = {"question": X["question"][:2], "context": X["context"][:2]}
    y = {"text": Y["text"][:2], "answer_start": Y["answer_start"][:2]}
    model.fit(x, y, epochs=40, batch_size=8, seed=0, verbose=0, **WINDOWS)
    scores = model.evaluate(x, y, verbose=0, **WINDOWS)
    assert scores["exact_match"] == 100.0 and scores["f1"] == 100.0
    answers = model.predict(x, verbose=0, **WINDOWS)
    assert list(answers["answer"]) == y["text"]


def test_predict_takes_a_dict_and_a_tuple_alike():
    model = question_answerer()
    by_dict = model.predict(X, verbose=0, **WINDOWS)
    by_tuple = model.predict(
        (X["question"], X["context"]), verbose=0, **WINDOWS
    )
    assert sorted(by_tuple) == ["answer", "end", "score", "start"]
    for name in by_dict:
        np.testing.assert_array_equal(by_dict[name], by_tuple[name])
    for context, answer, start, end in zip(
        X["context"], by_tuple["answer"], by_tuple["start"], by_tuple["end"]
    ):
        assert context[start:end] == answer


def test_answers_as_squad_answers_entries_train_the_same_windows():
    entries = [
        [{"text": "The quick brown fox", "answer_start": 0},
         {"text": "fox", "answer_start": 16}],
        {"text": ["Paris"], "answer_start": [34]},  # datasets' layout
        [],  # no answer
    ]  # fmt: skip
    model = question_answerer()
    by_entries = model.evaluate(X, entries, verbose=0, **WINDOWS)
    by_columns = model.evaluate(X, Y, verbose=0, **WINDOWS)
    assert by_entries["loss"] == pytest.approx(by_columns["loss"])


def test_unanswerable_questions_are_labelled_at_cls():
    model = question_answerer()
    for y in (
        {"text": ["", "", ""]},  # no answer_start: none answerable
        {"text": ["", "", ""], "answer_start": [None, -1, 5]},
    ):
        examples, windows = model._span_windows("fit", X, y, 4, 4)
        assert examples["answer_start"] == [-1, -1, -1]
        assert not windows["start_positions"].any()
        assert not windows["end_positions"].any()


@pytest.mark.parametrize(
    "y, message",
    [
        ({"text": ["a", "b"], "answer_start": [0, 0, 0]},
         "question and context: 3, text: 2, answer_start: 3"),
        ({"text": ["a", "b", "c"], "answer_start": [0, 0]},
         "text: 3, answer_start: 2"),
        ({"text": ["The quick", "Lyon", ""], "answer_start": [0, 3, -1]},
         "example 1's answer_start=3 does not point at its text. "
         "context[3:7] is ' dog', the text is 'Lyon'"),
        ({"text": ["The quick", "Paris", "cat"]},
         "'text' without 'answer_start'"),
    ],
)  # fmt: skip
def test_bad_answers_raise_before_tracing(y, message):
    model = question_answerer()
    with pytest.raises(ValueError, match=re.escape(message)):
        model.fit(X, y, epochs=1, verbose=0, **WINDOWS)
    assert model.train_function is None  # nothing was traced


def test_questions_and_contexts_of_different_lengths_raise():
    model = question_answerer()
    x = {"question": X["question"][:2], "context": X["context"]}
    with pytest.raises(ValueError, match="question: 2, context: 3"):
        model.fit(x, Y, verbose=0, **WINDOWS)
    with pytest.raises(ValueError, match="needs their answers"):
        model.evaluate(X, verbose=0, **WINDOWS)
    with pytest.raises(ValueError, match="sample_weight"):
        model.fit(X, Y, sample_weight=np.ones(3), verbose=0, **WINDOWS)
    with pytest.raises(ValueError, match="doc_stride"):
        model.fit({"token_ids": np.zeros((1, 4))}, doc_stride=4)


def test_default_windows_are_those_of_predict():
    import inspect

    from keras_bert.decoding.answers import answer_text_function

    defaults = inspect.signature(answer_text_function).parameters
    assert defaults["doc_stride"].default == span_answer_methods.DOC_STRIDE
    assert (
        defaults["max_query_length"].default
        == span_answer_methods.MAX_QUERY_LENGTH
    )


@pytest.mark.slow  # a save, a load and an export: tens of seconds
def test_saved_loaded_and_exported_after_a_raw_text_fit(tmp_path):
    model = question_answerer()
    model.fit(X, Y, epochs=2, batch_size=4, seed=0, verbose=0, **WINDOWS)
    answers = model.predict(X, verbose=0, **WINDOWS)
    path = str(tmp_path / "qa.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    again = loaded.predict(X, verbose=0, **WINDOWS)
    np.testing.assert_array_equal(answers["answer"], again["answer"])
    np.testing.assert_allclose(answers["score"], again["score"], atol=1e-5)
    loaded.fit(X, Y, epochs=1, batch_size=4, seed=0, verbose=0, **WINDOWS)

    export_dir = str(tmp_path / "export")
    keras_bert.serving.export_saved_model(
        model, export_dir=export_dir, version=1, **WINDOWS
    )
    import tensorflow as tf

    served = tf.saved_model.load(f"{export_dir}/1").signatures[
        "serving_default"
    ](question=tf.constant(X["question"]), context=tf.constant(X["context"]))
    assert [a.decode() for a in served["answer"].numpy()] == list(
        answers["answer"]
    )
