"""Small `predict` calls and `encode` run one compiled function per kind."""

import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.models import xla_buckets
from tests.helpers import tiny_backbone_config
from tests.models.test_raw_text import VOCABULARY

TEXTS = [
    "a good film .",
    "the book was very very long and bad .",
    "good",
    "a bad film",
    "",
]
SECOND_TEXTS = ["good", "a film", "bad book", "long", "the book"]
MASKED_TEXTS = ["a [MASK] film", "[MASK] was [MASK] long .", "good"]


def preprocessor(sequence_length=16):
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=sequence_length
    )


def backbone(seed=0):
    keras.utils.set_random_seed(seed)
    return keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=len(VOCABULARY), max_sequence_length=32
        )
    )


@pytest.fixture(scope="module")
def models():
    shared = backbone()
    return {
        "classifier": keras_bert.BertClassifier(
            shared, num_classes=3, preprocessor=preprocessor()
        ),
        "embedder": keras_bert.BertTextEmbedder(
            shared, preprocessor=preprocessor()
        ),
        "masked_lm": keras_bert.BertMaskedLM(
            shared, preprocessor=preprocessor()
        ),
        "token_classifier": keras_bert.BertTokenClassifier(
            shared, num_classes=3, preprocessor=preprocessor()
        ),
        "question_answerer": keras_bert.BertQuestionAnswerer(
            shared, preprocessor=preprocessor()
        ),
    }


def ids(texts, with_positions=False):
    features = {
        name: value.numpy() for name, value in preprocessor()(texts).items()
    }
    if with_positions:
        features["masked_positions"] = np.array([[1, 2]] * len(texts))
    return features


def batched(model, x, **kwargs):
    """Keras' own `predict` loop: a `callbacks` list always takes it."""
    return model.predict(x, callbacks=[], verbose=0, **kwargs)


def assert_close(actual, expected):
    tf.nest.map_structure(
        lambda a, e: np.testing.assert_allclose(a, e, atol=1e-6),
        actual,
        expected,
    )


CASES = [
    ("classifier", TEXTS),
    ("classifier", (TEXTS, SECOND_TEXTS)),
    ("classifier", ids(TEXTS)),
    ("embedder", TEXTS),
    ("embedder", np.array(TEXTS)),
    ("masked_lm", MASKED_TEXTS),
    ("masked_lm", ids(TEXTS, with_positions=True)),
    ("token_classifier", ids(TEXTS)),
    ("question_answerer", ids(TEXTS)),
]


@pytest.mark.parametrize(
    "name, x",
    CASES,
    ids=[
        "classifier_text",
        "classifier_pair",
        "classifier_ids",
        "embedder_text",
        "embedder_array",
        "masked_lm_text",
        "masked_lm_ids",
        "token_classifier_ids",
        "question_answerer_ids",
    ],  # fmt: skip
)
def test_small_calls_equal_the_batched_path_without_its_loop(models, name, x):
    model = models[name]
    model.predict_function = None
    fast = model.predict(x)
    assert model.predict_function is None  # Keras' step never ran
    assert_close(fast, batched(model, x))
    assert_close(fast, batched(model, x, batch_size=2))
    assert tf.nest.map_structure(type, fast) == tf.nest.map_structure(
        lambda _: np.ndarray, fast
    )


def test_new_lengths_and_batch_sizes_trace_nothing_new(models):
    model = models["classifier"]
    model.predict(["good"])
    function = model._small_calls.functions[("text", 1)]
    for count in range(1, 6):
        model.predict(["a good film ."[: 2 * count + 1]] * count)
        model.predict(["very " * (3 * count)])
    assert function.experimental_get_tracing_count() == 1


def test_more_than_batch_size_examples_take_the_batched_path():
    model = keras_bert.BertClassifier(
        backbone(), num_classes=2, preprocessor=preprocessor()
    )
    expected = model.predict(TEXTS[:2])
    assert model.predict_function is None
    outputs = model.predict(TEXTS, batch_size=2, verbose=0)
    assert model.predict_function is not None
    np.testing.assert_allclose(outputs[:2], expected, atol=1e-6)


