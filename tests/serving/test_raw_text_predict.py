"""QA and NER `predict` on raw text: what the exported SavedModel returns.

Tiny random models with a preprocessor predict on raw text — contexts and
texts long enough to span several windows, in batches smaller than the
input — and must return exactly what `serving_default` of their export
returns (loaded with `tf.saved_model.load`, asked the same batches). Ids
still give `keras.Model.predict`'s logits; bad input fails clearly.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.serving import export_saved_model
from tests.checkpoints.test_docstring_examples import (
    test_example_runs as run_docstring_example,
)
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "where", "the",
    "fox", "dog", "jumped", "over", "lazy", "john", "lives", "in", "new",
    "york", "##er", "paris", "café", ".", ",", "?",
]  # fmt: skip
QA_OPTIONS = dict(doc_stride=3, max_query_length=4)
QUESTIONS = ["Who jumped?", "Where?", "", "Who lives in Paris?", "Who?"]
CONTEXTS = [
    "The fox jumped over the lazy dog.",
    "John lives in Paris, the café. " * 5,  # many windows
    "The dog.",
    "Paris, New York, Paris, the Yorker café in Paris. " * 3,
    "",  # no possible answer
]
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
NER_OPTIONS = dict(stride=3)
TEXTS = [
    "John lives in Paris.",
    "John lives in New York, the Yorker lives in Paris. " * 4,  # windows
    "",
    "café café",
    "Paris Paris Paris John John the lazy dog jumped over New York.",
]
BATCH_SIZE = 2  # smaller than the inputs: three batches


def preprocessor(sequence_length):
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=sequence_length
    )


def backbone():
    return keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY), num_layers=1)
    )


def question_answerer(with_preprocessor=True):
    keras.utils.set_random_seed(0)
    model = keras_bert.BertQuestionAnswerer(
        backbone(), preprocessor=preprocessor(12) if with_preprocessor else None
    )
    # A head that prefers some tokens over others, so answers vary.
    rng = np.random.default_rng(0)
    model.span_dense.kernel.assign(rng.normal(0, 2, (8, 2)))
    return model


def tagger(with_preprocessor=True):
    keras.utils.set_random_seed(1)
    model = keras_bert.BertTokenClassifier(
        backbone(),
        len(NER_LABELS),
        labels=NER_LABELS,
        preprocessor=preprocessor(8) if with_preprocessor else None,
    )
    # Large head weights: confident, varied tags, so many entities.
    rng = np.random.default_rng(1)
    model.output_dense.kernel.assign(
        rng.normal(size=(8, len(NER_LABELS))).astype("float32") * 3
    )
    return model


def exported(model, directory, **options):
    """`serving_default` of `model`'s export, loaded back."""
    path = export_saved_model(
        model, model.preprocessor, str(directory), **options
    )
    return tf.saved_model.load(path).signatures["serving_default"]


def served_in_batches(serve, batch_size, padding=None, **inputs):
    """The export's outputs over `inputs`, asked `batch_size` at a time,
    as numpy (strings decoded); padded rows widened to the widest."""
    count = len(next(iter(inputs.values())))
    batches = [
        {
            name: value.numpy()
            for name, value in serve(
                **{
                    key: tf.constant(values[first : first + batch_size])
                    for key, values in inputs.items()
                }
            ).items()
        }
        for first in range(0, count, batch_size)
    ]
    outputs = {}
    for name in batches[0]:
        arrays = [batch[name] for batch in batches]
        if arrays[0].dtype == object:
            arrays = [
                np.vectorize(bytes.decode, otypes=[object])(a) for a in arrays
            ]
        if padding and name in padding:
            width = max(a.shape[1] for a in arrays)
            arrays = [
                np.pad(
                    a,
                    [(0, 0), (0, width - a.shape[1])],
                    constant_values=padding[name],
                )
                for a in arrays
            ]
        outputs[name] = np.concatenate(arrays)
    return outputs


