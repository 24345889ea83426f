"""Gradient accumulation (`compile(gradient_accumulation_steps=K)`):
batches of `B * K` run in `K` micro-batches train the weights batches of
`B * K` train whole, on one device, on two mirrored replicas, and through
a checkpoint and resume: for the classifier's mean over examples, and for
the token classifier's and masked LM's means over the labels that count
(`GlobalBatchCrossEntropy`), with a different number of them per example.

A step that ignored `K` would pass those comparisons too (it would train
the whole batches), so each accumulated model also records the rows of
every training forward pass (`_record_forward_passes`): `K` passes of a
`K`-th of the batch per update. And with plain SGD and a loss that is not
a mean over examples, one update must equal the share-weighted sum of the
micro-batches' gradients worked out here, which neither the whole batch's
gradient nor an unweighted sum of the micro-batches' gives.

Two logical CPU devices must be set before TensorFlow starts, so the
mirrored comparison runs in a child process
(`python -m tests.training.test_gradient_accumulation`) that prints its
measurements as JSON.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
MICRO_BATCH = 4
STEPS = 4  # micro-batches per update
UPDATES = 10
VOCABULARY = 50
SEQUENCE_LENGTH = 8
# Float32 rounding of sums taken in another order; training moves the
# weights by more than 1e-2 (each comparison asserts it).
TOLERANCE = 1e-5
# Under mixed_float16: float16 rounding of activations computed in
# batches of another size.
FLOAT16_TOLERANCE = 2e-3


NUM_PREDICTIONS = 4  # masked-LM slots per example


def _data(num_examples, seed=0, kind="classifier"):
    """Features and labels for `kind`: a class per example; a tag per
    token, 1 to 8 of them counted (the others `IGNORED_LABEL`); 1 to 4
    masked tokens (unused slots labelled 0) and a next-sentence label."""
    rng = np.random.default_rng(seed)
    shape = (num_examples, SEQUENCE_LENGTH)
    features = {
        "token_ids": rng.integers(1, VOCABULARY, shape).astype("int32"),
        "segment_ids": (np.arange(SEQUENCE_LENGTH) >= 4)
        * np.ones(shape, "int32"),
        "padding_mask": np.ones(shape, "int32"),
    }
    classes = rng.integers(0, 2, num_examples).astype("int32")
    if kind == "classifier":
        return features, classes
    counted = rng.integers(1, shape[1] + 1, (num_examples, 1))
    if kind == "token_classifier":
        from keras_bert.training.losses import IGNORED_LABEL

        tags = rng.integers(0, 3, shape).astype("int32")
        ignored = np.argsort(rng.random(shape), axis=1) >= counted
        return features, np.where(ignored, IGNORED_LABEL, tags)
    slots = np.arange(NUM_PREDICTIONS)
    masked = slots < rng.integers(1, NUM_PREDICTIONS + 1, (num_examples, 1))
    features["masked_positions"] = np.where(
        masked, rng.integers(1, SEQUENCE_LENGTH, masked.shape), 0
    ).astype("int32")
    tokens = rng.integers(1, VOCABULARY, masked.shape)
    labels = {
        "mlm_logits": np.where(masked, tokens, 0).astype("int32"),
        "nsp_logits": classes,
    }
    return features, labels


def _classifier(steps, strategy=None, kind="classifier"):
    """A tiny `kind` model (classifier, token classifier or masked LM),
    dropout off, with BERT's warmup-decay schedule over `UPDATES` updates
    (the schedule counts updates) and `kind`'s own loss."""
    import contextlib

    import keras

    import keras_bert
    from keras_bert import training

    keras.utils.set_random_seed(1)
    with strategy.scope() if strategy else contextlib.nullcontext():
        backbone = keras_bert.BertBackbone(
            vocabulary_size=VOCABULARY,
            num_layers=1,
            num_heads=2,
            hidden_dim=8,
            intermediate_dim=16,
            max_sequence_length=SEQUENCE_LENGTH,
            dropout=0.0,
        )
        if kind == "classifier":
            model = keras_bert.BertClassifier(backbone, 2, dropout=0)
        elif kind == "token_classifier":
            model = keras_bert.BertTokenClassifier(backbone, 3, dropout=0)
        else:
            model = keras_bert.BertMaskedLM(backbone)
        schedule = training.WarmupLinearDecay(
            1e-2, total_steps=UPDATES, warmup_steps=3
        )
        model.compile(
            optimizer=training.create_adamw(schedule),
            gradient_accumulation_steps=steps,
            # `_record_forward_passes` runs Python, which XLA cannot.
            jit_compile=False,
        )
    training.support_distributed_fit(model)
    return model