@pytest.mark.slow  # tens of seconds on two cores
def test_structure_changes_rebuild_the_function_and_values_need_not():
    model = keras_bert.BertClassifier(
        backbone(), num_classes=2, preprocessor=preprocessor()
    )
    before = model.predict(TEXTS)
    # New values: the same graph reads them.
    other = keras_bert.BertClassifier(
        backbone(seed=1), num_classes=2, preprocessor=preprocessor()
    )
    model.set_weights(other.get_weights())
    function = model._small_calls.functions[("text", 1)]
    np.testing.assert_allclose(
        model.predict(TEXTS), other.predict(TEXTS), atol=1e-6
    )
    assert model._small_calls.functions[("text", 1)] is function
    # LoRA adds variables: a new function, reading the LoRA weights.
    model.backbone.enable_lora(rank=2)
    for variable in model.weights:
        if "lora_kernel_b" in variable.path:
            variable.assign(np.full(variable.shape, 0.5, "float32"))
    after = model.predict(TEXTS)
    assert np.abs(after - before).max() > 1e-3
    assert model._small_calls.functions[("text", 1)] is not function
    np.testing.assert_allclose(after, batched(model, TEXTS), atol=1e-6)
    # A new preprocessor: a new function, tokenizing with it.
    model.preprocessor = preprocessor(sequence_length=4)
    np.testing.assert_allclose(
        model.predict(TEXTS), batched(model, TEXTS), atol=1e-6
    )


@pytest.mark.slow  # tens of seconds on two cores
def test_text_functions_of_the_heads_see_lora_too():
    questions = {"question": ["a good film ?"], "context": [TEXTS[1]]}

    def answerer():
        model = keras_bert.BertQuestionAnswerer(
            backbone(), preprocessor=preprocessor()
        )
        return model

    def with_lora(model):
        model.backbone.enable_lora(rank=2)
        for variable in model.weights:
            if "lora_kernel_b" in variable.path:
                variable.assign(np.full(variable.shape, 3.0, "float32"))
        return model

    model = answerer()
    before = model.predict(
        questions, max_query_length=4, doc_stride=4, verbose=0
    )
    after = with_lora(model).predict(
        questions, max_query_length=4, doc_stride=4, verbose=0
    )
    fresh = with_lora(answerer()).predict(
        questions, max_query_length=4, doc_stride=4, verbose=0
    )
    assert abs(after["score"][0] - before["score"][0]) > 1e-3
    np.testing.assert_allclose(after["score"], fresh["score"], atol=1e-5)


@pytest.mark.slow  # tens of seconds on two cores
def test_xla_pads_to_buckets_to_the_same_outputs():
    model = keras_bert.BertTextEmbedder(backbone(), preprocessor=preprocessor())
    expected = model.predict(TEXTS)
    model.jit_compile = True
    np.testing.assert_allclose(model.predict(TEXTS), expected, atol=1e-5)
    np.testing.assert_allclose(
        model.predict(TEXTS[1:2]), expected[1:2], atol=1e-5
    )
    features = xla_buckets.padded(ids(TEXTS[:3]), longest=16)
    assert features["token_ids"].shape == (4, 16)  # 3 rows, 16 columns
    assert int(xla_buckets.bucket(tf.constant(5))) == 8
    assert int(xla_buckets.bucket(tf.constant(8))) == 8
    assert int(xla_buckets.bucket(tf.constant(1))) == 1


