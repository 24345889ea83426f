"""Raw-text entities in the graph: the same as `find_entities` in Python.

A tiny random `BertTokenClassifier` whose head is scaled up, so that its
tags vary from word to word and make many entities (ill-formed sequences
such as `I-` after `O` included), tags texts cut into windows of 8
positions. The `serving_default` endpoint (graph ops) must return exactly
the entities of `find_entities` (Python: `word_predictions` +
`metrics.get_entities`), in process and after a SavedModel round trip; the
SavedModel holds only core TensorFlow and TF Serving's tensorflow-text ops.
"""

import functools
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.decoding.entities import entities_from_windows
from keras_bert.decoding.entities import label_codes
from keras_bert.decoding.entities import word_numbers
from keras_bert.fine_tuning.ner.entities import find_entities
from keras_bert.serving import TF_SERVING_TEXT_OPS
from keras_bert.serving import export_saved_model
from keras_bert.serving import saved_model_op_types
from keras_bert.serving import serving_endpoints
from keras_bert.serving.ops import PYTHON_OPS
from keras_bert.text.token_windows import window_tokens
from keras_bert.training.ner_features import INPUT_NAMES
from keras_bert.training.ner_features import word_predictions
from keras_bert.training.ner_metrics import get_entities
from tests.helpers import non_core_ops
from tests.helpers import tiny_backbone_config

VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "lives", "in",
    "new", "york", "##er", "paris", ".", ",", "the", "a", "##s", "café",
]  # fmt: skip
BIO = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
IOBES = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC"]
IOBES += ["S-LOC"]
SEQUENCE_LENGTH = 8
STRIDE = 3

WORDS = [
    "John", "lives", "in", "New", "Yorker", "Paris", ".", ",", "the", "as",
    "ünknown", "Café", "PÄRIS", "日本", "Yorkerererer", "[MASK]",
]  # fmt: skip
SPECIAL_TEXTS = [
    "",
    " ",
    "   \t\n ",
    "John",
    "John\xa0lives\u200b in Paris",  # no-break space, zero-width space
    "\x00\ufffd",  # only characters that cleaning drops
    "  John lives in New Yorker Paris Paris Paris the Paris.  ",
    "日本 John 本日 Paris 🙂 lives",
    "Yorkerererererer John",  # one word longer than a window
    "PÄRIS, café; NEW yorker!",
]
# Not valid UTF-8: stray continuation bytes, a surrogate, an overlong
# form, a truncated sequence. Offsets count the code points of the text
# decoded with U+FFFD per invalid sequence (Python's "replace").
INVALID_UTF8 = [
    b"\xff\xfeJohn lives in Paris",
    b"\x80\x80John lives in New Yorker",
    b"Paris \xed\xa0\x80 John \xc0\xaf lives \xe2\x82 in Paris",
    b"New \xf4\x90\x80\x80 Yorker \xe2\x82\x82\x82 the John .",
]


def random_texts(count, seed=0):
    rng = np.random.default_rng(seed)
    return [
        " ".join(rng.choice(WORDS, size=rng.integers(0, 30)))
        for _ in range(count)
    ]


TEXTS = random_texts(36) + SPECIAL_TEXTS  # ~50 with the invalid ones


def tagger(labels, seed=1):
    keras.utils.set_random_seed(seed)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY), num_layers=1)
    )
    model = keras_bert.BertTokenClassifier(backbone, len(labels), labels=labels)
    # Large head weights: confident, varied tags, so many entities.
    rng = np.random.default_rng(seed)
    model.output_dense.kernel.assign(
        rng.normal(size=(8, len(labels))).astype("float32") * 3
    )
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(VOCABULARY), sequence_length=SEQUENCE_LENGTH
    )
    return model, preprocessor


@pytest.fixture(scope="module")
def bio_tagger():
    return tagger(BIO)


@pytest.fixture(scope="module")
def iobes_tagger():
    return tagger(IOBES, seed=2)


