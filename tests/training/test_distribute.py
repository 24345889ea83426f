"""`mirrored` on 2 logical CPU devices against `one_device`: the same
weights after training with the same global batch, and the same metrics
from an evaluation set that does not divide by the global batch.

Logical devices must be set before TensorFlow starts, so the comparison
runs in a child process (`python -m tests.training.test_distribute`) that
prints its measurements as JSON.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

# A child process trains three times (~20 s).
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
GLOBAL_BATCH = 8
STEPS = 6
EVAL_EXAMPLES = 13  # 3 full batches of 4 and one of 1: a replica idles
SEQUENCE_LENGTH = 16
PREDICTIONS = 4
VOCABULARY = 40


def _data(num_examples, seed):
    """In-memory BERT batches; each example masks 1 to 4 tokens."""
    rng = np.random.RandomState(seed)
    masked_ids = rng.randint(5, VOCABULARY, (num_examples, PREDICTIONS))
    used = rng.randint(1, PREDICTIONS + 1, (num_examples, 1))
    masked_ids = np.where(np.arange(PREDICTIONS) < used, masked_ids, 0)
    features = {
        "token_ids": rng.randint(5, VOCABULARY, (num_examples, 16)),
        "segment_ids": (np.arange(SEQUENCE_LENGTH) >= 8)
        * np.ones((num_examples, 1), int),
        "padding_mask": np.ones((num_examples, SEQUENCE_LENGTH), int),
        "masked_positions": rng.randint(
            1, SEQUENCE_LENGTH, (num_examples, PREDICTIONS)
        ),
    }
    labels = {
        "mlm_logits": masked_ids,
        "nsp_logits": rng.randint(0, 2, (num_examples,)),
    }
    cast = lambda array: array.astype("int32")  # noqa: E731
    return {k: cast(v) for k, v in features.items()}, {
        k: cast(v) for k, v in labels.items()
    }


def _train(strategy):
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert import training

    train = tf.data.Dataset.from_tensor_slices(_data(64, seed=0))
    train = train.repeat().batch(GLOBAL_BATCH, drop_remainder=True)
    keras.utils.set_random_seed(7)
    with strategy.scope():
        backbone = keras_bert.BertBackbone(
            vocabulary_size=VOCABULARY,
            num_layers=1,
            num_heads=2,
            hidden_dim=16,
            intermediate_dim=32,
            max_sequence_length=SEQUENCE_LENGTH,
            dropout=0.0,
        )
        model = keras_bert.BertMaskedLM(backbone)
        model.compile(
            optimizer=training.create_adamw(learning_rate=1e-2),
            loss=training.pretraining_losses(),
        )
    training.support_distributed_fit(model)
    initial = [v.numpy() for v in model.weights]
    model.fit(train, steps_per_epoch=STEPS, epochs=1, verbose=0)
    return model, {
        "replicas": strategy.num_replicas_in_sync,
        "steps": int(model.optimizer.iterations.numpy()),
        "weights": [v.numpy().tolist() for v in model.weights],
        "change": max(
            float(np.abs(v.numpy() - w).max())
            for v, w in zip(model.weights, initial)
        ),
    }


def _child():
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    tf.config.experimental.enable_op_determinism()
    import keras

    from keras_bert.layers import fused_ops
    from keras_bert.training import create_strategy

    # The XLA-fused ops of a mixed-precision step, in each replica.
    keras.config.set_dtype_policy("mixed_bfloat16")
    min_elements, fused_ops.MIN_ELEMENTS = fused_ops.MIN_ELEMENTS, 0
    bf16 = {
        name: _train(create_strategy(name))[1]
        for name in ("one_device", "mirrored")
    }
    fused_ops.MIN_ELEMENTS = min_elements
    keras.config.set_dtype_policy("float32")

    single, single_result = _train(create_strategy("one_device"))
    mirrored, mirrored_result = _train(create_strategy("mirrored"))
    # Evaluate the same weights both ways.
    mirrored.set_weights(single.get_weights())
    evaluation = tf.data.Dataset.from_tensor_slices(
        _data(EVAL_EXAMPLES, seed=1)
    ).batch(4)
    for model, result in ((single, single_result), (mirrored, mirrored_result)):
        result["eval"] = model.evaluate(evaluation, return_dict=True, verbose=0)
    result = {
        "one_device": single_result,
        "mirrored": mirrored_result,
        "bf16_fused": bf16,
    }
    sys.stdout.write("RESULT " + json.dumps(result, default=float) + "\n")


@pytest.fixture(scope="module")
def runs():
    completed = subprocess.run(
        [sys.executable, "-m", "tests.training.test_distribute"],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"),
        capture_output=True,
        text=True,
        timeout=900,  # ~20 s on a quiet machine; minutes under load
    )
    lines = [
        line for line in completed.stdout.splitlines() if line[:7] == "RESULT "
    ]
    assert completed.returncode == 0 and lines, completed.stderr[-3000:]
    return json.loads(lines[-1][7:])


def test_mirrored_runs_on_two_replicas(runs):
    assert runs["one_device"]["replicas"] == 1
    assert runs["mirrored"]["replicas"] == 2
    assert runs["one_device"]["steps"] == runs["mirrored"]["steps"] == STEPS


def test_mirrored_weights_equal_one_device_weights(runs):
    single = runs["one_device"]["weights"]
    mirrored = runs["mirrored"]["weights"]
    assert len(single) == len(mirrored) > 10
    assert runs["one_device"]["change"] > 1e-3  # training moved the weights
    difference = max(
        float(np.max(np.abs(np.array(b) - np.array(a))))
        for a, b in zip(single, mirrored)
    )
    # docs/distributed.md quotes this line (`pytest -s`).
    print(
        f"mirrored vs one_device: max weight difference {difference:.2g}, "
        f"weights moved {runs['one_device']['change']:.2g}"
    )
    assert difference <= 1e-5


def test_fused_mixed_precision_mirrored_equals_one_device(runs):
    """The XLA-fused ops (`layers.fused_ops`) under
    `mixed_bfloat16` on two replicas train the same weights as on one
    device, up to bfloat16 rounding, which Adam's normalised steps amplify
    where a gradient is near zero: hence a tolerance of a third of the
    least change the weights must make. A replica computing with the wrong
    tensors would be off by the whole change."""
    single = runs["bf16_fused"]["one_device"]
    mirrored = runs["bf16_fused"]["mirrored"]
    assert mirrored["replicas"] == 2
    assert single["change"] > 3e-2
    for a, b in zip(single["weights"], mirrored["weights"]):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=0, atol=1e-2)


def test_distributed_evaluation_equals_single_device(runs):
    single = runs["one_device"]["eval"]
    mirrored = runs["mirrored"]["eval"]
    assert sorted(single) == sorted(mirrored)
    for name in ("mlm_logits_mlm_accuracy", "nsp_logits_nsp_accuracy"):
        assert mirrored[name] == single[name], name
    for name in single:  # sums in another order: float rounding only
        assert mirrored[name] == pytest.approx(single[name], rel=1e-6), name


if __name__ == "__main__":
    _child()