@pytest.mark.parametrize(
    "name, x, shape",
    [
        ("classifier", [], (0, 3)),
        ("classifier", ([], []), (0, 3)),
        ("classifier", {k: v[:0] for k, v in ids(TEXTS).items()}, (0, 3)),
        ("embedder", np.array([], str), (0, 8)),
        ("masked_lm", [], None),
        ("token_classifier", {k: v[:0] for k, v in ids(TEXTS).items()}, None),
        ("question_answerer", ([], []), None),
    ],
    ids=["classifier", "pair", "ids", "embedder", "masked_lm", "tokens", "qa"],
)
def test_empty_inputs_give_empty_outputs_at_once(models, name, x, shape):
    model = models[name].__class__.from_config(models[name].get_config())
    start = time.perf_counter()
    outputs = model.predict(x)
    assert time.perf_counter() - start < 0.5
    assert not hasattr(model, "_small_calls")  # nothing built or traced
    for output, spec in zip(
        tf.nest.flatten(outputs), tf.nest.flatten(model.output)
    ):
        assert output.shape == (0,) + tuple(d or 0 for d in spec.shape[1:])
        assert output.dtype == spec.dtype
    if shape:
        assert outputs.shape == shape


# === evaluate ===

LABELS = np.array([0, 2, 1, 1, 0])
OTHER_LABELS = np.array([1, 1, 2, 0, 2])
WEIGHTS = np.array([1.0, 0.5, 2.0, 1.0, 0.0])


def compiled_copy(models, name):
    model = models[name].__class__.from_config(models[name].get_config())
    model.set_weights(models[name].get_weights())
    model.compile()
    return model


@pytest.mark.parametrize(
    "x, kwargs",
    [
        (TEXTS, {}),
        pytest.param((TEXTS, SECOND_TEXTS), {}, marks=pytest.mark.slow),
        (ids(TEXTS), {}),
        pytest.param(TEXTS, {"sample_weight": WEIGHTS}, marks=pytest.mark.slow),
        pytest.param(TEXTS, {"return_dict": True}, marks=pytest.mark.slow),
    ],
    ids=["text", "pair", "ids", "sample_weight", "return_dict"],
)
def test_small_evaluate_equals_keras_evaluate(models, x, kwargs):
    model = compiled_copy(models, "classifier")

    def values(result):
        return list(result.values()) if kwargs.get("return_dict") else result

    expected = model.evaluate(x, LABELS, callbacks=[], verbose=0, **kwargs)
    other = model.evaluate(x, OTHER_LABELS, callbacks=[], verbose=0, **kwargs)
    assert not np.allclose(values(other), values(expected))
    model.test_function = None
    fast = model.evaluate(x, LABELS, **kwargs)
    assert model.test_function is None  # Keras' step never ran
    kind = "evaluate ids" if isinstance(x, dict) else "evaluate text"
    assert any(k[0] == kind for k in model._small_calls.functions)
    if kwargs.get("return_dict"):
        assert list(fast) == list(expected)
    assert len(values(fast)) == len(values(expected)) == 2  # loss, accuracy
    np.testing.assert_allclose(values(fast), values(expected), rtol=1e-6)
    # Metrics start over on each call, as Keras' evaluate resets them: a
    # second call on other labels equals Keras' loop on those labels, not
    # a running mean over both calls.
    again = model.evaluate(x, OTHER_LABELS, **kwargs)
    assert model.test_function is None
    np.testing.assert_allclose(values(again), values(other), rtol=1e-6)


@pytest.mark.slow  # tens of seconds on two cores
def test_small_evaluate_of_a_multi_output_head(models):
    model = compiled_copy(models, "question_answerer")
    labels = {"start_logits": LABELS, "end_logits": LABELS + 1}
    other_labels = {"start_logits": OTHER_LABELS, "end_logits": OTHER_LABELS}
    expected = model.evaluate(ids(TEXTS), labels, callbacks=[], verbose=0)
    # Keras' loop leaves the metrics holding the other labels' values.
    other = model.evaluate(ids(TEXTS), other_labels, callbacks=[], verbose=0)
    assert not np.allclose(other, expected)
    model.test_function = None
    fast = model.evaluate(ids(TEXTS), labels)
    assert model.test_function is None
    np.testing.assert_allclose(fast, expected, rtol=1e-6)