@functools.lru_cache(maxsize=None)  # one traced graph per model
def graph_endpoint(model, preprocessor, name="serving_default"):
    function, signature = serving_endpoints(model, preprocessor, stride=STRIDE)[
        name
    ]
    return tf.function(function, input_signature=signature)


def decoded(text):
    if isinstance(text, bytes):
        return text.decode("utf-8", "replace")
    return text


def served_entities(outputs, texts):
    """The endpoint's outputs as `find_entities`' lists; checks padding."""
    outputs = {name: np.asarray(value) for name, value in outputs.items()}
    num_entities = outputs["num_entities"]
    assert num_entities.shape == (len(texts),)
    assert outputs["num_entities"].dtype == np.int32
    width = outputs["entity"].shape[1]
    assert width == max(num_entities, default=0)
    for name in ("entity", "entity_type", "start", "end", "score"):
        assert outputs[name].shape == (len(texts), width), name
    assert outputs["start"].dtype == outputs["end"].dtype == np.int32
    assert outputs["score"].dtype == np.float32
    results = []
    for row, count in enumerate(num_entities):
        # Padding beyond each text's entities.
        assert all(e == b"" for e in outputs["entity"][row, count:])
        assert all(e == b"" for e in outputs["entity_type"][row, count:])
        assert (outputs["start"][row, count:] == -1).all()
        assert (outputs["end"][row, count:] == -1).all()
        assert (outputs["score"][row, count:] == 0.0).all()
        results.append(
            [
                {
                    # Strict: the entity is always valid UTF-8.
                    "entity": outputs["entity"][row, j].decode("utf-8"),
                    "type": outputs["entity_type"][row, j].decode("utf-8"),
                    "start": int(outputs["start"][row, j]),
                    "end": int(outputs["end"][row, j]),
                    "score": float(outputs["score"][row, j]),
                }
                for j in range(count)
            ]
        )
    return results


def assert_same_entities(served, expected, texts):
    assert len(served) == len(expected) == len(texts)
    for index, (mine, theirs, text) in enumerate(zip(served, expected, texts)):
        text = decoded(text)
        key = ("entity", "type", "start", "end")
        assert [tuple(e[k] for k in key) for e in mine] == [
            tuple(e[k] for k in key) for e in theirs
        ], (index, text)
        np.testing.assert_allclose(
            [e["score"] for e in mine],
            [e["score"] for e in theirs],
            atol=1e-5,
            err_msg=f"text {index}: {text!r}",
        )
        for entity in mine:
            assert text[entity["start"] : entity["end"]] == entity["entity"]
            assert entity["start"] < entity["end"]
            assert 0 < entity["score"] <= 1


def check_against_python(model, preprocessor, texts):
    serve = graph_endpoint(model, preprocessor)
    served = served_entities(serve(tf.constant(texts)), texts)
    expected = find_entities(
        model, preprocessor, [decoded(t) for t in texts], stride=STRIDE
    )
    assert_same_entities(served, expected, texts)
    return served


# === The graph's entities are find_entities' ===


@pytest.mark.slow  # tens of seconds on two cores
def test_bio_entities_match_find_entities(bio_tagger):
    model, preprocessor = bio_tagger
    served = check_against_python(model, preprocessor, TEXTS)
    # The test means something: many entities, in texts of many windows.
    entities = [e for row in served for e in row]
    assert len(entities) > 100
    assert {e["type"] for e in entities} == {"PER", "LOC"}
    assert any(e["start"] > 60 for e in entities)  # beyond the first window
    assert any(len(e["entity"].split()) > 1 for e in entities)
    for index in range(3):  # "", " ", whitespace
        assert served[TEXTS.index(SPECIAL_TEXTS[index])] == []


