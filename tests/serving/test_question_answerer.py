"""Raw-text question answering in a SavedModel, outside Python packages.

A tiny random `BertQuestionAnswerer` is exported with windows small enough
that long contexts span several of them; the export, loaded in a process
that imports only TensorFlow and tensorflow-text, must give the answers of
the Keras model + `compute_predictions` (the evaluation post-processing),
for SQuAD v1.1 and, with "no answer", for v2.0.
"""

import json

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.decoding.answers import NO_ANSWER_SCORE
from keras_bert.fine_tuning.squad.examples import read_squad_examples
from keras_bert.fine_tuning.squad.features import INPUT_NAMES
from keras_bert.fine_tuning.squad.features import squad_features
from keras_bert.fine_tuning.squad.postprocess import compute_predictions
from keras_bert.serving import TF_SERVING_TEXT_OPS
from keras_bert.serving import export_saved_model
from keras_bert.serving import saved_model_op_types
from tests.helpers import non_core_ops
from tests.helpers import run_saved_model_outside_python
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "what", "where",
    "the", "a", "fox", "dog", "cat", "jumped", "over", "lazy", "brown",
    "quick", "é", "##s", "##ed", "in", "paris", "lyon", ".", ",", "?", "is",
    "café", "日", "本",
]  # fmt: skip

EXAMPLES = [
    ("Who jumped?", "The quick brown fox jumped over the lazy dog."),
    ("Where?", "Paris, Lyon. " * 12),  # many windows
    ("What is the café?", "Café, café: the café is in Lyon. 日本 … the cat."),
    ("", "The dog."),  # empty question
    ("Who?", ""),  # empty context: no possible answer
    ("Who is the quick brown fox dog cat? " * 3, "A fox."),  # long question
]
WINDOWS = dict(max_seq_length=24, doc_stride=5, max_query_length=8)
# A hand-written SQuAD v2.0 set: (id, question, context, answer or None
# for an unanswerable question).
V2_QUESTIONS = [
    ("a1", "Who jumped?", "The quick brown fox jumped over the lazy dog.",
     "The quick brown fox"),
    ("a2", "Where is the cat?", "The cat is in Paris. " * 6, "Paris"),
    ("a3", "What is in Lyon?", "The café is in Lyon, the dog in Paris.",
     "The café"),
    ("u1", "Who is the cat?", "A dog jumped over the fox.", None),
    ("u2", "Where is the café?", "Lyon, Paris. " * 5, None),
    ("u3", "What is the fox?", "The lazy dog is brown.", None),
    ("e1", "Who?", "", None),  # empty context: no possible answer
]  # fmt: skip


def question_answerer():
    # Seeded, so the answers do not depend on what ran before in the
    # process: with these weights the long context's best answer lies past
    # its first window, which the export test needs.
    keras.utils.set_random_seed(1)
    model = keras_bert.BertQuestionAnswerer(
        keras_bert.BertBackbone(
            **tiny_backbone_config(
                vocabulary_size=len(VOCABULARY), max_sequence_length=32
            )
        )
    )
    # A head that prefers some tokens over others, so answers vary.
    rng = np.random.default_rng(0)
    model.span_dense.kernel.assign(rng.normal(0, 2, (8, 2)))
    return model