@pytest.mark.slow  # tens of seconds on two cores
def test_first_evaluate_and_large_inputs_take_keras_loop(models):
    model = compiled_copy(models, "classifier")
    model.evaluate(TEXTS, LABELS, verbose=0)  # builds the metrics
    assert not hasattr(model, "_small_calls")
    model.test_function = None
    model.evaluate(TEXTS, LABELS, batch_size=2, verbose=0)
    assert model.test_function is not None


@pytest.mark.slow  # tens of seconds on two cores
def test_predict_and_evaluate_refuse_the_other_text_layout(models):
    model = compiled_copy(models, "classifier")
    model.fit(TEXTS, LABELS, verbose=0)
    assert model.pair is False
    pairs = (TEXTS, SECOND_TEXTS)
    with pytest.raises(ValueError, match="single texts"):
        model.predict(pairs)
    with pytest.raises(ValueError, match="single texts"):
        model.evaluate(pairs, LABELS)
    with pytest.raises(ValueError, match="single texts"):
        model.fit(TEXTS, LABELS, validation_data=(pairs, LABELS), verbose=0)


# === BertTextEmbedder.encode ===


def test_encode_is_predict_in_sentence_transformers_shapes(models):
    model = models["embedder"]
    expected = model.predict(TEXTS)
    assert_close(model.encode(TEXTS), expected)
    single = model.encode(TEXTS[1])
    assert single.shape == (8,)
    assert_close(single, expected[1])
    tensor = model.encode(TEXTS, convert_to_numpy=False)
    assert isinstance(tensor, tf.Tensor)
    assert_close(tensor.numpy(), expected)
    empty = model.encode([])
    assert empty.shape == (0, 8) and empty.dtype == np.float32
    # Batched, longest first, back in order.
    assert_close(model.encode(TEXTS, batch_size=2), expected)
    assert_close(
        model.encode(TEXTS * 3, batch_size=4, show_progress_bar=True),
        np.concatenate([expected] * 3),
    )


def test_encode_normalizes_as_asked(models):
    normalized = models["embedder"]
    raw = keras_bert.BertTextEmbedder(
        normalized.backbone, normalize=False, preprocessor=preprocessor()
    )
    assert_close(
        normalized.encode(TEXTS, normalize_embeddings=False), raw.predict(TEXTS)
    )
    assert_close(
        raw.encode(TEXTS, normalize_embeddings=True), normalized.predict(TEXTS)
    )
    assert_close(raw.encode(TEXTS), raw.predict(TEXTS))
    norms = np.linalg.norm(raw.encode(TEXTS[:4]), axis=-1)
    assert np.abs(norms - 1).max() > 1e-3  # really not normalized


def test_encode_errors_name_the_fix(models):
    with pytest.raises(ValueError, match="normalize_embeddings='yes'"):
        models["embedder"].encode(TEXTS, normalize_embeddings="yes")
    with pytest.raises(ValueError, match="batch_size"):
        models["embedder"].encode(TEXTS, batch_size=0)
    with pytest.raises(ValueError, match="`sentences`"):
        models["embedder"].encode(["good", 3])
    bare = keras_bert.BertTextEmbedder(models["embedder"].backbone)
    with pytest.raises(ValueError, match="preprocessor="):
        bare.encode(TEXTS)


def test_similarity_answers_numpy_for_numpy(models):
    embeddings = models["embedder"].encode(TEXTS)
    scores = keras_bert.similarity(embeddings[:1], embeddings)
    assert isinstance(scores, np.ndarray) and scores.shape == (1, 5)
    values, indices = keras_bert.top_k_search(embeddings[:2], embeddings, 2)
    assert isinstance(values, np.ndarray) and isinstance(indices, np.ndarray)
    np.testing.assert_array_equal(indices[:, 0], [0, 1])
    tensors = tf.constant(embeddings)
    assert tf.is_tensor(keras_bert.similarity(tensors, tensors))
    assert tf.is_tensor(keras_bert.top_k_search(tensors, tensors, 2)[0])
