"""TF Serving's REST `:predict` request/response format, run locally.

`rest_predict` answers a request body exactly as TensorFlow Serving's REST
API does, but in-process on a loaded SavedModel: use it to test requests
before deploying, and in tests to check the documented response shapes.
"""

import base64
import json

import numpy as np
import tensorflow as tf


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
    `{"b64": "..."}` carries binary strings, as in TF Serving.

    Args:
        saved_model: the object returned by `tf.saved_model.load`, or a
            path to a SavedModel directory.
        request: dict or JSON string, the request body.

    Returns:
        The response body as a JSON-serialisable dict.

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
        request = json.loads(request)
    name = request.get("signature_name", "serving_default")
    if name not in saved_model.signatures:
        raise ValueError(
            f"Unknown signature_name {name!r}; the model has "
            f"{sorted(saved_model.signatures)}."
        )
    signature = saved_model.signatures[name]
    specs = signature.structured_input_signature[1]
    input_names = sorted(specs)
    if ("instances" in request) == ("inputs" in request):
        raise ValueError(
            'A request has exactly one of "instances" (row format) or '
            '"inputs" (columnar format).'
        )

    if "instances" in request:
        instances = request["instances"]
        if len(input_names) == 1:
            columns = {input_names[0]: list(instances)}
        else:
            columns = {
                key: [instance[key] for instance in instances]
                for key in input_names
            }
    else:
        inputs = request["inputs"]
        if not isinstance(inputs, dict):
            inputs = {input_names[0]: inputs}
        columns = inputs

    missing = sorted(set(input_names) - set(columns))
    if missing:
        raise ValueError(f"The request lacks the input(s) {missing}.")
    tensors = {
        key: tf.constant(_decode(columns[key]), dtype=specs[key].dtype)
        for key in input_names
    }
    outputs = {k: v.numpy() for k, v in signature(**tensors).items()}

    if "instances" in request:
        rows = [
            {key: _to_json(value[i]) for key, value in outputs.items()}
            for i in range(len(request["instances"]))
        ]
        if len(outputs) == 1:
            rows = [next(iter(row.values())) for row in rows]
        return {"predictions": rows}
    columns_out = {key: _to_json(value) for key, value in outputs.items()}
    if len(columns_out) == 1:
        return {"outputs": next(iter(columns_out.values()))}
    return {"outputs": columns_out}


def _decode(value):
    """Undoes TF Serving's `{"b64": ...}` encoding of binary strings."""
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _to_json(value):
    if isinstance(value, np.ndarray):
        return [_to_json(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value
