"""Raw-text question answering in a SavedModel, outside Python packages.

A tiny random `BertQuestionAnswerer` is exported with windows small enough
that long contexts span several of them; the export, loaded in a process
that imports only TensorFlow and tensorflow-text, must give the answers of
the Keras model + `compute_predictions` (the evaluation post-processing).
"""

import numpy as np
import pytest

import keras_bert
from keras_bert.serving import TF_SERVING_TEXT_OPS
from keras_bert.serving import export_saved_model
from keras_bert.serving import saved_model_op_types
from keras_bert.tasks.squad.features import INPUT_NAMES
from keras_bert.tasks.squad.features import squad_features
from keras_bert.tasks.squad.postprocess import compute_predictions
from keras_bert.tasks.squad.serving import NO_ANSWER_SCORE
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


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    keras_bert_model = keras_bert.BertQuestionAnswerer(
        keras_bert.BertBackbone(
            **tiny_backbone_config(
                vocabulary_size=len(VOCABULARY), max_sequence_length=32
            )
        )
    )
    # A head that prefers some tokens over others, so answers vary.
    rng = np.random.default_rng(0)
    keras_bert_model.span_dense.kernel.assign(rng.normal(0, 2, (8, 2)))
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=WINDOWS["max_seq_length"]
    )
    path = export_saved_model(
        keras_bert_model,
        preprocessor,
        str(tmp_path_factory.mktemp("qa")),
        doc_stride=WINDOWS["doc_stride"],
        max_query_length=WINDOWS["max_query_length"],
    )
    return keras_bert_model, tokenizer, path


def keras_answers(model, tokenizer, examples):
    features = squad_features(examples, tokenizer, **WINDOWS)
    outputs = model.predict(
        {name: features[name] for name in INPUT_NAMES}, verbose=0
    )
    return compute_predictions(
        examples, features, outputs["start_logits"], outputs["end_logits"]
    )


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
    predictions, nbest, _ = keras_answers(model, tokenizer, examples)
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
    # The long context was answered from a later window at least once in
    # the n-best, so windows really were split in the graph.
    assert any(entry["start"] > 60 for entry in nbest["1"])


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