def _dataset(num_examples=MICRO_BATCH * STEPS * UPDATES, kind="classifier"):
    import tensorflow as tf

    batch = MICRO_BATCH * STEPS
    data = _data(num_examples, kind=kind)
    return tf.data.Dataset.from_tensor_slices(data).batch(batch)


def _max_difference(a, b):
    return max(
        float(np.abs(x - y).max())
        for x, y in zip(a.get_weights(), b.get_weights())
    )


def _record_forward_passes(model):
    """Makes `model` record the rows of each training forward pass (each
    call with `training=True`), in the order they run; returns the list
    they are appended to. Call it before the model's first `fit`."""
    import tensorflow as tf

    rows = []
    call = model.call

    def record(size):
        rows.append(int(size))
        return size

    def recording_call(inputs, training=None, **kwargs):
        if training:
            first = tf.nest.flatten(inputs)[0]
            size = tf.py_function(record, [tf.shape(first)[0]], tf.int32)
            with tf.control_dependencies([size]):
                inputs = tf.nest.map_structure(tf.identity, inputs)
        return call(inputs, training=training, **kwargs)

    model.call = recording_call
    return rows


def _micro_batches_of_each_update(updates=UPDATES):
    """What `_record_forward_passes` sees for `updates` batches of
    `MICRO_BATCH * STEPS` run in `STEPS` micro-batches."""
    return [MICRO_BATCH] * STEPS * updates


@pytest.fixture(scope="module")
def whole():
    """`kind -> (model, fit's history)`: `UPDATES` updates with batches of
    `MICRO_BATCH * STEPS` run whole, trained once per kind for the tests
    of the module."""
    trained = {}

    def get(kind):
        if kind not in trained:
            model = _classifier(1, kind=kind)
            rows = _record_forward_passes(model)
            history = model.fit(_dataset(kind=kind), verbose=0).history
            assert rows == [MICRO_BATCH * STEPS] * UPDATES
            trained[kind] = model, history
        return trained[kind]

    return get


@pytest.fixture(scope="module")
def whole_batches(whole):
    return whole("classifier")


def test_accumulated_batches_train_as_whole_batches(whole_batches):
    whole, whole_history = whole_batches
    accumulated = _classifier(STEPS)
    rows = _record_forward_passes(accumulated)
    history = accumulated.fit(_dataset(), verbose=0).history
    assert rows == _micro_batches_of_each_update()
    assert int(accumulated.optimizer.iterations) == UPDATES
    assert _max_difference(whole, _classifier(1)) > 1e-2  # training moved
    difference = _max_difference(accumulated, whole)
    print(f"classifier: max |accumulated - whole| = {difference:.2e}")
    assert difference <= TOLERANCE
    # The loss and accuracy of fit's logs are the whole batches' too.
    assert history["accuracy"] == whole_history["accuracy"]
    assert history["loss"] == pytest.approx(whole_history["loss"], rel=1e-6)