def assert_same_outputs(predicted, served):
    """Equal answers, offsets, entities and counts; scores (floats) to
    1e-5: the export runs the encoder in the fused forms of the serving
    graph (`keras_bert.layers.remapper_forms`), `predict` in the model's,
    which round differently."""
    assert sorted(predicted) == sorted(served)
    for name, value in served.items():
        assert predicted[name].shape == value.shape, name
        assert predicted[name].dtype == value.dtype, name
        if np.issubdtype(value.dtype, np.floating):
            np.testing.assert_allclose(
                predicted[name], value, rtol=1e-6, atol=1e-5, err_msg=name
            )
        else:
            np.testing.assert_array_equal(predicted[name], value, err_msg=name)


@pytest.fixture(scope="module")
def qa_model():
    return question_answerer()


@pytest.fixture(scope="module")
def ner_model():
    return tagger()


@pytest.fixture(scope="module")
def models_without_preprocessor():
    return question_answerer(False), tagger(False)


def test_question_answerer_predict_is_the_exports_answers(qa_model, tmp_path):
    inputs = {"question": QUESTIONS, "context": CONTEXTS}
    predicted = qa_model.predict(
        inputs, batch_size=BATCH_SIZE, verbose=0, **QA_OPTIONS
    )
    # Exported after predict: predict's traced function stays out of it.
    serve = exported(qa_model, tmp_path, **QA_OPTIONS)
    served = served_in_batches(serve, BATCH_SIZE, **inputs)
    assert_same_outputs(predicted, served)
    assert isinstance(predicted["answer"][0], str)
    for context, answer, start, end in zip(
        CONTEXTS, predicted["answer"], predicted["start"], predicted["end"]
    ):
        assert context[start:end] == answer
    assert predicted["score"][-1] == -1e9  # the empty context
    # Long contexts spanned several windows, and found answers in them.
    assert predicted["start"][1] > 0 or predicted["start"][3] > 0
    # One batch or three: the same answers.
    whole = qa_model.predict(inputs, verbose=0, **QA_OPTIONS)
    for name in ("answer", "start", "end"):
        np.testing.assert_array_equal(whole[name], predicted[name])
    np.testing.assert_allclose(whole["score"], predicted["score"], atol=1e-5)


def test_token_classifier_predict_is_the_exports_entities(ner_model, tmp_path):
    predicted = ner_model.predict(
        TEXTS, batch_size=BATCH_SIZE, verbose=0, **NER_OPTIONS
    )
    serve = exported(ner_model, tmp_path, **NER_OPTIONS)
    padding = {"entity": "", "entity_type": "", "start": -1, "end": -1}
    padding["score"] = 0.0
    served = served_in_batches(serve, BATCH_SIZE, padding, text=TEXTS)
    assert_same_outputs(predicted, served)
    # Padded to the most entities of any batch, not of each batch.
    counts = predicted["num_entities"]
    assert predicted["entity"].shape == (len(TEXTS), max(counts))
    assert counts[1] > counts[0] >= 1  # the long text, windowed
    assert counts[2] == 0
    for row, text in enumerate(TEXTS):
        for j in range(counts[row]):
            start, end = predicted["start"][row, j], predicted["end"][row, j]
            assert text[start:end] == predicted["entity"][row, j]
    # The whole input in one call: the export's one-batch answer.
    whole = served_in_batches(serve, len(TEXTS), padding, text=TEXTS)
    assert_same_outputs(
        ner_model.predict(TEXTS, verbose=0, **NER_OPTIONS), whole
    )


def test_arrays_tensors_and_no_texts(ner_model):
    texts = np.array(TEXTS[:2])
    from_list = ner_model.predict(TEXTS[:2], verbose=0, **NER_OPTIONS)
    for x in (texts, tf.constant(texts), tuple(TEXTS[:2])):
        outputs = ner_model.predict(x, verbose=0, **NER_OPTIONS)
        assert_same_outputs(outputs, from_list)
    empty = ner_model.predict([], verbose=0)
    assert empty["num_entities"].shape == (0,)
    assert empty["entity"].shape == (0, 0)


