"""`rest_predict` against the request and response examples of TensorFlow
Serving's REST API documentation (tensorflow/serving,
`tensorflow_serving/g3doc/api_rest.md`, "Predict API", "Encoding binary
values", "JSON conformance" and "Example"), each on a small SavedModel
whose signature has the inputs the example names."""

import base64
import json
import math

import pytest
import tensorflow as tf

from keras_bert.serving import rest_predict
from keras_bert.serving.rest import BadRequest


class HalfPlusThree(tf.Module):
    """The documentation's `half_plus_three`: `y = x / 2 + 3`."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, "x")])
    def predict(self, x):
        return {"y": x / 2 + 3}


class ThreeInputs(tf.Module):
    """The documentation's "tag", "signal" and "sensor" inputs; two
    outputs computed from them, and one binary output (`_bytes`)."""

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, "tag"),
            tf.TensorSpec([None, 5], tf.int32, "signal"),
            tf.TensorSpec([None, 2, 2], tf.int32, "sensor"),
        ]
    )
    def predict(self, tag, signal, sensor):
        return {
            "tag_upper": tf.strings.upper(tag),
            "total": tf.reduce_sum(signal, 1) + tf.reduce_sum(sensor, [1, 2]),
            "tag_bytes": tf.strings.join([tag, "\xff"]),
        }


class PairOfPixels(tf.Module):
    """One input of shape `[1, 2]` per instance; one output."""

    @tf.function(input_signature=[tf.TensorSpec([None, 1, 2], tf.int32)])
    def predict(self, pixels):
        return {"doubled": pixels * 2}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    loaded = {}
    for name, module in (
        ("half_plus_three", HalfPlusThree()),
        ("three_inputs", ThreeInputs()),
        ("pair_of_pixels", PairOfPixels()),
    ):
        path = str(tmp_path_factory.mktemp(name))
        signatures = {"serving_default": module.predict}
        if name == "half_plus_three":
            signatures["other"] = module.predict
        tf.saved_model.save(module, path, signatures=signatures)
        loaded[name] = tf.saved_model.load(path)
    return loaded


def test_documented_predict_call_of_half_plus_three(models):
    # curl -d '{"instances": [1.0,2.0,5.0]}' ...:predict
    response = rest_predict(
        models["half_plus_three"], '{"instances": [1.0,2.0,5.0]}'
    )
    assert response == {"predictions": [3.5, 4.0, 5.5]}


def test_single_input_columnar_value_and_single_output(models):
    # "inputs": <value>|<(nested)list>; one output: its name is omitted.
    response = rest_predict(models["half_plus_three"], {"inputs": [1.0, 5.0]})
    assert response == {"outputs": [3.5, 5.5]}


def test_signature_name_selects_the_signature(models):
    response = rest_predict(
        models["half_plus_three"],
        {"signature_name": "other", "instances": [2.0]},
    )
    assert response == {"predictions": [4.0]}


def test_list_of_tensors_each_of_shape_1_by_2(models):
    # "instances": [ [[1, 2]], [[3, 4]] ]: 2 tensors each of [1, 2] shape.
    response = rest_predict(
        models["pair_of_pixels"], {"instances": [[[1, 2]], [[3, 4]]]}
    )
    assert response == {"predictions": [[[2, 4]], [[6, 8]]]}


ROW_REQUEST = {
    "instances": [
        {"tag": "foo", "signal": [1, 2, 3, 4, 5], "sensor": [[1, 2], [3, 4]]},
        {"tag": "bar", "signal": [3, 4, 1, 2, 5], "sensor": [[4, 5], [6, 8]]},
    ]
}
COLUMNAR_REQUEST = {
    "inputs": {
        "tag": ["foo", "bar"],
        "signal": [[1, 2, 3, 4, 5], [3, 4, 1, 2, 5]],
        "sensor": [[[1, 2], [3, 4]], [[4, 5], [6, 8]]],
    }
}


def test_row_format_with_named_inputs_answers_a_list_of_objects(models):
    response = rest_predict(models["three_inputs"], json.dumps(ROW_REQUEST))
    assert response == {
        "predictions": [
            {
                "tag_upper": "FOO",
                "total": 25,
                "tag_bytes": {"b64": base64.b64encode(b"foo\xc3\xbf").decode()},
            },
            {
                "tag_upper": "BAR",
                "total": 38,
                "tag_bytes": {"b64": base64.b64encode(b"bar\xc3\xbf").decode()},
            },
        ]
    }


def test_columnar_form_of_the_same_request_answers_an_object(models):
    rows = rest_predict(models["three_inputs"], ROW_REQUEST)["predictions"]
    response = rest_predict(models["three_inputs"], COLUMNAR_REQUEST)
    assert response == {
        "outputs": {
            name: [row[name] for row in rows]
            for name in ("tag_upper", "total", "tag_bytes")
        }
    }


def test_b64_values_are_decoded_in_requests(models):
    request = json.loads(json.dumps(COLUMNAR_REQUEST))
    request["inputs"]["tag"] = [
        {"b64": base64.b64encode(b"foo").decode()},
        {"b64": base64.b64encode(b"bar").decode()},
    ]
    response = rest_predict(models["three_inputs"], request)
    assert response["outputs"]["tag_upper"] == ["FOO", "BAR"]


def test_nan_and_infinity_tokens_are_accepted(models):
    # "JSON conformance": NaN, Infinity and -Infinity are valid values.
    response = rest_predict(
        models["half_plus_three"], '{"instances": [NaN, Infinity, -Infinity]}'
    )
    first, second, third = response["predictions"]
    assert math.isnan(first) and second == math.inf and third == -math.inf


@pytest.mark.parametrize(
    "request_body, message",
    [
        ({"instances": [1.0], "inputs": [1.0]}, "exactly one of"),
        ({"signature_name": "nope", "instances": [1.0]}, "Unknown signature"),
        ("{not json", "not JSON"),
    ],
)
def test_errors_are_a_json_object_with_error_as_key(
    models, request_body, message
):
    # "In case of error, all APIs will return a JSON object in the
    # response body with error as key and the error message as the value."
    with pytest.raises(BadRequest, match=message) as raised:
        rest_predict(models["half_plus_three"], request_body)
    assert list(raised.value.body) == ["error"]
    assert isinstance(raised.value.body["error"], str)
    assert raised.value.status_code == 400