def export(model, tokenizer, directory, **options):
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=WINDOWS["max_seq_length"]
    )
    return export_saved_model(
        model,
        preprocessor,
        str(directory),
        doc_stride=WINDOWS["doc_stride"],
        max_query_length=WINDOWS["max_query_length"],
        **options,
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = question_answerer()
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    path = export(model, tokenizer, tmp_path_factory.mktemp("qa"))
    return model, tokenizer, path


def keras_answers(model, tokenizer, examples, **options):
    """`compute_predictions`' answers, and the windows they came from."""
    features = squad_features(examples, tokenizer, **WINDOWS)
    outputs = model.predict(
        {name: features[name] for name in INPUT_NAMES}, verbose=0
    )
    answers = compute_predictions(
        examples,
        features,
        outputs["start_logits"],
        outputs["end_logits"],
        **options,
    )
    return answers, features


@pytest.mark.slow
def test_export_answers_like_keras_and_postprocessing(exported, tmp_path):
    model, tokenizer, path = exported
    questions = [q for q, _ in EXAMPLES]
    contexts = [c for _, c in EXAMPLES]
    outputs = run_saved_model_outside_python(
        tmp_path,
        path,
        [
            {
                "signature": "serving_default",
                "inputs": {"question": questions, "context": contexts},
            }
        ],
    )
    examples = {
        "id": [str(i) for i in range(len(EXAMPLES))],
        "question": questions,
        "context": contexts,
    }
    (predictions, nbest, _), features = keras_answers(
        model, tokenizer, examples
    )
    answers = [a.decode("utf-8") for a in outputs["0/answer"]]
    starts, ends = outputs["0/start"], outputs["0/end"]
    for i, context in enumerate(contexts):
        if not context:  # no span possible: defined empty answer
            assert answers[i] == "" and starts[i] == ends[i] == 0
            assert outputs["0/score"][i] == NO_ANSWER_SCORE
            continue
        best = nbest[str(i)][0]
        assert answers[i] == predictions[str(i)], i
        assert context[starts[i] : ends[i]] == answers[i]
        assert (starts[i], ends[i]) == (best["start"], best["end"])
        np.testing.assert_allclose(
            outputs["0/score"][i],
            best["start_logit"] + best["end_logit"],
            rtol=1e-5,
        )
    # The long context spans several windows, and the export's answer lies
    # wholly past the first one's context: the graph cut the context into
    # windows and searched beyond the first.
    windows = np.flatnonzero(features["example_index"] == 1)
    assert len(windows) > 1
    assert starts[1] >= features["offset_end"][windows[0]].max()


def write_v2_file(path):
    qas_of = {}
    for qid, question, context, answer in V2_QUESTIONS:
        answers = []
        if answer is not None:
            answers.append(
                {"text": answer, "answer_start": context.find(answer)}
            )
        qas_of.setdefault(context, []).append(
            {
                "id": qid,
                "question": question,
                "answers": answers,
                "is_impossible": answer is None,
            }
        )
    paragraphs = [{"context": c, "qas": qas} for c, qas in qas_of.items()]
    data = {
        "version": "v2.0",
        "data": [{"title": "v2", "paragraphs": paragraphs}],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_v2_export_answers_like_keras_and_postprocessing(tmp_path):
    model = question_answerer()
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    examples = read_squad_examples(
        write_v2_file(tmp_path / "v2.json"), version_2_with_negative=True
    )
    v2 = dict(version_2_with_negative=True)
    (_, _, null_odds), _ = keras_answers(model, tokenizer, examples, **v2)
    # A threshold halfway between two examples' null odds, so that some
    # questions are answered and some get "no answer".
    odds = sorted(
        null_odds[qid] for qid, _, context, _ in V2_QUESTIONS if context
    )
    middle = len(odds) // 2
    assert odds[middle] - odds[middle - 1] > 1e-3, odds
    threshold = (odds[middle - 1] + odds[middle]) / 2
    v2["null_score_diff_threshold"] = threshold
    (predictions, nbest, null_odds), _ = keras_answers(
        model, tokenizer, examples, **v2
    )
    path = export(model, tokenizer, tmp_path / "qa_v2", **v2)
    outputs = run_saved_model_outside_python(
        tmp_path,
        path,
        [
            {
                "signature": "serving_default",
                "inputs": {
                    "question": examples["question"],
                    "context": examples["context"],
                },
            }
        ],
    )
    answers = [a.decode("utf-8") for a in outputs["0/answer"]]
    starts, ends = outputs["0/start"], outputs["0/end"]
    scores = outputs["0/score"]
    served = {}
    for i, (qid, context) in enumerate(
        zip(examples["id"], examples["context"])
    ):
        served[qid] = answers[i]
        if not context:  # no span possible: defined empty answer
            assert answers[i] == "" and starts[i] == ends[i] == 0
            assert scores[i] == NO_ANSWER_SCORE
            continue
        assert answers[i] == predictions[qid], qid
        assert context[starts[i] : ends[i]] == answers[i]
        if predictions[qid]:
            best = next(entry for entry in nbest[qid] if entry["text"])
            assert null_odds[qid] <= threshold
            assert (starts[i], ends[i]) == (best["start"], best["end"])
        else:  # "no answer": the null score, at the context's start
            best = next(entry for entry in nbest[qid] if not entry["text"])
            assert null_odds[qid] > threshold
            assert starts[i] == ends[i] == 0
        np.testing.assert_allclose(
            scores[i], best["start_logit"] + best["end_logit"], rtol=1e-5
        )
    # Both spans and "no answer" were served.
    with_context = [qid for qid, _, context, _ in V2_QUESTIONS if context]
    assert any(served[qid] for qid in with_context), served
    assert not all(served[qid] for qid in with_context), served


def test_mismatched_batches_are_refused(exported, tmp_path):
    import tensorflow as tf

    _, _, path = exported
    serve = tf.saved_model.load(path).signatures["serving_default"]
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="the same number of strings"
    ):
        serve(question=tf.constant(["a", "b"]), context=tf.constant(["a"]))


def test_only_core_and_tf_serving_text_ops(exported, tmp_path):
    _, _, path = exported
    ops = saved_model_op_types(path)
    non_core = non_core_ops(ops, tmp_path)
    assert "FastWordpieceTokenizeWithOffsets" in non_core
    assert non_core <= TF_SERVING_TEXT_OPS, non_core - TF_SERVING_TEXT_OPS
    assert not {"PyFunc", "PyFuncStateless", "EagerPyFunc"} & set(ops)