def word_tags(model, preprocessor, texts):
    """Each word's predicted tag, as `find_entities` and the graph read them."""
    tokenizer = preprocessor.tokenizer
    ids, _, _ = tokenizer.tokenize_with_offsets(tf.constant(texts))
    continues = tf.constant([t.startswith("##") for t in VOCABULARY])
    word_index = ids.with_flat_values(
        word_numbers(tf.gather(continues, ids.flat_values), ids)
    )
    windows = window_tokens(tokenizer, ids, word_index, SEQUENCE_LENGTH, STRIDE)
    windows = {name: value.numpy() for name, value in windows.items()}
    logits = model.predict(
        {name: windows[name] for name in INPUT_NAMES}, verbose=0
    )
    num_words = [max(row, default=-1) + 1 for row in word_index.to_list()]
    labels, _ = word_predictions(windows, logits, num_words, outside_id=0)
    return [[model.label_names[i] for i in row] for row in labels]


def test_the_texts_hold_ill_formed_tag_sequences(bio_tagger, iobes_tagger):
    # What the comparisons cover, read with conlleval's rules: I- after O
    # (or first), B-X B-X, a type switch into I-; with IOBES, E- after O,
    # I- after E- or S-, E- of another type.
    tags = word_tags(*bio_tagger, TEXTS)
    pairs = {(a, b) for row in tags for a, b in zip(["O", *row], row)}
    assert ("O", "I-LOC") in pairs or ("O", "I-PER") in pairs
    assert ("B-PER", "B-PER") in pairs and ("B-LOC", "B-LOC") in pairs
    assert ("B-PER", "I-LOC") in pairs or ("B-LOC", "I-PER") in pairs
    tags = word_tags(*iobes_tagger, TEXTS)
    pairs = {(a, b) for row in tags for a, b in zip(["O", *row], row)}
    assert {("O", "E-PER"), ("S-PER", "I-PER"), ("E-LOC", "I-LOC")} <= pairs
    assert {("B-LOC", "E-PER"), ("S-PER", "S-PER")} <= pairs


def test_iobes_entities_match_find_entities(iobes_tagger):
    model, preprocessor = iobes_tagger
    served = check_against_python(model, preprocessor, TEXTS)
    assert sum(len(row) for row in served) > 100


def test_invalid_utf8_texts(bio_tagger):
    model, preprocessor = bio_tagger
    texts = INVALID_UTF8 + ["John lives in Paris"]
    served = check_against_python(model, preprocessor, texts)
    assert sum(len(row) for row in served[:-1]) > 3


def test_a_batch_of_only_empty_texts_and_an_empty_batch(bio_tagger):
    model, preprocessor = bio_tagger
    serve = graph_endpoint(model, preprocessor)
    texts = ["", "  ", "\x00"]
    assert served_entities(serve(tf.constant(texts)), texts) == [[], [], []]
    outputs = serve(tf.constant([], tf.string))
    assert served_entities(outputs, []) == []


def test_the_batch_does_not_change_a_texts_entities(bio_tagger):
    model, preprocessor = bio_tagger
    serve = graph_endpoint(model, preprocessor)
    together = served_entities(serve(tf.constant(TEXTS[:12])), TEXTS[:12])
    for index in (0, 5, 11):
        alone = served_entities(
            serve(tf.constant([TEXTS[index]])), [TEXTS[index]]
        )
        assert_same_entities(alone, together[index : index + 1], [TEXTS[index]])


# === entities_from_windows on hand-made tags ===

HAND_LABELS = BIO


