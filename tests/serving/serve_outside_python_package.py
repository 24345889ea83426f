"""Loads an export with nothing but tensorflow and tensorflow_text.

Run as
`python serve_outside_python_package.py EXPORT_DIR REQUESTS.json OUT.npz`;
the requests file holds `{"signature": name, "inputs": {...}}` items; each
item's outputs are saved as `<index>/<output name>` arrays. Exits non-zero if
keras_bert got imported. (`import tensorflow` itself imports `keras`, so
that is not checked.)
"""

import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

export_dir, requests_path, out_path = sys.argv[1:4]
loaded = tf.saved_model.load(export_dir)
with open(requests_path, "rb") as f:
    requests = json.loads(f.read().decode("utf-8"))
results = {}
for index, request in enumerate(requests):
    signature = loaded.signatures[request["signature"]]
    inputs = {}
    for name, value in request["inputs"].items():
        if request.get("hex"):
            value = [bytes.fromhex(v) for v in value]
            inputs[name] = tf.constant(value, tf.string)
        elif isinstance(value[0], str):
            inputs[name] = tf.constant(value, tf.string)
        else:
            inputs[name] = tf.constant(value, tf.int32)
    for key, tensor in signature(**inputs).items():
        results[f"{index}/{key}"] = tensor.numpy()
np.savez(out_path, **results)
leaked = sorted(m for m in sys.modules if m.split(".")[0] == "keras_bert")
if leaked:
    sys.exit(f"the SavedModel pulled in Python packages: {leaked[:5]}")