def test_one_update_is_the_share_weighted_sum_of_micro_batch_gradients():
    """A batch of 5 in 2 micro-batches (2 and 3 examples), plain SGD, and
    a loss that is not a mean over examples (the square of the batch's
    mean margin): the update is the learning rate times the sum of
    each micro-batch's gradient times its share of the examples (2/5,
    3/5), worked out here with a `GradientTape`. The whole batch's
    gradient, the micro-batches' unweighted sum and their mean each give
    other weights, so a step that ignores `gradient_accumulation_steps`
    or weights the micro-batches otherwise fails here."""
    import keras
    import tensorflow as tf

    def squared_mean(labels, logits):
        # A margin per example, pushed to +4 for class 1 and -4 for class
        # 0; the square of its batch mean is no mean over examples.
        labels = keras.ops.cast(keras.ops.reshape(labels, [-1]), "float32")
        margin = logits[:, 1] - logits[:, 0] + 4 * (2 * labels - 1)
        return keras.ops.square(keras.ops.mean(margin))

    learning_rate = 0.1

    def compiled(steps):
        model = _classifier(steps)  # the same initial weights every time
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate),
            loss=squared_mean,
            metrics=[],
            gradient_accumulation_steps=steps,
            jit_compile=False,
        )
        return model

    features, _ = _data(5)
    # Micro-batches whose means differ: all class 0, then all class 1.
    labels = np.array([0, 0, 1, 1, 1], "int32")
    reference = compiled(1)
    variables = reference.trainable_variables
    gradients = {}  # of the micro-batches and of the whole batch
    for begin, end in [(0, 2), (2, 5), (0, 5)]:
        micro = {name: value[begin:end] for name, value in features.items()}
        with tf.GradientTape() as tape:
            loss = squared_mean(labels[begin:end], reference(micro))
        gradients[begin, end] = [
            tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)
        ]

    def updated(combine):
        return [
            (v - learning_rate * combine(*parts)).numpy()
            for v, *parts in zip(variables, *gradients.values())
        ]

    expected = updated(lambda a, b, whole: 2 / 5 * a + 3 / 5 * b)
    others = {
        "whole batch": updated(lambda a, b, whole: whole),
        "unweighted sum": updated(lambda a, b, whole: a + b),
        "unweighted mean": updated(lambda a, b, whole: (a + b) / 2),
    }
    accumulated = compiled(2)
    rows = _record_forward_passes(accumulated)
    accumulated.fit(features, labels, batch_size=5, shuffle=False, verbose=0)
    assert rows == [2, 3]
    assert int(accumulated.optimizer.iterations) == 1
    actual = [v.numpy() for v in accumulated.trainable_variables]

    def difference(a, b):
        return max(float(np.abs(x - y).max()) for x, y in zip(a, b))

    assert difference(actual, expected) <= TOLERANCE
    for name, weights in others.items():
        print(f"{name}: {difference(weights, expected):.2e} from expected")
        assert difference(weights, expected) > 100 * TOLERANCE, name


@pytest.mark.parametrize(
    "kind",
    ["token_classifier", pytest.param("masked_lm", marks=pytest.mark.slow)],
)
def test_means_over_counted_labels_train_as_whole_batches(kind, whole):
    """The token classifier's and masked LM's losses average over the
    labels that count, a different number per example (1 to 8 tags, 1 to
    4 masked tokens): each micro-batch's part is its sum over the whole
    batch's count, so the weights end within `TOLERANCE` of the whole
    batches' (printed with `pytest -s`)."""
    whole, whole_history = whole(kind)
    accumulated = _classifier(STEPS, kind=kind)
    rows = _record_forward_passes(accumulated)
    history = accumulated.fit(_dataset(kind=kind), verbose=0).history
    assert rows == _micro_batches_of_each_update()
    difference = _max_difference(accumulated, whole)
    print(f"{kind}: max |accumulated - whole| = {difference:.2e}")
    assert _max_difference(whole, _classifier(1, kind=kind)) > 1e-2
    assert difference <= TOLERANCE
    for name, values in whole_history.items():  # loss, mlm_loss, nsp_loss
        if "loss" in name:
            assert history[name] == pytest.approx(values, rel=1e-5), name


def test_micro_batch_parts_sum_to_the_batch_mean():
    """By hand: a batch of 2 examples with 1 and 3 counted labels, as 2
    micro-batches of 1. Each part is its sum over the batch's 4 labels,
    over its share (1/2) of the examples; outside accumulation the loss
    is its own batch's mean, and labels it was not told of raise."""
    import tensorflow as tf

    from keras_bert.training.losses import GlobalBatchCrossEntropy
    from keras_bert.training.losses import micro_batch_of

    loss = GlobalBatchCrossEntropy(ignore_class=0)
    labels = tf.constant([[1, 0, 0], [2, 1, 1]])
    logits = tf.math.log(tf.constant([[0.5, 0.25, 0.25]] * 3))[None]
    logits = tf.concat([logits, logits], axis=0)  # (2, 3, 3)
    # -log of the probabilities of labels 1 and 2: log 4 each.
    batch_mean = np.log(4.0)
    assert float(loss(labels, logits)) == pytest.approx(batch_mean)
    parts = []
    for example in range(2):
        micro_labels = labels[example : example + 1]
        with micro_batch_of(labels, micro_labels):
            parts.append(float(loss(micro_labels, logits[:1])))
    assert parts == pytest.approx([2 * batch_mean / 4, 2 * 3 * batch_mean / 4])
    assert 0.5 * parts[0] + 0.5 * parts[1] == pytest.approx(batch_mean)
    with micro_batch_of(labels, labels[:1]):
        with pytest.raises(ValueError, match="gradient_accumulation_steps=1"):
            loss(labels[1:], logits[:1])