@pytest.mark.slow
def test_a_reloaded_model_predicts_the_same(ner_model, tmp_path):
    """Predict's traced function stays out of the `.keras` file; the
    preprocessor comes back with the model."""
    before = ner_model.predict(TEXTS, verbose=0, **NER_OPTIONS)
    path = str(tmp_path / "tagger.keras")
    ner_model.save(path)
    reloaded = keras.saving.load_model(path)
    after = reloaded.predict(TEXTS, verbose=0, **NER_OPTIONS)
    assert_same_outputs(after, before)


def test_ids_give_keras_predict_logits(
    qa_model, ner_model, models_without_preprocessor
):
    """Ids input gives `keras.Model.predict`'s logits, preprocessor or not
    (within 1e-6 + 2e-6 of their size: a small call runs its own compiled
    function, `keras_bert.models.small_calls`, not Keras' predict step,
    and oneDNN may pick other kernels for it, so float32 rounds otherwise
    along the way; this random model's logits reach 15, and on an Intel
    Xeon with AMX a logit of -1.39 differed by 1.8e-6)."""
    qa_without, ner_without = models_without_preprocessor
    ids = qa_model.preprocessor((["who jumped"], ["the fox jumped"]))
    ids = {name: value.numpy() for name, value in ids.items()}
    for model in (qa_model, qa_without):
        outputs = model.predict(ids, batch_size=1, verbose=0)
        expected = keras.Model.predict(model, ids, verbose=0)
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(
                outputs[name], expected[name], rtol=2e-6, atol=1e-6
            )
    ids = ner_model.preprocessor(["john lives in paris"])
    ids = {name: value.numpy() for name, value in ids.items()}
    for model in (ner_model, ner_without):
        np.testing.assert_allclose(
            model.predict(ids, verbose=0),
            keras.Model.predict(model, ids, verbose=0),
            rtol=2e-6,
            atol=1e-6,
        )


def test_raw_text_without_a_preprocessor_names_the_fix(
    models_without_preprocessor,
):
    qa_without, ner_without = models_without_preprocessor
    qa_inputs = {"question": ["Who?"], "context": ["The fox."]}
    with pytest.raises(ValueError, match="no preprocessor.*`preprocessor=`"):
        qa_without.predict(qa_inputs)
    with pytest.raises(ValueError, match="no preprocessor.*`preprocessor=`"):
        ner_without.predict(["John lives in Paris."])


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"question": ["Who?"]}, r"missing: \['context'\]"),
        ({"context": ["The fox."]}, r"missing: \['question'\]"),
        (
            {"question": ["Who?"], "context": ["The fox."], "text": ["a"]},
            r"unknown: \['text'\]",
        ),
        (
            {"question": ["Who?", "Where?"], "context": ["The fox."]},
            "2 for `question`, 1 for `context`",
        ),
        ({"question": "Who?", "context": "The fox."}, "Wrap it in a list"),
        ({"question": [["Who?"]], "context": [["A"]]}, "flat list of str"),
    ],
)
def test_bad_question_answering_inputs(qa_model, inputs, message):
    with pytest.raises(ValueError, match=message):
        qa_model.predict(inputs, verbose=0, **QA_OPTIONS)


def test_bad_token_classification_inputs(ner_model):
    with pytest.raises(ValueError, match="one string.*Wrap it in a list"):
        ner_model.predict("John lives in Paris.")
    with pytest.raises(ValueError, match="`steps`"):
        ner_model.predict(["John"], steps=1)
    with pytest.raises(ValueError, match="`batch_size`"):
        ner_model.predict(["John"], batch_size=0)
    ids = ner_model.preprocessor(["john"])
    with pytest.raises(TypeError, match=r"\['stride'\].*raw text only"):
        ner_model.predict(ids, stride=3)


@pytest.mark.parametrize(
    "method",
    [
        keras_bert.BertQuestionAnswerer.predict,
        keras_bert.BertTokenClassifier.predict,
    ],
    ids=lambda method: method.__qualname__,
)
def test_docstring_examples_run(method, tmp_path, monkeypatch):
    """Each example runs and prints what its `# value` comments say."""
    run_docstring_example(method, tmp_path, monkeypatch)