def entities_of_word_tags(text, word_tags, labels=HAND_LABELS):
    """`entities_from_windows` when each word's logits pick `word_tags`.

    Runs the serving pipeline (tokens with offsets, words, windows of 8
    positions) and puts a large logit on each word's tag at every position
    of every window.
    """
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    texts = tf.constant([text])
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    continues = tf.constant([t.startswith("##") for t in VOCABULARY])
    word_index = ids.with_flat_values(
        word_numbers(tf.gather(continues, ids.flat_values), ids)
    )
    assert int(tf.reduce_max(word_index.flat_values)) + 1 == len(word_tags)
    windows = window_tokens(tokenizer, ids, word_index, SEQUENCE_LENGTH, 2)
    label_id = np.array([labels.index(tag) for tag in word_tags])
    words = windows["word_index"].numpy()
    logits = np.zeros(words.shape + (len(labels),), np.float32)
    rows, columns = np.nonzero(words >= 0)
    logits[rows, columns, label_id[words[rows, columns]]] = 20.0
    prefixes, types = label_codes(labels)
    outputs = entities_from_windows(
        windows,
        tf.constant(logits),
        texts,
        token_starts=starts,
        token_ends=ends,
        word_index=word_index,
        prefixes=prefixes,
        types=types,
    )
    return served_entities(outputs, [text])[0]


# (text, one tag per word, the entities' texts and types)
HAND_CASES = [
    # I- after O starts an entity.
    (
        "John lives in Paris",
        ["O", "O", "I-LOC", "I-LOC"],
        [("in Paris", "LOC")],
    ),
    # B- right after B- of the same type: two entities.
    (
        "John John lives",
        ["B-PER", "B-PER", "O"],
        [("John", "PER"), ("John", "PER")],
    ),
    # A type switch inside I- tags ends one entity and starts another.
    (
        "John Paris lives",
        ["I-PER", "I-LOC", "I-LOC"],
        [("John", "PER"), ("Paris lives", "LOC")],
    ),
    # An entity at the very end of the text, then trailing space.
    (
        "lives in New Yorker  ",
        ["O", "O", "B-LOC", "I-LOC"],
        [("New Yorker", "LOC")],
    ),
    # A word of several WordPieces (`york ##er ##s`) inside an entity;
    # the text spans windows of 6 tokens.
    (
        "the a the a the New Yorkers in Paris",
        ["O", "O", "O", "O", "O", "B-LOC", "I-LOC", "O", "B-PER"],
        [("New Yorkers", "LOC"), ("Paris", "PER")],
    ),
    # One-word entities at both ends; punctuation is a word of its own.
    (
        "Paris, John.",
        ["B-LOC", "O", "I-PER", "I-PER"],
        [("Paris", "LOC"), ("John.", "PER")],
    ),
]


@pytest.mark.parametrize("text, word_tags, expected", HAND_CASES)
def test_entities_from_windows_reads_tags_as_get_entities(
    text, word_tags, expected
):
    entities = entities_of_word_tags(text, word_tags)
    assert [(e["entity"], e["type"]) for e in entities] == expected
    assert len(entities) == len(get_entities(word_tags))
    for entity, (entity_type, _, _) in zip(entities, get_entities(word_tags)):
        assert entity["type"] == entity_type
        assert text[entity["start"] : entity["end"]] == entity["entity"]
        assert entity["start"] < entity["end"]
        # Confident logits: every word's probability is ~1.
        assert entity["score"] == pytest.approx(1.0, abs=1e-6)


def test_entities_from_windows_iobes_rules():
    # E- and S- close entities; I- after E- starts a new one.
    text = "John lives in New Yorker Paris"
    tags = ["S-PER", "B-LOC", "E-LOC", "I-LOC", "E-LOC", "S-LOC"]
    entities = entities_of_word_tags(text, tags, labels=IOBES)
    assert [(e["entity"], e["type"]) for e in entities] == [
        ("John", "PER"),
        ("lives in", "LOC"),
        ("New Yorker", "LOC"),
        ("Paris", "LOC"),
    ]
    assert [(t, a, b) for t, a, b in get_entities(tags)] == [
        ("PER", 0, 0),
        ("LOC", 1, 2),
        ("LOC", 3, 4),
        ("LOC", 5, 5),
    ]


# === The exported SavedModel ===


