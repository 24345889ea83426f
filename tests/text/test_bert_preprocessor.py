import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.text.bert_preprocessor import _longest_first
from keras_bert.text.bert_preprocessor import _round_robin
from tests.helpers import assert_config_complete
from tests.helpers import run_model_saving_test
from tests.helpers import run_serialization_test
from tests.text.references import TINY_VOCABULARY


@pytest.fixture(scope="module")
def preprocessor():
    tokenizer = keras_bert.BertTokenizer(TINY_VOCABULARY)
    return keras_bert.BertPreprocessor(tokenizer, sequence_length=8)


def as_lists(outputs):
    return {k: v.numpy().tolist() for k, v in outputs.items()}


def test_single_text(preprocessor):
    out = as_lists(preprocessor(["the fox", "the quick brown foxes jumped"]))
    assert out["token_ids"] == [
        [2, 5, 8, 3, 0, 0, 0, 0],
        [2, 5, 6, 7, 8, 9, 15, 3],  # truncated to 8
    ]
    assert out["segment_ids"] == [[0] * 8, [0] * 8]
    assert out["padding_mask"] == [[1, 1, 1, 1, 0, 0, 0, 0], [1] * 8]


def test_pair(preprocessor):
    out = as_lists(preprocessor((["the fox"], ["dog ."])))
    assert out["token_ids"] == [[2, 5, 8, 3, 19, 10, 3, 0]]
    assert out["segment_ids"] == [[0, 0, 0, 0, 1, 1, 1, 0]]
    assert out["padding_mask"] == [[1, 1, 1, 1, 1, 1, 1, 0]]


def test_one_string_is_unbatched(preprocessor):
    out = preprocessor("the fox")
    assert out["token_ids"].shape == (8,)
    assert out["token_ids"].dtype == tf.int32


def test_longest_first_by_hand():
    # Budget 5: (1, 9) keeps the short one whole; (4, 4) splits 2 + 3
    # (the second text takes the odd token); (9, 2) -> (3, 2); (6, 7)
    # -> (2, 3); (2, 3) fits.
    a = tf.constant([1, 4, 9, 6, 2], tf.int64)
    b = tf.constant([9, 4, 2, 7, 3], tf.int64)
    keep_a, keep_b = _longest_first(a, b, 5)
    assert keep_a.numpy().tolist() == [1, 2, 3, 2, 2]
    assert keep_b.numpy().tolist() == [4, 3, 2, 3, 3]


def test_round_robin_by_hand():
    a = tf.constant([1, 4, 9, 6, 2], tf.int64)
    b = tf.constant([9, 4, 2, 7, 3], tf.int64)
    keep_a, keep_b = _round_robin(a, b, 5)
    assert keep_a.numpy().tolist() == [1, 3, 3, 3, 2]
    assert keep_b.numpy().tolist() == [4, 2, 2, 2, 3]


def test_labels_pass_through(preprocessor):
    x, y = preprocessor(["the fox"], y=tf.constant([1]))
    assert x["token_ids"].shape == (1, 8)
    assert y.numpy().tolist() == [1]


def test_in_tf_data(preprocessor):
    texts = tf.data.Dataset.from_tensor_slices(
        (["the fox", "dog"], ["a", "the lazy dog"])
    )
    dataset = texts.batch(2).map(lambda a, b: preprocessor((a, b)))
    batch = as_lists(next(iter(dataset)))
    expected = as_lists(
        preprocessor((["the fox", "dog"], ["a", "the lazy dog"]))
    )
    assert batch == expected
    labelled = tf.data.Dataset.from_tensor_slices((["the fox"], [1]))
    x, y = next(iter(labelled.batch(1).map(preprocessor)))
    assert x["token_ids"].shape == (1, 8)


