"""keras_bert changes nothing in Keras for the rest of the process.

Importing the package, or running one of its training entry points, must
leave Keras as it found it: its work-arounds for Keras bugs act on our own
models and optimizers only, and a global setting (the dtype policy) is put
back when the entry point returns. A child process records every attribute
of every loaded Keras module and of Keras' trainer and optimizer classes
before `import keras_bert`, after it, and after `run_fine_tuning` (with
`mixed_bfloat16`) returns; then it fits a plain Keras model, which must end
with the same weights as in a fresh process.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))

CHILD = r"""
import json, sys, tempfile
import keras
import numpy as np

def snapshot():
    import keras.src.backend.tensorflow.trainer as trainer
    state = {}
    for name, module in list(sys.modules.items()):
        if name == "keras" or name.startswith("keras."):
            for attribute, value in list(vars(module).items()):
                if not type(value).__name__ == "module":
                    state[f"{name}.{attribute}"] = id(value)
    for cls in (keras.Model, keras.optimizers.Optimizer, keras.optimizers.AdamW,
                trainer.TensorFlowTrainer):
        for attribute, value in vars(cls).items():
            state[f"{cls.__qualname__}.{attribute}"] = id(value)
    state["dtype_policy"] = keras.config.dtype_policy().name
    return state

def plain_fit():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, "gelu"),
                              keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.AdamW(1e-2, global_clipnorm=1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    weights = [w.tolist() for w in model.get_weights()]
    return weights, str(model.layers[0].compute_dtype)

mode = sys.argv[1]
result = {}
if mode == "ours":
    before = snapshot()
    import keras_bert
    from keras_bert.fine_tuning import run_fine_tuning
    from tests.fine_tuning.test_runner import TinySentiment
    after_import = snapshot()
    run_fine_tuning(TinySentiment(), tempfile.mkdtemp(), epochs=1, batch_size=4,
                    mixed_precision="mixed_bfloat16")
    after_run = snapshot()
    def changed(a, b):
        return sorted(k for k in a if k in b and a[k] != b[k])
    result["changed_by_import"] = changed(before, after_import)
    result["changed_by_run"] = changed(after_import, after_run)
result["weights"], result["dtype"] = plain_fit()
print("RESULT " + json.dumps(result))
"""


def run_child(mode):
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    result = [line for line in lines if line.startswith("RESULT ")][-1]
    return json.loads(result[len("RESULT ") :])


@pytest.mark.slow
def test_import_and_fine_tuning_leave_keras_as_it_was():
    ours = run_child("ours")
    fresh = run_child("fresh")
    assert ours["changed_by_import"] == []
    assert ours["changed_by_run"] == []
    assert ours["dtype"] == fresh["dtype"] == "float32"
    for a, b in zip(ours["weights"], fresh["weights"]):
        np.testing.assert_array_equal(np.array(a), np.array(b))


def test_multi_worker_reduce_is_swapped_only_during_our_calls():
    from keras.src.backend.tensorflow import trainer

    from keras_bert.keras_workarounds import with_multi_worker_reduce

    keras_reduce = trainer.reduce_per_replica
    seen = []

    def step(fail=False):
        seen.append(trainer.reduce_per_replica)
        if fail:
            raise tf.errors.InvalidArgumentError(None, None, "a failed step")
        return "logs"

    wrapped = with_multi_worker_reduce(step)
    assert wrapped() == "logs"
    with pytest.raises(tf.errors.InvalidArgumentError):
        wrapped(fail=True)
    assert all(function is not keras_reduce for function in seen)
    assert trainer.reduce_per_replica is keras_reduce
    assert with_multi_worker_reduce(wrapped) is wrapped


def test_missing_keras_internals_name_the_version_and_the_fix():
    import keras

    from keras_bert.keras_workarounds import require_keras_internals

    with pytest.raises(RuntimeError) as error:
        require_keras_internals(keras.Model, ["_renamed_in_a_new_keras"])
    message = str(error.value)
    assert "_renamed_in_a_new_keras" in message
    assert f"Keras {keras.__version__}" in message
    assert "pip install" in message


def test_the_tested_keras_versions_are_setup_cfg_s():
    """The error above names the Keras versions setup.cfg requires."""
    import configparser

    from keras_bert.keras_workarounds import TESTED_KERAS

    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, "setup.cfg"))
    requirements = config["options"]["install_requires"].split("\n")
    assert f"keras{TESTED_KERAS}" in [r.strip() for r in requirements]


def test_string_layers_check_the_keras_internals_they_set():
    """BertTokenizer and BertPreprocessor set two private Keras flags; a
    Keras without them gets the error naming the version, not a layer
    that silently converts its strings."""
    from keras_bert.keras_workarounds import keep_string_inputs

    class NotAKerasLayer:
        pass

    with pytest.raises(RuntimeError, match="_convert_input_args"):
        keep_string_inputs(NotAKerasLayer())