@pytest.fixture(scope="module")
def export_path(bio_tagger, tmp_path_factory):
    model, preprocessor = bio_tagger
    return export_saved_model(
        model,
        preprocessor,
        str(tmp_path_factory.mktemp("ner_export")),
        stride=STRIDE,
    )


@pytest.fixture(scope="module")
def exported(export_path):
    return tf.saved_model.load(export_path)


def test_export_serves_the_in_process_entities(bio_tagger, exported):
    model, preprocessor = bio_tagger
    texts = TEXTS[:20] + SPECIAL_TEXTS + INVALID_UTF8
    serve = exported.signatures["serving_default"]
    served = served_entities(serve(text=tf.constant(texts)), texts)
    in_process = served_entities(
        graph_endpoint(model, preprocessor)(tf.constant(texts)), texts
    )
    assert_same_entities(served, in_process, texts)
    assert sum(len(row) for row in served) > 50


def test_export_predict_ids(bio_tagger, exported):
    model, preprocessor = bio_tagger
    features = preprocessor(tf.constant(["John lives in Paris", "New York"]))
    outputs = exported.signatures["predict_ids"](
        token_ids=tf.cast(features["token_ids"], tf.int32),
        segment_ids=tf.cast(features["segment_ids"], tf.int32),
        padding_mask=tf.cast(features["padding_mask"], tf.int32),
    )
    assert outputs["logits"].shape == (2, SEQUENCE_LENGTH, len(BIO))
    assert outputs["logits"].dtype == tf.float32
    assert outputs["label_id"].shape == (2, SEQUENCE_LENGTH)
    assert outputs["label_id"].dtype == tf.int32
    assert outputs["label"].shape == (2, SEQUENCE_LENGTH)
    expected = model.predict(
        {name: np.asarray(value) for name, value in features.items()},
        verbose=0,
    )
    np.testing.assert_allclose(outputs["logits"], expected, atol=1e-5)
    label_id = outputs["label_id"].numpy()
    np.testing.assert_array_equal(label_id, expected.argmax(-1))
    assert outputs["label"].numpy().tolist() == [
        [BIO[i].encode() for i in row] for row in label_id
    ]


@pytest.mark.slow  # ten seconds on two cores
def test_only_core_and_tf_serving_text_ops(export_path, tmp_path):
    ops = saved_model_op_types(export_path)
    # Core ops are those a bare TensorFlow knows.
    non_core = non_core_ops(ops, tmp_path)
    assert "FastWordpieceTokenizeWithOffsets" in non_core  # the check sees them
    assert non_core <= TF_SERVING_TEXT_OPS, non_core - TF_SERVING_TEXT_OPS
    assert not PYTHON_OPS & set(ops)


# === Labels ===


@pytest.mark.parametrize(
    "bad", ["X-PER", "PER", "B-", "b-PER", "BB-PER", "LABEL_0", ""]
)
def test_label_codes_reject_a_non_bio_label(bad):
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        label_codes(["O", "B-PER", bad])


def test_label_codes():
    assert label_codes(IOBES) == (
        [0, 1, 2, 3, 4, 1, 2, 3, 4],
        ["", "PER", "PER", "PER", "PER", "LOC", "LOC", "LOC", "LOC"],
    )


def test_a_model_without_bio_labels_cannot_serve_entities(bio_tagger):
    _, preprocessor = bio_tagger
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(vocabulary_size=len(VOCABULARY), num_layers=1)
    )
    model = keras_bert.BertTokenClassifier(backbone, 3)
    with pytest.raises(ValueError, match="'LABEL_0'"):
        serving_endpoints(model, preprocessor)
    # Labels given at export time serve.
    endpoints = serving_endpoints(
        model, preprocessor, labels=["O", "B-PER", "I-PER"]
    )
    assert set(endpoints) == {"serving_default", "predict_ids"}
    with pytest.raises(ValueError, match="3 classes but 2 labels"):
        serving_endpoints(model, preprocessor, labels=["O", "B-PER"])
