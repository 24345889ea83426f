"""Small shared helpers so each test file reads as a list of facts."""

import inspect
import json
import os
import subprocess
import sys
import tempfile

import keras
import numpy as np


def tiny_backbone_config(**overrides):
    """A backbone config small enough for unit tests."""
    config = {
        "vocabulary_size": 50,
        "num_layers": 2,
        "num_heads": 2,
        "hidden_dim": 8,
        "intermediate_dim": 16,
        "max_sequence_length": 16,
    }
    config.update(overrides)
    return config


def backbone_inputs(
    batch_size=2, sequence_length=6, vocabulary_size=50, seed=0
):
    """Random backbone inputs with some padding at the end of row 0."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1, vocabulary_size, (batch_size, sequence_length))
    padding_mask = np.ones((batch_size, sequence_length), "int32")
    padding_mask[0, sequence_length // 2 :] = 0
    token_ids = np.where(padding_mask == 1, token_ids, 0).astype("int32")
    segment_ids = np.zeros((batch_size, sequence_length), "int32")
    segment_ids[:, sequence_length // 3 :] = 1
    segment_ids *= padding_mask
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }


def assert_config_complete(obj, exempt=()):
    """Every `__init__` argument appears in `get_config`."""
    params = inspect.signature(type(obj).__init__).parameters
    names = [
        name
        for name, param in params.items()
        if name != "self"
        and param.kind
        not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    ]
    config = obj.get_config()
    missing = [n for n in names if n not in config and n not in exempt]
    assert not missing, f"{type(obj).__name__}.get_config() lacks {missing}"


def run_serialization_test(layer):
    """`from_config(get_config())` rebuilds an equal config."""
    config = layer.get_config()
    rebuilt = type(layer).from_config(config)
    assert rebuilt.get_config() == config
    return rebuilt


def run_model_saving_test(model, inputs):
    """A `.keras` save/load round trip gives identical outputs."""
    expected = model(inputs, training=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        restored = keras.models.load_model(path)
    actual = restored(inputs, training=False)
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b)
        ),
        actual,
        expected,
    )
    assert type(restored) is type(model)
    return restored


def run_layer_saving_test(layer, *args, **kwargs):
    """A layer inside a functional model survives a `.keras` round trip."""
    symbolic = keras.tree.map_structure(
        lambda x: keras.Input(batch_shape=x.shape, dtype=x.dtype), args
    )
    model = keras.Model(list(symbolic), layer(*symbolic, **kwargs))
    expected = model(list(args))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "layer.keras")
        model.save(path)
        restored = keras.models.load_model(path)
    actual = restored(list(args))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(actual), keras.ops.convert_to_numpy(expected)
    )
    return restored


def run_saved_model_outside_python(tmp_path, export_dir, requests, env=None):
    """Runs `requests` on an export in a TF + tensorflow-text-only process
    (with the environment variables `env` added).

    See `tests/serving/serve_outside_python_package.py`; fails if the
    process imported keras_bert. Returns `{"<index>/<output>": array}`.
    """
    requests_path = os.path.join(tmp_path, "requests.json")
    with open(requests_path, "w") as file:
        json.dump(requests, file)
    out = os.path.join(tmp_path, "out.npz")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | dict(
        env or {}
    )
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(
                os.path.dirname(__file__),
                "serving",
                "serve_outside_python_package.py",
            ),
            str(export_dir),
            requests_path,
            out,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=str(tmp_path),  # so the repository is not importable
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # Our own file; string outputs need pickle.
    return dict(np.load(out, allow_pickle=True))


def non_core_ops(op_types, tmp_path):
    """The op types a bare TensorFlow (no tensorflow_text) does not know."""
    code = (
        "import sys, tensorflow as tf\n"
        "from tensorflow.python.framework import op_def_registry\n"
        "get = op_def_registry.get\n"
        "unknown = [o for o in sys.argv[1:] if get(o) is None]\n"
        "print('\\n'.join(unknown))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *op_types],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.split())


# A tiny raw-text classifier, for the export tests: words the tokenizer
# knows, sentences to serve (an empty one, one long enough to truncate).
EXPORT_VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "quick", "brown", "fox", "a", "lazy", "dog", "good", "bad", "film",
]  # fmt: skip
EXPORT_SENTENCES = ["the quick brown fox", "a lazy dog", "", "good film " * 20]


def export_classifier(**backbone_config):
    """A 3-class `BertClassifier` on a 2-layer, hidden-16 backbone over
    `EXPORT_VOCABULARY` (`backbone_config`: e.g. `optimizations`)."""
    import keras_bert

    backbone = keras_bert.BertBackbone(
        **backbone_config,
        vocabulary_size=len(EXPORT_VOCABULARY),
        num_layers=2,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
    )
    return keras_bert.BertClassifier(backbone, num_classes=3)


def far_from_uniform(classifier, seed=0):
    """Sets `classifier`'s weights random and not small (normal, standard
    deviation 0.3; the output layer's kernel times 10), so that its
    probabilities are far from uniform (0.007 to 0.91 for
    `export_classifier` on `EXPORT_SENTENCES`); returns it."""
    rng = np.random.default_rng(seed)
    classifier.set_weights(
        [rng.normal(0, 0.3, w.shape) for w in classifier.get_weights()]
    )
    kernel, bias = classifier.output_dense.get_weights()
    classifier.output_dense.set_weights([kernel * 10, bias])
    return classifier


def export_preprocessor(sequence_length=16):
    """The `BertPreprocessor` of `EXPORT_VOCABULARY`."""
    import keras_bert

    return keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(EXPORT_VOCABULARY),
        sequence_length=sequence_length,
    )


def keras_probabilities(classifier, sentences, preprocessor=None):
    """The classifier's softmax on `sentences`, in float64, from Keras."""
    preprocessor = preprocessor or export_preprocessor()
    logits = np.asarray(
        classifier(preprocessor(sentences), training=False), "float64"
    )
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def run_export_recipe(*arguments, timeout=300, env=None):
    """`python recipes/export.py *arguments` in a process of its own: its
    `subprocess.CompletedProcess`, stdout and stderr as text."""
    recipe = os.path.join(
        os.path.dirname(os.path.dirname(__file__)), "recipes", "export.py"
    )
    return subprocess.run(
        [sys.executable, recipe, *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def served_or_refused(option, make):
    """`make()` where this CPU serves `option` (`"int8"` or `"bfloat16"`,
    a key of `keras_bert.serving.plan.CPU_NEEDS`, or `None` for one every
    CPU serves); where it does not,
    asserts that `make()` is refused at once with the plan's `ValueError`
    (naming the requirement and this CPU), and returns `None`: what the
    plan promises on each CPU kind, so a test passes on neither by
    skipping."""
    import re

    import pytest

    from keras_bert.serving.cpu import this_cpu
    from keras_bert.serving.plan import CPU_NEEDS

    if option is None:  # an option every CPU serves
        return make()
    serves, requirement, _ = CPU_NEEDS[option]
    if serves(this_cpu()):
        return make()
    with pytest.raises(ValueError, match=re.escape(requirement)):
        make()
    return None


def on_cpu(flags, onednn=True, int8_kernel=None):
    """A context in which the serving plan sees a CPU with `flags` (a set
    of /proc/cpuinfo flags), oneDNN `onednn`, and the int8 kernel where
    oneDNN is on unless `int8_kernel` says otherwise; its description
    names it "test CPU"."""
    from unittest import mock

    from keras_bert.serving import plan
    from keras_bert.serving.cpu import Cpu

    cpu = Cpu(
        model="test CPU",
        flags=frozenset(flags),
        onednn=onednn,
        int8_kernel=onednn if int8_kernel is None else int8_kernel,
    )
    return mock.patch.object(plan, "this_cpu", lambda: cpu)


def serves(option):
    """Whether the serving plan serves `option` (`"int8"`, `"bfloat16"`)
    on this CPU."""
    from keras_bert.serving.plan import cpu_problem

    return cpu_problem(option) is None


def served_variables(path):
    """The variables a SavedModel's signatures read (what TF Serving
    restores), each once: an export tracks no variable collection of the
    model (`keras_bert.serving.export`), so `tf.saved_model.load(path)
    .variables` does not list them."""
    import tensorflow as tf

    loaded = tf.saved_model.load(path)
    found = {}
    for function in loaded.signatures.values():
        for variable in function.variables:
            found.setdefault(variable.ref(), variable)
    return list(found.values())