@pytest.mark.slow  # two masked LMs trained (~10 s of CPU)
def test_label_means_and_example_means_mixed_in_one_model():
    """A masked LM whose next-sentence loss is Keras' own (a mean over
    examples) beside the masked-LM `GlobalBatchCrossEntropy`, weighted
    0.5, with a regularization loss: each term is combined as its kind
    needs, and `fit`'s loss is the whole batch's."""
    import keras

    from keras_bert import training

    def compiled(steps):
        model = _classifier(steps, kind="masked_lm")
        model.backbone.token_embedding.embeddings.regularizer = (
            keras.regularizers.L2(1e-3)
        )
        model.compile(
            optimizer=training.create_adamw(1e-2),
            loss={
                "mlm_logits": training.GlobalBatchCrossEntropy(0),
                "nsp_logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True
                ),
            },
            loss_weights={"mlm_logits": 1.0, "nsp_logits": 0.5},
            gradient_accumulation_steps=steps,
            jit_compile=False,
        )
        return model

    dataset = _dataset(MICRO_BATCH * STEPS * 3, kind="masked_lm")
    whole = compiled(1)
    whole_loss = whole.fit(dataset, verbose=0).history["loss"]
    accumulated = compiled(STEPS)
    rows = _record_forward_passes(accumulated)
    loss = accumulated.fit(dataset, verbose=0).history["loss"]
    assert rows == _micro_batches_of_each_update(3)
    assert _max_difference(accumulated, whole) <= TOLERANCE
    assert loss == pytest.approx(whole_loss, rel=1e-5)


@pytest.mark.slow  # two more models trained (~10 s of CPU)
def test_uneven_batches_weight_micro_batches_by_their_examples():
    """Batches of 7 in 3 micro-batches (2, 2, 3 examples) and a last batch
    of 2 examples (micro-batches of 1 and 1; the third is empty and
    counts for nothing)."""
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(_data(23)).batch(7)
    whole = _classifier(1)
    whole.fit(dataset, verbose=0)
    accumulated = _classifier(3)
    rows = _record_forward_passes(accumulated)
    accumulated.fit(dataset, verbose=0)
    assert rows == [2, 2, 3] * 3 + [1, 1, 0]
    assert _max_difference(accumulated, whole) <= TOLERANCE


@pytest.mark.slow  # two more models trained in float16 (~10 s of CPU each)
@pytest.mark.parametrize("kind", ["classifier", "masked_lm"])
def test_mixed_float16_loss_scaling_scales_each_micro_batch(kind):
    """Under `mixed_float16` Keras wraps the optimizer in a
    `LossScaleOptimizer`; each micro-batch's loss is scaled and the sum
    unscaled once. The weights then differ only by float16 rounding of
    activations computed in batches of another size: within
    `FLOAT16_TOLERANCE` (printed with `pytest -s`), for weights that move
    by more than 1e-2."""
    import keras

    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        whole = _classifier(1, kind=kind)
        whole.fit(_dataset(kind=kind), verbose=0)
        accumulated = _classifier(STEPS, kind=kind)
        rows = _record_forward_passes(accumulated)
        accumulated.fit(_dataset(kind=kind), verbose=0)
    finally:
        keras.config.set_dtype_policy(policy)
    optimizer = accumulated.optimizer
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert int(optimizer.iterations.numpy()) == UPDATES
    assert rows == _micro_batches_of_each_update()
    assert _max_difference(whole, _classifier(1, kind=kind)) > 1e-2
    difference = _max_difference(accumulated, whole)
    print(f"mixed_float16 {kind}: max |accumulated - whole| = {difference:.2e}")
    assert difference <= FLOAT16_TOLERANCE


@pytest.mark.slow
def test_resume_from_a_checkpoint_between_updates_equals_no_stop(
    tmp_path, whole_batches
):
    """A run stopped after 4 updates and resumed from its checkpoint ends
    with the weights of a run that did not stop. A checkpoint is always
    at an update boundary: one `fit` step is one update, so no
    accumulator needs saving."""
    whole, _ = whole_batches
    _check_resume(tmp_path, whole, "classifier")


