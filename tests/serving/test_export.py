"""SavedModel export: raw text in, same numbers out, TF Serving ops only."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.serving import export_saved_model
from keras_bert.serving import rest_predict
from tests.helpers import non_core_ops
from tests.helpers import run_saved_model_outside_python

VOCABULARY = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "quick",
    "brown",
    "fox",
    "##es",
    ".",
    "a",
    "dog",
    "jump",
    "##ed",
    "over",
    "lazy",
    ",",
    "!",
    "é",
    "cafe",
]
HERE = os.path.dirname(__file__)
SEQUENCE_LENGTH = 16

SINGLES = [
    "The quick brown fox.",
    "a dog",
    "",
    "The lazy dog jumped over the quick brown foxes, a dog!" * 3,
    "fox " * 25_000,  # 100k characters, truncated
    "Café au lait",
]
PAIRS_A = ["The quick fox.", "", "a dog " * 40]
PAIRS_B = ["a lazy dog", "the fox", "jumped"]
INVALID_UTF8 = [b"the fox \xff\xfe dog", b"\xc3\x28 quick", b"ok"]


def _preprocessor():
    tokenizer = keras_bert.BertTokenizer(VOCABULARY)
    return keras_bert.BertPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH
    )


def _backbone():
    return keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=32,
    )


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    tf.keras.utils.set_random_seed(0) if hasattr(tf, "keras") else None
    root = tmp_path_factory.mktemp("exports")
    preprocessor = _preprocessor()
    classifier = keras_bert.BertClassifier(_backbone(), num_classes=3)
    pair_classifier = keras_bert.BertClassifier(_backbone(), num_classes=2)
    regressor = keras_bert.BertClassifier(_backbone(), num_classes=1)
    backbone = _backbone()
    labels = ["negative", "neutral", "positive"]
    return {
        "preprocessor": preprocessor,
        "classifier": (
            classifier,
            export_saved_model(
                classifier, preprocessor, str(root / "cls"), labels=labels
            ),
        ),
        "labels": labels,
        "pair": (
            pair_classifier,
            export_saved_model(
                pair_classifier,
                preprocessor,
                str(root / "pair"),
                labels=["not_entailment", "entailment"],
                pair=True,
            ),
        ),
        "regressor": (
            regressor,
            export_saved_model(regressor, preprocessor, str(root / "reg")),
        ),
        "backbone": (
            backbone,
            export_saved_model(backbone, preprocessor, str(root / "bb")),
        ),
    }


def _run_outside(tmp_path, export_dir, requests):
    return run_saved_model_outside_python(tmp_path, export_dir, requests)


def _softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.slow
def test_classifier_outside_python_matches_keras(exports, tmp_path):
    model, path = exports["classifier"]
    preprocessor = exports["preprocessor"]
    requests = [
        {"signature": "serving_default", "inputs": {"text": SINGLES}},
        {"signature": "serving_default", "inputs": {"text": SINGLES[:1]}},
        {
            "signature": "serving_default",
            "hex": True,
            "inputs": {"text": [s.hex() for s in INVALID_UTF8]},
        },
    ]
    inputs = preprocessor(tf.constant(SINGLES))
    requests.append(
        {
            "signature": "predict_ids",
            "inputs": {k: v.numpy().tolist() for k, v in inputs.items()},
        }
    )
    outputs = _run_outside(tmp_path, path, requests)

    expected = _softmax(np.asarray(model.predict(inputs, verbose=0), "float64"))
    for index in (0, 3):
        probabilities = outputs[f"{index}/probabilities"]
        assert np.abs(probabilities - expected).max() <= 1e-5
        np.testing.assert_array_equal(
            outputs[f"{index}/label_id"], expected.argmax(-1)
        )
        labels = [exports["labels"][i] for i in expected.argmax(-1)]
        assert [b.decode() for b in outputs[f"{index}/label"]] == labels
    assert np.abs(outputs["1/probabilities"] - expected[:1]).max() <= 1e-5

    # Invalid UTF-8 does not crash, and gives what the in-process
    # preprocessor gives for the same bytes.
    bad = preprocessor(tf.constant(INVALID_UTF8))
    expected_bad = _softmax(
        np.asarray(model.predict(bad, verbose=0), "float64")
    )
    assert np.abs(outputs["2/probabilities"] - expected_bad).max() <= 1e-5


@pytest.mark.slow
def test_pair_classifier_outside_python_matches_keras(exports, tmp_path):
    model, path = exports["pair"]
    preprocessor = exports["preprocessor"]
    outputs = _run_outside(
        tmp_path,
        path,
        [
            {
                "signature": "serving_default",
                "inputs": {"text_a": PAIRS_A, "text_b": PAIRS_B},
            }
        ],
    )
    inputs = preprocessor((tf.constant(PAIRS_A), tf.constant(PAIRS_B)))
    expected = _softmax(np.asarray(model.predict(inputs, verbose=0), "float64"))
    assert np.abs(outputs["0/probabilities"] - expected).max() <= 1e-5


@pytest.mark.slow
def test_regressor_and_backbone_outside_python(exports, tmp_path):
    preprocessor = exports["preprocessor"]
    inputs = preprocessor(tf.constant(SINGLES))

    model, path = exports["regressor"]
    outputs = _run_outside(
        tmp_path,
        path,
        [{"signature": "serving_default", "inputs": {"text": SINGLES}}],
    )
    expected = model.predict(inputs, verbose=0)[:, 0]
    assert np.abs(outputs["0/score"] - expected).max() <= 1e-5

    model, path = exports["backbone"]
    outputs = _run_outside(
        tmp_path,
        path,
        [
            {"signature": "serving_default", "inputs": {"text": SINGLES}},
            {
                "signature": "embed_ids",
                "inputs": {k: v.numpy().tolist() for k, v in inputs.items()},
            },
        ],
    )
    result = model.predict(inputs, verbose=0)
    mask = inputs["padding_mask"].numpy()[:, :, None].astype("float64")
    mean = (result["sequence_output"] * mask).sum(1) / mask.sum(1)
    for index in (0, 1):
        assert (
            np.abs(
                outputs[f"{index}/pooled_output"] - result["pooled_output"]
            ).max()
            <= 1e-5
        )
        assert (
            np.abs(outputs[f"{index}/mean_pooled_output"] - mean).max() <= 1e-5
        )
    assert (
        np.abs(outputs["1/sequence_output"] - result["sequence_output"]).max()
        <= 1e-5
    )


def test_versions_are_numbered_and_never_overwritten(tmp_path):
    preprocessor = _preprocessor()
    model = _backbone()
    base = str(tmp_path / "model")
    first = export_saved_model(model, preprocessor, base)
    second = export_saved_model(model, preprocessor, base)
    assert [os.path.basename(first), os.path.basename(second)] == ["1", "2"]
    with pytest.raises(
        FileExistsError, match="never overwritten.*next free: 3"
    ):
        export_saved_model(model, preprocessor, base, version=2)
    assert export_saved_model(model, preprocessor, base, version=7).endswith(
        "7"
    )
    assert sorted(os.listdir(base)) == ["1", "2", "7"]  # no staging left over


def test_bad_arguments(tmp_path):
    preprocessor = _preprocessor()
    classifier = keras_bert.BertClassifier(_backbone(), num_classes=2)
    with pytest.raises(ValueError, match="2 classes but 3 labels"):
        export_saved_model(
            classifier, preprocessor, str(tmp_path), labels=["a", "b", "c"]
        )
    with pytest.raises(ValueError, match="top_k=0"):
        export_saved_model(
            keras_bert.BertMaskedLM(_backbone()),
            preprocessor,
            str(tmp_path),
            top_k=0,
        )
    with pytest.raises(ValueError, match="version=0"):
        export_saved_model(classifier, preprocessor, str(tmp_path), version=0)


def test_rest_request_formats(exports):
    _, path = exports["classifier"]
    loaded = tf.saved_model.load(path)
    rows = rest_predict(loaded, json.dumps({"instances": ["a dog", "the fox"]}))
    assert len(rows["predictions"]) == 2
    first = rows["predictions"][0]
    assert set(first) == {"probabilities", "label_id", "label"}
    assert (
        len(first["probabilities"]) == 3 and first["label"] in exports["labels"]
    )
    columns = rest_predict(loaded, {"inputs": {"text": ["a dog", "the fox"]}})
    assert columns["outputs"]["label"] == [
        r["label"] for r in rows["predictions"]
    ]
    np.testing.assert_allclose(
        columns["outputs"]["probabilities"],
        [r["probabilities"] for r in rows["predictions"]],
    )
    ids = rest_predict(
        loaded,
        {
            "signature_name": "predict_ids",
            "instances": [
                {
                    "token_ids": [2, 11, 12, 3],
                    "segment_ids": [0] * 4,
                    "padding_mask": [1] * 4,
                }
            ],
        },
    )
    assert ids["predictions"][0]["label"] in exports["labels"]
    with pytest.raises(ValueError, match="Unknown signature_name 'nope'"):
        rest_predict(loaded, {"signature_name": "nope", "instances": ["x"]})


def test_only_core_and_tf_serving_text_ops(exports, tmp_path):
    from keras_bert.serving import TF_SERVING_TEXT_OPS
    from keras_bert.serving import saved_model_op_types

    paths = [exports[name][1] for name in ("classifier", "pair", "backbone")]
    ops = sorted(set().union(*(saved_model_op_types(p) for p in paths)))
    print("ops in the exports:", ", ".join(ops))
    # Core ops are those a bare TensorFlow knows.
    non_core = non_core_ops(ops, tmp_path)
    assert "FastWordpieceTokenizeWithOffsets" in non_core  # the check sees them
    assert non_core <= TF_SERVING_TEXT_OPS, non_core - TF_SERVING_TEXT_OPS
    assert not {"PyFunc", "PyFuncStateless", "EagerPyFunc"} & set(ops)


@pytest.mark.slow
def test_saved_model_cli_show_and_run(exports):
    _, path = exports["classifier"]
    cli = [
        sys.executable,
        os.path.join(HERE, "..", "..", "recipes", "saved_model_cli.py"),
    ]
    show = subprocess.run(
        cli + ["show", "--dir", path, "--all"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert show.returncode == 0, show.stderr[-2000:]
    assert "signature_def['serving_default']" in show.stdout
    assert "inputs['text']" in show.stdout and "outputs['label']" in show.stdout
    run = subprocess.run(
        cli
        + [
            "run",
            "--dir",
            path,
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
            "--input_exprs",
            'text=["the quick fox", "a dog"]',
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Result for output key label:" in run.stdout
    assert "Result for output key probabilities:" in run.stdout


def test_pairs_of_different_batch_sizes_are_refused_by_name(exports):
    _, path = exports["pair"]
    serve = tf.saved_model.load(path).signatures["serving_default"]
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match="text_a and text_b must hold the same number of strings",
    ):
        serve(text_a=tf.constant(["a", "b", "c"]), text_b=tf.constant(["a"]))


@pytest.mark.parametrize(
    "request_body, message",
    [
        ("{not json", "not JSON"),
        ([1, 2], "must be a JSON object"),
        ({"instances": ["x"], "inputs": ["x"]}, "exactly one of"),
        ({"instances": "x"}, '"instances" must be a list'),
        (
            {
                "signature_name": "predict_ids",
                "instances": [{"token_ids": [2]}],
            },
            r"Instance 0 lacks the input\(s\) \['padding_mask', 'segment_",
        ),
        (
            {"signature_name": "predict_ids", "instances": [[2, 3]]},
            "Instance 0 is a list",
        ),
        (
            {"signature_name": "predict_ids", "inputs": {"token_ids": [[2]]}},
            r"lacks the input\(s\) \['padding_mask', 'segment_ids'\]",
        ),
        ({"inputs": {"text": ["a"], "txt": ["b"]}}, "Unknown input"),
        (
            {
                "signature_name": "predict_ids",
                "instances": [
                    {
                        "token_ids": ["a"],
                        "segment_ids": [0],
                        "padding_mask": [1],
                    }
                ],
            },
            "Input 'token_ids' does not hold int32 values",
        ),
    ],
)
def test_rest_bad_requests_are_400_errors(exports, request_body, message):
    from keras_bert.serving import BadRequest

    _, path = exports["classifier"]
    loaded = tf.saved_model.load(path)
    with pytest.raises(BadRequest, match=message) as error:
        rest_predict(loaded, request_body)
    assert error.value.status_code == 400
    assert error.value.body == {"error": str(error.value)}


def test_rest_pairs_of_different_sizes_are_a_400_error(exports):
    from keras_bert.serving import BadRequest

    _, path = exports["pair"]
    with pytest.raises(BadRequest, match="the same number of strings"):
        rest_predict(path, {"inputs": {"text_a": ["a", "b"], "text_b": ["c"]}})
    try:
        rest_predict(path, {"inputs": {"text_a": ["a", "b"], "text_b": ["c"]}})
    except BadRequest as error:
        assert str(error).endswith("the sizes are 2 and 1")
