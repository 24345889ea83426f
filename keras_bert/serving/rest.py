"""TF Serving's REST `:predict` request/response format, run locally.

`rest_predict` answers a request body in the format of TensorFlow Serving's
REST API, but in-process on a loaded SavedModel: use it to test requests
before deploying, and in tests to check the documented response shapes.
`tests/serving/test_rest_tf_serving_docs.py` checks it against the
request and response examples of TF Serving's REST API documentation (row
and columnar forms, `signature_name`, `b64` values, outputs named
`*_bytes`, `NaN`/`Infinity`, `{"error": ...}`); it has not been compared
with a running `tensorflow_model_server`, whose error messages' wording
differs.
"""

import base64
import json
import re

import numpy as np
import tensorflow as tf


class BadRequest(ValueError):
    """A request TF Serving would answer with HTTP 400.

    Attributes:
        status_code: int. `400`.
        body: dict. The response body TF Serving sends: `{"error": ...}`.
    """

    status_code = 400

    def __init__(self, message):
        super().__init__(message)
        self.body = {"error": message}


def rest_predict(saved_model, request):
    """Runs a TF Serving REST `:predict` request body on a SavedModel.

    Supports both request forms of TF Serving's REST API:

    - row ("instances"): `{"instances": [...]}` — each instance is a value
      when the signature has one input, else a dict of named inputs. The
      response is `{"predictions": [...]}`: one value per instance when the
      signature has one output, else one dict per instance.
    - columnar ("inputs"): `{"inputs": {...}}` (or `{"inputs": value}` for a
      single input). The response is `{"outputs": {...}}` (or the value for
      a single output).

    `"signature_name"` selects the signature (default `serving_default`);
    `{"b64": "..."}` carries binary strings, as in TF Serving, in requests
    and in the response for outputs whose name ends in `_bytes`.

    Args:
        saved_model: the object returned by `tf.saved_model.load`, or a
            path to a SavedModel directory.
        request: dict or JSON string, the request body.

    Returns:
        The response body as a JSON-serialisable dict.

    Raises:
        BadRequest: (a `ValueError`, `status_code` 400, `body` TF Serving's
            `{"error": ...}`) for a request TF Serving refuses: not JSON,
            an unknown signature, neither or both of `instances` and
            `inputs`, a missing or unknown input (naming the instance),
            values of the wrong type, or inputs the model rejects (e.g.
            pairs of different batch sizes).

    Example:
    ```python
    response = keras_bert.serving.rest_predict(
        "saved_models/sst2/1", {"instances": ["a great film", "dull"]}
    )
    response["predictions"][0]["label"]
    ```
    """
    if isinstance(saved_model, str):
        saved_model = tf.saved_model.load(saved_model)
    if isinstance(request, (str, bytes)):
        try:
            request = json.loads(request)
        except json.JSONDecodeError as error:
            raise BadRequest(f"The request body is not JSON: {error}") from None
    if not isinstance(request, dict):
        raise BadRequest(
            'The request body must be a JSON object with "instances" or '
            f'"inputs"; received a {type(request).__name__}.'
        )
    name = request.get("signature_name", "serving_default")
    if name not in saved_model.signatures:
        raise BadRequest(
            f"Unknown signature_name {name!r}; the model has "
            f"{sorted(saved_model.signatures)}."
        )
    signature = saved_model.signatures[name]
    specs = signature.structured_input_signature[1]
    input_names = sorted(specs)
    if ("instances" in request) == ("inputs" in request):
        raise BadRequest(
            'A request has exactly one of "instances" (row format) or '
            '"inputs" (columnar format).'
        )

    if "instances" in request:
        columns = _row_columns(request["instances"], input_names, name)
    else:
        inputs = request["inputs"]
        # One input may be sent bare: {"inputs": ["a text", ...]}.
        named = isinstance(inputs, dict) and set(inputs) != {"b64"}
        if not named:
            inputs = {input_names[0]: inputs}
        columns = inputs
        unknown = sorted(set(columns) - set(input_names))
        if unknown:
            raise BadRequest(
                f"Unknown input(s) {unknown}; signature {name!r} takes "
                f"{input_names}."
            )
    missing = sorted(set(input_names) - set(columns))
    if missing:
        raise BadRequest(
            f"The request lacks the input(s) {missing}; signature {name!r} "
            f"takes {input_names}."
        )
    tensors = {}
    for key in input_names:
        try:
            tensors[key] = tf.constant(
                _decode(columns[key]), dtype=specs[key].dtype
            )
        except (TypeError, ValueError) as error:
            raise BadRequest(
                f"Input {key!r} does not hold {specs[key].dtype.name} values "
                f"of shape {specs[key].shape}: {error}"
            ) from None
    try:
        outputs = {k: v.numpy() for k, v in signature(**tensors).items()}
    except tf.errors.InvalidArgumentError as error:
        raise BadRequest(_model_error(error.message)) from None
    except (ValueError, TypeError) as error:
        raise BadRequest(str(error).strip().splitlines()[0]) from None

    if "instances" in request:
        rows = [
            {
                key: _to_json(value[i], binary=key.endswith("_bytes"))
                for key, value in outputs.items()
            }
            for i in range(len(request["instances"]))
        ]
        if len(outputs) == 1:
            rows = [next(iter(row.values())) for row in rows]
        return {"predictions": rows}
    columns_out = {
        key: _to_json(value, binary=key.endswith("_bytes"))
        for key, value in outputs.items()
    }
    if len(columns_out) == 1:
        return {"outputs": next(iter(columns_out.values()))}
    return {"outputs": columns_out}


def _model_error(message):
    """The readable part of a TensorFlow error raised inside the model.

    For a failed `tf.debugging.assert_*`: its message and the values it
    printed (`"text_a and text_b must ...; the sizes are 2 and 1"`); else
    the error's last line of text.
    """
    for line in message.splitlines():
        if line.startswith("assertion failed:"):
            parts = re.findall(r"\[([^\]]*)\]", line)
            values = [p for p in parts[1:] if not p.endswith(("= ", ":"))]
            return " ".join([parts[0], " and ".join(values)]).strip()
    lines = [
        line.strip()
        for line in message.splitlines()
        if line.strip() and not line.startswith((" ", "\t"))
    ]
    return lines[-1] if lines else message


def _row_columns(instances, input_names, name):
    """The inputs of a row-format request, column by column."""
    if not isinstance(instances, list):
        raise BadRequest(
            '"instances" must be a list; received a '
            f"{type(instances).__name__}."
        )
    if len(input_names) == 1:
        return {input_names[0]: list(instances)}
    for index, instance in enumerate(instances):
        if not isinstance(instance, dict):
            raise BadRequest(
                f"Instance {index} is a {type(instance).__name__}; signature "
                f"{name!r} takes named inputs {input_names}, so each instance "
                "is an object with those keys."
            )
        missing = sorted(set(input_names) - set(instance))
        if missing:
            raise BadRequest(
                f"Instance {index} lacks the input(s) {missing}; signature "
                f"{name!r} takes {input_names}."
            )
    return {
        key: [instance[key] for instance in instances] for key in input_names
    }


def _decode(value):
    """Undoes TF Serving's `{"b64": ...}` encoding of binary strings."""
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _to_json(value, binary=False):
    """A numpy output as JSON values; with `binary` (an output named
    `*_bytes`, as TF Serving decides), strings as `{"b64": ...}`."""
    if isinstance(value, np.ndarray):
        return [_to_json(v, binary) for v in value]
    if isinstance(value, bytes):
        if binary:
            return {"b64": base64.b64encode(value).decode("ascii")}
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value