@pytest.mark.slow  # two masked LMs trained (~10 s of CPU)
def test_masked_lm_resumed_between_updates_equals_whole_batches(
    tmp_path, whole
):
    _check_resume(tmp_path, whole("masked_lm")[0], "masked_lm")


def _check_resume(tmp_path, whole, kind):
    """Trains `kind` with accumulation for 4 updates, resumes it from its
    checkpoint for the rest, and compares it with `whole`."""
    from keras_bert.training import PreemptionCheckpoint

    directory = str(tmp_path / "checkpoints")
    first = _classifier(STEPS, kind=kind)
    first.fit(
        _dataset(kind=kind).take(4),
        callbacks=[PreemptionCheckpoint(directory, 4)],
        verbose=0,
    )
    resumed = _classifier(STEPS, kind=kind)
    rows = _record_forward_passes(resumed)
    checkpoint = PreemptionCheckpoint(directory, 4, final_step=UPDATES)
    assert checkpoint.restore(resumed) == 4
    resumed.fit(_dataset(kind=kind).skip(4), callbacks=[checkpoint], verbose=0)
    assert int(resumed.optimizer.iterations) == UPDATES
    assert rows == _micro_batches_of_each_update(UPDATES - 4)
    assert _max_difference(resumed, whole) <= TOLERANCE


def test_bad_steps_name_the_argument(whole_batches):
    model, _ = whole_batches
    for steps in (0, -1, 2.0, True, "4", None):
        with pytest.raises(ValueError, match="gradient_accumulation_steps"):
            model.compile(gradient_accumulation_steps=steps)


def test_steps_saved_with_the_model(tmp_path):
    import keras

    model = _classifier(STEPS)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.gradient_accumulation_steps == STEPS


def _child(kinds):
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    from keras_bert.training import create_strategy

    # One of each: a second MirroredStrategy in the process would number
    # its collectives from where the first began, and fail.
    one_device = create_strategy("one_device")
    mirrored = create_strategy("mirrored")
    for kind in kinds:
        whole = _classifier(1, one_device, kind)
        whole.fit(_dataset(kind=kind), verbose=0)
        accumulated = _classifier(STEPS, mirrored, kind)
        rows = _record_forward_passes(accumulated)
        accumulated.fit(_dataset(kind=kind), verbose=0)
        result = {
            "kind": kind,
            "replicas": mirrored.num_replicas_in_sync,
            "updates": int(accumulated.optimizer.iterations.numpy()),
            "difference": _max_difference(accumulated, whole),
            "forward_pass_rows": sorted(rows),
        }
        sys.stdout.write("RESULT " + json.dumps(result) + "\n")


def _mirrored_results(*kinds):
    """`_child(kinds)`'s measurements, from a child process."""
    completed = subprocess.run(
        [sys.executable, "-m", "tests.training.test_gradient_accumulation"]
        + list(kinds),
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [
        line for line in completed.stdout.splitlines() if line[:7] == "RESULT "
    ]
    assert completed.returncode == 0 and len(lines) == len(kinds), (
        completed.stderr[-3000:]
    )
    return [json.loads(line[7:]) for line in lines]


@pytest.fixture(scope="module")
def mirrored_results():
    """`kind -> _child's measurements`, all kinds in one child process."""
    kinds = ("classifier", "token_classifier", "masked_lm")
    return {result["kind"]: result for result in _mirrored_results(*kinds)}


def _check_mirrored(result):
    assert result["replicas"] == 2
    assert result["updates"] == UPDATES
    # Each replica runs its half of each batch in `STEPS` micro-batches.
    assert result["forward_pass_rows"] == (
        [MICRO_BATCH // 2] * 2 * STEPS * UPDATES
    )
    assert result["difference"] <= TOLERANCE


@pytest.mark.slow  # a child process that trains six models (~35 s)
def test_mirrored_accumulated_batches_train_as_one_device_whole_batches(
    mirrored_results,
):
    _check_mirrored(mirrored_results["classifier"])


@pytest.mark.slow  # shares the child process above
@pytest.mark.parametrize("kind", ["token_classifier", "masked_lm"])
def test_mirrored_means_over_counted_labels_train_as_whole_batches(
    mirrored_results, kind
):
    """Each replica's micro-batch divides its sum by the count over the
    whole global batch (both replicas, all micro-batches)."""
    result = mirrored_results[kind]
    print(f"mirrored {kind}: {result['difference']:.2e}")
    _check_mirrored(result)


if __name__ == "__main__":
    _child(sys.argv[1:])
