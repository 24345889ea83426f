"""The compiled functions of small calls, kept on the model.

A small call (`keras_bert.models.small_calls`) runs one `tf.function` per
input kind (the ids dict; single texts; text pairs; `evaluate`'s with
labels), traced once with the batch and sequence axes unknown, so that no
new batch size or length traces again. Raw text is tokenized inside that
function by the preprocessor's graph and cut to its longest row, as the
batched path cuts each batch; under XLA the inputs are padded to buckets
(`keras_bert.models.xla_buckets`).

The functions are kept on the model and rebuilt when its structure
changes (new or replaced variables: `enable_lora`, `quantize`, a new
`preprocessor`, a different `jit_compile`); new weight values need
nothing, as the graph reads the variables when it runs.
"""

import tensorflow as tf

from keras_bert.data.trim_batch import trim_batch
from keras_bert.models.xla_buckets import bucket
from keras_bert.models.xla_buckets import first_rows
from keras_bert.models.xla_buckets import pad_axis
from keras_bert.models.xla_buckets import padded


def compiled_function(model, kind, build):
    """The function `build()` made for `kind`, kept on `model` until its
    structure changes (see the module's docstring)."""
    key = _structure_key(model)
    cache = getattr(model, "_small_calls", None)
    if not isinstance(cache, _Functions) or cache.key != key:
        cache = _Functions(key)
        model._small_calls = cache
    if kind not in cache.functions:
        cache.functions[kind] = build()
    return cache.functions[kind]


class _Functions:
    """The compiled functions of one model structure, by input kind.

    A plain object: neither Keras' nor TensorFlow's tracking follows it,
    so it never enters a `.keras` file, a weights file or an export.
    """

    def __init__(self, key):
        self.key = key
        self.functions = {}


def _structure_key(model):
    return (
        bool(model.jit_compile),
        id(getattr(model, "preprocessor", None)),
        tuple(id(variable) for variable in model.weights),
    )


def text_packer(model):
    """What turns the model's raw text into its inputs (its preprocessor,
    or the model's `_text_packer()`: documents cut into windows)."""
    packer = getattr(model, "_text_packer", None)
    return packer() if packer is not None else model.preprocessor


def _forward(model):
    if model.jit_compile:
        return tf.function(
            lambda inputs: model(inputs, training=False), jit_compile=True
        )
    return lambda inputs: model(inputs, training=False)


def text_function(model, num_texts, forward=None):
    """`tf.function(*texts) -> outputs` of `forward` (default: the model)
    on texts tokenized by the model's preprocessor, traced once for every
    batch size and length."""
    pack = text_packer(model).batch_function(num_texts)
    forward = forward or _forward(model)
    to_inputs = model._inputs_from_text
    xla = bool(model.jit_compile)
    longest = model.preprocessor.sequence_length

    def run(*texts):
        features = trim_batch(pack(*texts), multiple=1)
        count = tf.shape(features["token_ids"])[0]
        if xla:
            features = padded(features, longest)
        inputs = features if to_inputs is None else to_inputs(features, None)
        return first_rows(forward(inputs), count, xla)

    # Without autograph, as the preprocessor's functions: nothing here
    # branches on a tensor, and converting the call chain cost a fresh
    # model's first call 0.6 s (benchmarks/first_call_latency.py --fresh).
    return tf.function(
        run,
        input_signature=[tf.TensorSpec([None], tf.string)] * num_texts,
        autograph=False,
    )


def ids_function(model):
    forward = _forward(model)
    xla = bool(model.jit_compile)
    signature = {
        name: tf.TensorSpec((None,) * len(spec.shape), spec.dtype, name)
        for name, spec in model.input.items()
    }

    def run(inputs):
        count = tf.shape(next(iter(inputs.values())))[0]
        if xla:
            inputs = {
                name: pad_axis(value, 0, bucket(count))
                for name, value in inputs.items()
            }
        return first_rows(forward(inputs), count, xla)

    return tf.function(run, input_signature=[signature])


def evaluate_text_function(model, num_texts, extra_specs):
    """`tf.function(*texts, labels[, sample_weight]) -> test_step logs` on
    texts tokenized as `text_function` tokenizes them."""
    pack = text_packer(model).batch_function(num_texts)
    to_inputs = model._inputs_from_text

    def run(*arguments):
        texts, extra = arguments[:num_texts], arguments[num_texts:]
        features = trim_batch(pack(*texts), multiple=1)
        inputs = features if to_inputs is None else to_inputs(features, None)
        return model.test_step((inputs, *extra))

    signature = [tf.TensorSpec([None], tf.string)] * num_texts
    return tf.function(run, input_signature=[*signature, *extra_specs])


def evaluate_ids_function(model, extra_specs):
    """`tf.function(ids, labels[, sample_weight]) -> test_step logs`."""
    signature = {
        name: tf.TensorSpec((None,) * len(spec.shape), spec.dtype, name)
        for name, spec in model.input.items()
    }

    def run(inputs, *extra):
        return model.test_step((inputs, *extra))

    return tf.function(run, input_signature=[signature, *extra_specs])