def test_saved_model_round_trip(preprocessor, tmp_path):
    class Serving(tf.Module):
        def __init__(self, preprocessor):
            super().__init__()
            self.preprocessor = preprocessor

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def single(self, texts):
            return self.preprocessor(texts)

        @tf.function(
            input_signature=[
                tf.TensorSpec([None], tf.string),
                tf.TensorSpec([None], tf.string),
            ]
        )
        def pair(self, texts_a, texts_b):
            return self.preprocessor((texts_a, texts_b))

    path = str(tmp_path / "preprocessor")
    tf.saved_model.save(Serving(preprocessor), path)
    restored = tf.saved_model.load(path)
    texts = tf.constant(["The quick brown foxes!", "", "日本 é [MASK]"])
    assert as_lists(restored.single(texts)) == as_lists(preprocessor(texts))
    assert as_lists(restored.pair(texts, texts[::-1])) == as_lists(
        preprocessor((texts, texts[::-1]))
    )
    # Only core TensorFlow and tensorflow-text kernels: no Python callbacks.
    graph = restored.single.get_concrete_function().graph.as_graph_def()
    ops = {node.op for f in graph.library.function for node in f.node_def}
    assert not ops & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}


def test_config_and_serialization(preprocessor):
    assert_config_complete(preprocessor)
    rebuilt = run_serialization_test(preprocessor)
    texts = ["the quick brown fox", "日本"]
    assert as_lists(rebuilt(texts)) == as_lists(preprocessor(texts))
    restored = keras.layers.deserialize(keras.layers.serialize(preprocessor))
    assert restored.tokenizer.vocabulary == TINY_VOCABULARY


def test_errors_name_the_bad_value(preprocessor):
    tokenizer = preprocessor.tokenizer
    with pytest.raises(ValueError, match="sequence_length=2"):
        keras_bert.BertPreprocessor(tokenizer, sequence_length=2)
    with pytest.raises(ValueError, match="truncate='shortest'"):
        keras_bert.BertPreprocessor(tokenizer, truncate="shortest")
    with pytest.raises(ValueError, match="tokenizer="):
        keras_bert.BertPreprocessor("vocab.txt")
    with pytest.raises(ValueError, match="tuple of 3"):
        preprocessor((["a"], ["a"], ["a"]))


def test_feeds_the_backbone(preprocessor):
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(TINY_VOCABULARY),
        num_layers=1,
        num_heads=2,
        hidden_dim=4,
        intermediate_dim=8,
        max_sequence_length=8,
    )
    outputs = backbone(preprocessor((["the fox"], ["a dog"])))
    assert outputs["pooled_output"].shape == (1, 4)
    assert np.all(np.isfinite(outputs["sequence_output"]))


def test_docstring_example():
    vocabulary = TINY_VOCABULARY[:11]
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    preprocessor = keras_bert.BertPreprocessor(tokenizer, sequence_length=8)
    inputs = as_lists(preprocessor(["The fox."]))
    assert inputs["token_ids"] == [[2, 5, 8, 10, 3, 0, 0, 0]]
    assert inputs["padding_mask"] == [[1, 1, 1, 1, 1, 0, 0, 0]]
    inputs = as_lists(preprocessor((["The quick fox."], ["The foxes."])))
    assert inputs["token_ids"] == [[2, 5, 6, 3, 5, 8, 9, 3]]
    assert inputs["segment_ids"] == [[0, 0, 0, 0, 1, 1, 1, 1]]


def test_keras_file_round_trip(preprocessor):
    # A functional model from raw strings to the backbone inputs, saved to
    # and loaded from a .keras file.
    texts = keras.Input(shape=(), dtype="string", name="text")
    model = keras.Model(texts, preprocessor(texts))
    run_model_saving_test(model, np.array(["The quick fox!", "", "日本 é"]))


def test_compiled_functions_run_without_autograph(preprocessor):
    """Converting the tokenizer's code with autograph took 5.6 of the 9 s
    of a fresh model's first call (benchmarks/first_call_latency.py
    --fresh), so the compiled functions are traced without it. Every
    eager call in this file runs through them (`_preprocess`): a piece of
    the tokenizer that needed autograph would fail those at trace time."""
    for num_texts in (1, 2):
        assert preprocessor.batch_function(num_texts)._autograph is False
    assert (
        preprocessor._compiled_function(1, unbatched=True)._autograph is False
    )
