"""TF Serving's warmup requests in every export: one per signature, read
with TF Serving's own protos (`tensorflow-serving-api`, a reference) and
replayed as TF Serving replays them at load: each request's tensors fed
to its signature in a C++ Session."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

import keras_bert
from keras_bert.serving import export_saved_model
from keras_bert.serving.warmup import WARMUP_FILE
from keras_bert.serving.warmup import WARMUP_TEXT
from tests.helpers import EXPORT_VOCABULARY
from tests.helpers import tiny_backbone_config


def _backbone():
    return keras_bert.BertBackbone(
        **tiny_backbone_config(
            vocabulary_size=len(EXPORT_VOCABULARY), max_sequence_length=32
        )
    )


def _preprocessor(sequence_length=16):
    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(EXPORT_VOCABULARY),
        sequence_length=sequence_length,
    )


# Every kind of model an export serves: (model, export options).
MODELS = {
    "classifier": lambda: (keras_bert.BertClassifier(_backbone(), 3), {}),
    "pair_classifier": lambda: (
        keras_bert.BertClassifier(_backbone(), 2),
        {"pair": True},
    ),
    "regressor": lambda: (keras_bert.BertClassifier(_backbone(), 1), {}),
    "backbone": lambda: (_backbone(), {}),
    "masked_lm": lambda: (keras_bert.BertMaskedLM(_backbone()), {}),
    "token_classifier": lambda: (
        keras_bert.BertTokenClassifier(
            _backbone(), 3, labels=["O", "B-PER", "I-PER"]
        ),
        {},
    ),
    "question_answerer": lambda: (
        keras_bert.BertQuestionAnswerer(_backbone()),
        {"doc_stride": 4, "max_query_length": 6},
    ),
    "multiple_choice": lambda: (keras_bert.BertMultipleChoice(_backbone()), {}),
    "embedder": lambda: (keras_bert.BertTextEmbedder(_backbone()), {}),
}


def _records(path):
    return [
        prediction_log_pb2.PredictionLog.FromString(raw)
        for raw in tf.compat.v1.io.tf_record_iterator(f"{path}/{WARMUP_FILE}")
    ]


@pytest.mark.parametrize("kind", MODELS)
def test_every_signature_has_a_request_that_tf_serving_can_replay(
    kind, tmp_path
):
    model, options = MODELS[kind]()
    path = export_saved_model(
        model, _preprocessor(), str(tmp_path / kind), **options
    )
    records = _records(path)
    graph = tf.Graph()
    with tf.compat.v1.Session(graph=graph) as session:
        signatures = tf.compat.v1.saved_model.load(
            session, ["serve"], path
        ).signature_def
        served = set(signatures) - {"__saved_model_init_op"}
        assert [r.WhichOneof("log_type") for r in records] == [
            "predict_log"
        ] * len(served)
        requests = [r.predict_log.request for r in records]
        assert {r.model_spec.signature_name for r in requests} == served
        for request in requests:
            signature = signatures[request.model_spec.signature_name]
            assert set(request.inputs) == set(signature.inputs)
            feed = {
                signature.inputs[name].name: tf.make_ndarray(tensor)
                for name, tensor in request.inputs.items()
            }
            for name, tensor in request.inputs.items():
                value = tf.make_ndarray(tensor)
                assert value.shape[0] == 1  # batch 1
                if value.dtype == object:
                    assert value.flat[0] == WARMUP_TEXT.encode()
            fetches = {k: v.name for k, v in signature.outputs.items()}
            outputs = session.run(fetches, feed)
            assert all(np.shape(v)[:1] == (1,) for v in outputs.values())


def test_warmup_false_writes_no_requests(tmp_path):
    model, _ = MODELS["classifier"]()
    path = export_saved_model(
        model, _preprocessor(), str(tmp_path / "x"), warmup=False
    )
    assert not os.path.exists(os.path.join(path, "assets.extra"))


def test_an_export_to_object_storage_holds_them_too():
    """Exports to a non-local file system are copied from a staging
    directory (`keras_bert.files.copy_tree`); TensorFlow's ram:// lists
    `assets.extra/` as a file of `assets/`, which the copy must survive."""
    model, _ = MODELS["classifier"]()
    path = export_saved_model(
        model, _preprocessor(), "ram://warmup_test/export"
    )
    assert path == "ram://warmup_test/export/1"
    requests = [r.predict_log.request for r in _records(path)]
    assert {r.model_spec.signature_name for r in requests} == {
        "serving_default",
        "predict_ids",
    }
    assert tf.io.gfile.exists(f"{path}/saved_model.pb")
    assert tf.io.gfile.listdir("ram://warmup_test/export") == ["1"]
