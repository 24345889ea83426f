"""TF Serving's warmup requests, written into every export.

The first request a freshly loaded SavedModel answers pays for what the
TensorFlow runtime does lazily: its graph optimisation and executor for
that signature (0.56 s for MiniLM-L6 on a 2-core CPU, then 11 ms a
request; `benchmarks/first_call_latency.py --fresh --served`). TF
Serving replays the requests in `assets.extra/tf_serving_warmup_requests`
(a TFRecord file of `PredictionLog` protos, at most 1,000) when it loads
a model, before it serves it, so that cost moves to the load ("SavedModel
Warmup" in TF Serving's guide). Each export holds one request per
signature, of batch 1, built from the signature's inputs.

The records are written as protobuf bytes here rather than with the
`tensorflow-serving-api` package, which would pin TensorFlow's version
and pull in gRPC for four small messages: `PredictionLog.predict_log`
(field 6) → `PredictLog.request` (1) → `PredictRequest.model_spec` (1,
`ModelSpec.signature_name`: 3) and `inputs` (2, a map of `TensorProto`).
`tests/serving/test_warmup.py` parses them with that package's classes.
"""

import numpy as np
import tensorflow as tf

from keras_bert import files

WARMUP_FILE = "assets.extra/tf_serving_warmup_requests"
# The text of each warmup request: short, as most requests are.
WARMUP_TEXT = "A short sentence to warm the model up."


def warmup_inputs(signature, preprocessor):
    """One request's inputs for an endpoint with input `signature` (a list
    of `tf.TensorSpec`), batch 1: `WARMUP_TEXT` for each string input, and
    the preprocessor's packing of it for each int32 input it names; `None`
    for an input neither fits."""
    packed = preprocessor(tf.constant([WARMUP_TEXT]))
    inputs = {}
    for spec in signature:
        sizes = [1] + [2 if d is None else d for d in spec.shape[1:]]
        if spec.dtype == tf.string:
            inputs[spec.name] = np.full(sizes, WARMUP_TEXT, dtype=object)
        elif spec.dtype == tf.int32 and spec.name in packed:
            ids = packed[spec.name].numpy().astype(np.int32)
            for _ in range(len(spec.shape) - 2):  # (batch, windows, ...)
                ids = ids[:, None]
            inputs[spec.name] = ids
        else:
            return None
    return inputs


def prediction_log(signature_name, inputs):
    """The serialized `PredictionLog` of a Predict request of `inputs` (a
    dict of arrays) to `signature_name`."""
    request = _field(1, _field(3, signature_name.encode()))
    for name, value in sorted(inputs.items()):
        tensor = tf.make_tensor_proto(value).SerializeToString()
        request += _field(2, _field(1, name.encode()) + _field(2, tensor))
    return _field(6, _field(1, request))


def write_warmup_requests(version_dir, endpoints, preprocessor):
    """Writes `version_dir/assets.extra/tf_serving_warmup_requests`: one
    request per endpoint (`endpoints`: name → `(function, signature)`)
    whose inputs `warmup_inputs` can build; returns their signature names."""
    records = {}
    for name, (_, signature) in sorted(endpoints.items()):
        inputs = warmup_inputs(signature, preprocessor)
        if inputs is not None:
            records[name] = prediction_log(name, inputs)
    path = files.join(version_dir, WARMUP_FILE)
    files.makedirs(files.join(version_dir, "assets.extra"))
    with tf.io.TFRecordWriter(path) as writer:
        for record in records.values():
            writer.write(record)
    return list(records)


def _field(number, payload):
    """A length-delimited protobuf field: its key, its length, `payload`."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value):
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
