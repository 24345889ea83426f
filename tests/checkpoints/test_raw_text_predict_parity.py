"""QA and NER `predict` on raw text against their SavedModels, on real data.

all-MiniLM-L6-v2 with a fresh head (seed 0; equality needs no
fine-tuning) and a preprocessor, as a `BertQuestionAnswerer` on the first
`QUESTIONS` of SQuAD v1.1 dev (windows of 384 tokens every 128) and a
`BertTokenClassifier` (CoNLL-2003's labels) on the first `SENTENCES` of
CoNLL-2003 validation (each sentence's words joined by spaces; windows of
128). The model's `predict` and its export's `serving_default` get the
same texts in the same batches of 32 and must return the same answers
(QA: answer, start, end; NER: every entity's text, type, start, end, and
the count) and the same scores to 1e-5 (the export runs the encoder's
fused serving forms, which round differently); every answer and entity
is its text's
`[start:end]`. `python -m pytest -s -m slow
tests/checkpoints/test_raw_text_predict_parity.py` prints the counts and
the largest score difference. The tiny-model cases, several windows per
text and bad inputs: tests/serving/test_raw_text_predict.py.
"""

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.decoding.entities import ENTITY_PADDING
from keras_bert.fine_tuning.ner.conll import label_list
from keras_bert.fine_tuning.ner.conll import read_conll
from keras_bert.fine_tuning.squad.examples import read_squad_examples
from tests.fine_tuning.ner.data import shared_path
from tests.serving.test_raw_text_predict import assert_same_outputs
from tests.serving.test_raw_text_predict import exported
from tests.serving.test_raw_text_predict import served_in_batches

pytestmark = pytest.mark.slow

QUESTIONS, SENTENCES, BATCH_SIZE = 32, 128, 32


def with_preprocessor(model, minilm_dir, sequence_length):
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    model.preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=sequence_length
    )
    return model


def test_question_answerer_on_squad_dev(minilm_dir, tmp_path):
    examples = read_squad_examples(shared_path("squad", "dev.json"))
    inputs = {
        "question": examples["question"][:QUESTIONS],
        "context": examples["context"][:QUESTIONS],
    }
    keras.utils.set_random_seed(0)
    model = keras_bert.BertQuestionAnswerer.from_checkpoint(minilm_dir)
    model = with_preprocessor(model, minilm_dir, 384)
    predicted = model.predict(inputs, batch_size=BATCH_SIZE, verbose=0)
    served = served_in_batches(exported(model, tmp_path), BATCH_SIZE, **inputs)
    assert_same_outputs(predicted, served)
    for context, answer, start, end in zip(
        inputs["context"], served["answer"], served["start"], served["end"]
    ):
        assert context[start:end] == answer
    difference = np.abs(predicted["score"] - served["score"]).max()
    print(
        f"\nQA, SQuAD v1.1 dev, first {QUESTIONS} questions: "
        f"{QUESTIONS} of {QUESTIONS} answers equal (answer, start, end); "
        f"max |score difference| {difference:g}"
    )


def test_token_classifier_on_conll_validation(minilm_dir, tmp_path):
    train = read_conll(shared_path("conll2003", "train.txt"))
    labels = label_list(train["tags"])
    words = read_conll(shared_path("conll2003", "valid.txt"))["words"]
    texts = [" ".join(sentence) for sentence in words[:SENTENCES]]
    keras.utils.set_random_seed(0)
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        minilm_dir, num_classes=len(labels), labels=labels
    )
    model = with_preprocessor(model, minilm_dir, 128)
    predicted = model.predict(texts, batch_size=BATCH_SIZE, verbose=0)
    serve = exported(model, tmp_path)
    served = served_in_batches(serve, BATCH_SIZE, ENTITY_PADDING, text=texts)
    assert_same_outputs(predicted, served)
    counts = served["num_entities"]
    assert counts.sum() > 0  # a fresh head still tags some words
    for row, text in enumerate(texts):
        for j in range(counts[row]):
            start, end = served["start"][row, j], served["end"][row, j]
            assert text[start:end] == served["entity"][row, j]
    difference = np.abs(predicted["score"] - served["score"]).max(initial=0)
    print(
        f"\nNER, CoNLL-2003 validation, first {SENTENCES} sentences: "
        f"{counts.sum()} entities, all equal (text, type, start, end); "
        f"max |score difference| {difference:g}"
    )
