"""Every implementation of TransformerEncoderBlock against the reference.

One block's weights; each implementation in
`block_implementations.IMPLEMENTATIONS` runs every call its row says it can
(inference, training, int8 weights, query rows only), and each serving
implementation (`keras_bert.serving.runtime.block.IMPLEMENTATIONS`, run as
a served block's `served_call`) every inference call, and is compared with
`reference` on the same inputs: outputs, attention probabilities and, in
training, the gradients of the inputs and of every weight. `reference`
itself is compared with the formula in numpy (float64), at the same
tolerances. A name in the
table without a row here fails `test_every_implementation_has_rows`.

Tolerances, stated:
- float32: outputs and probabilities within 1e-5 (absolute, on outputs of
  unit scale: LayerNorm's); gradients within 2e-6 of the largest gradient
  (float32 rounding in another order).
- mixed_bfloat16: 2**-6 absolute on outputs and probabilities (two
  roundings to bfloat16's 8 significant bits: each implementation rounds
  to bfloat16 at other points), 2**-5 of the largest gradient.
- int8 weights (inference): 1e-5, as float32 (both run the same int8
  kernels; the query rows' inputs are quantized per row, as every row's).
- `serving_graph_bfloat16` (bfloat16 matmuls) on float32 weights: as
  mixed_bfloat16, 2**-6: its weights and matmul inputs are rounded to
  bfloat16.
- That tolerance cannot tell the exact GELU from the tanh one on this
  block: `test_bfloat16_rows_compute_the_exact_gelu` runs every bfloat16
  row on a block where the two differ by more than three times it.
- `serving_graph_int8_calibrated` (int8 weights): its inputs quantized to
  uint8 over the range recorded on the same inputs (one step: 1/255 of
  it), where `reference`'s int8 layers quantize each row over its own
  largest magnitude (1/127 of it): `CALIBRATED_TOLERANCE` (0.05) on
  outputs of unit scale and on probabilities.

The serving int8 rows run TensorFlow's oneDNN int8 kernels: where the
kernel does not run (oneDNN off), they are not cases, and
`test_int8_serving_rows_follow_the_cpu` checks that the plan refuses int8
there instead.

Training compares with dropout 0, and with dropout 0.1 where the dropout
masks are the reference's by seed (every position: with the query rows
only, fewer elements draw other masks). Run with `-s` for the measured
figures: the max-abs difference of each case (`FIGURES`).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers import fused_ops
from keras_bert.layers.block_implementations import IMPLEMENTATIONS
from keras_bert.layers.block_implementations import run_block
from keras_bert.layers.block_implementations import select_implementation
from keras_bert.models import BertBackbone
from keras_bert.serving import plan_export
from keras_bert.serving.runtime import block as serving_block
from keras_bert.serving.runtime.block import BlockServing
from keras_bert.serving.runtime.block import int8_ranges_of
from tests.helpers import serves
from tests.layers.block_formula import block_weights
from tests.layers.block_formula import numpy_block

HIDDEN, HEADS, INTERMEDIATE = 16, 4, 32
TOLERANCE = {"float32": 1e-5, "mixed_bfloat16": 2**-6, "int8": 1e-5}
CALIBRATED = "serving_graph_int8_calibrated"
CALIBRATED_TOLERANCE = 0.05
GRADIENT_TOLERANCE = {"float32": 2e-6, "mixed_bfloat16": 2**-5}
# Implementations whose matmuls run in bfloat16 whatever the weights: the
# mixed_bfloat16 tolerance.
BFLOAT16_MATMULS = ("serving_graph_bfloat16", "serving_graph_streams_bfloat16")
# Row 1 ends in padding, row 2 is padding only (uniform attention, no
# gradient through its scores).
MASKS = {"padded": [[1] * 7, [1] * 4 + [0] * 3, [0] * 7], "none": None}
# Repeated and padding positions too: each is an independent query.
POSITIONS = [[0, 3, 3], [0, 6, 1], [2, 0, 5]]
FIGURES = {}  # case id → (outputs, probabilities, gradients) max-abs


class _ServingRow:
    """A serving implementation as a row: inference only, at the query
    rows too; int8 weights for the int8 ones."""

    training = False
    inference = True
    query_rows = True

    def __init__(self, name):
        self.int8 = "int8" in name
        self.float = not self.int8


# The rows: the block's own table, then the serving floor's.
ROWS = {
    **{name: row for name, row in IMPLEMENTATIONS.items()},
    **{name: _ServingRow(name) for name in serving_block.IMPLEMENTATIONS},
}
SERVING = tuple(serving_block.IMPLEMENTATIONS)


def _cases():
    """(implementation, weights, mode, rows, mask, activation), each a call
    the implementation can run; the float32 calls with both masks, the
    exact GELU everywhere and the approximate one on whole float32 calls."""
    cases = []
    for name, row in ROWS.items():
        if name in SERVING and row.int8 and not serves("int8"):
            continue  # refused by the plan (test_int8_serving_rows_...)
        for weights in ("float32", "mixed_bfloat16", "int8"):
            # `reference` runs int8 weights too, but has no int8 formula to
            # be compared with (tests/layers/test_int8_matmul.py compares
            # it with its float weights).
            if weights == "int8" and (not row.int8 or name == "reference"):
                continue
            # A serving int8 row runs int8 weights only.
            if name in SERVING and row.int8 and weights != "int8":
                continue
            modes = [
                mode
                for mode, runs in (
                    ("inference", row.inference),
                    ("training", row.training),
                    # The formula has no dropout masks.
                    ("training_dropout", row.training and name != "reference"),
                )
                if runs and (weights != "int8" or mode == "inference")
            ]
            for mode in modes:
                for rows in ("all", "query"):
                    if mode == "training_dropout" and rows == "query":
                        continue
                    masks = (
                        ["padded", "none"]
                        if weights == "float32"
                        else ["padded"]
                    )
                    for mask in masks:
                        cases.append((name, weights, mode, rows, mask, "gelu"))
                if weights == "float32" and mode != "training_dropout":
                    cases.append(
                        (
                            name,
                            weights,
                            mode,
                            "all",
                            "padded",
                            "gelu_approximate",
                        )
                    )
    return cases


CASES = _cases()


def _case_id(case):
    return "-".join(case)


def test_every_implementation_has_rows():
    served_int8 = {n for n in SERVING if ROWS[n].int8}
    expected = set(ROWS) - (set() if serves("int8") else served_int8)
    assert {case[0] for case in CASES} == expected
    for name, row in ROWS.items():
        if name not in expected:
            continue
        cases = [case for case in CASES if case[0] == name]
        modes = {case[2] for case in cases}
        assert ("inference" in modes) == row.inference, name
        assert ("training" in modes) == row.training, name
        if name != "reference":
            assert ("int8" in {case[1] for case in cases}) == row.int8, name
        assert "query" in {case[3] for case in cases}, name


@pytest.fixture(scope="module", autouse=True)
def print_figures():
    yield
    print("\nmax |implementation - reference| (gradients: of the largest)")
    for case, (outputs, probs, grads) in sorted(FIGURES.items()):
        print(
            f"  {case:58} outputs {outputs:.1e}  probabilities {probs:.1e}"
            + ("" if grads is None else f"  gradients {grads:.1e}")
        )


_BLOCKS = {}


def _block(weights, dropout, activation):
    """One block per setting, with random non-small weights."""
    key = (weights, dropout, activation)
    if key not in _BLOCKS:
        keras.utils.set_random_seed(0)
        block = TransformerEncoderBlock(
            num_heads=HEADS,
            intermediate_dim=INTERMEDIATE,
            dropout=dropout,
            activation=activation,
            dtype="float32" if weights == "int8" else weights,
        )
        block(np.zeros((1, 2, HIDDEN), "float32"))
        rng = np.random.default_rng(1)
        block.set_weights(
            [
                rng.normal(0, 0.3, w.shape).astype("float32")
                for w in block.get_weights()
            ]
        )
        if weights == "int8":
            for dense in _dense_layers(block):
                dense.quantize("int8")
        _BLOCKS[key] = block
    return _BLOCKS[key]


def _dense_layers(block):
    return (
        block.qkv_dense,
        block.attention_output_dense,
        block.intermediate_dense,
        block.output_dense,
    )


def _inputs():
    return tf.constant(
        np.random.default_rng(2).normal(size=(3, 7, HIDDEN)), "float32"
    )


def _run(block, name, mask, positions, training):
    """Outputs, probabilities and (in training) the gradients of the
    inputs and every trainable weight, of `name`'s implementation; the
    dropout layers' seeds are restored after, so that the next run draws
    the same masks."""
    dropouts = [
        layer
        for layer in (
            block.attention_probs_dropout,
            block.attention_output_dropout,
            block.output_dropout,
        )
        if layer.rate > 0
    ]
    seeds = [layer.seed_generator.state.numpy() for layer in dropouts]
    x = tf.cast(_inputs(), block.compute_dtype)  # as the block's __call__
    implementation = name
    if name in SERVING:  # as a served block runs it
        implementation, ranges = None, None
        if name == CALIBRATED:  # the ranges recorded on these inputs
            recorded = {}
            block.served_call = BlockServing(
                "serving_graph_int8", frozen=False, recorded_ranges=recorded
            )
            run_block(block, x, mask, None, False, False)
            assert len(recorded) == 4, recorded
            ranges = int8_ranges_of(block, recorded)
        block.served_call = BlockServing(
            name,
            frozen=False,
            streams=2 if "streams" in name else None,
            int8_ranges=ranges,
        )
    with tf.GradientTape() as tape:
        tape.watch(x)
        try:
            outputs, probs = run_block(
                block, x, mask, positions, training, True, implementation
            )
        finally:
            block.served_call = None
        weights = tf.sin(tf.range(HIDDEN, dtype="float32"))
        loss = tf.reduce_sum(tf.cast(outputs, "float32") * weights)
    grads = []
    if training:
        grads = tape.gradient(loss, [x] + block.trainable_variables)
    for layer, seed in zip(dropouts, seeds):
        layer.seed_generator.state.assign(seed)

    def numpy(t):
        return np.asarray(tf.cast(tf.convert_to_tensor(t), "float32"))

    return numpy(outputs), numpy(probs), [numpy(g) for g in grads]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_implementation_matches_reference(monkeypatch, case):
    name, weights, mode, rows, mask, activation = case
    monkeypatch.setattr(fused_ops, "MIN_ELEMENTS", 0)
    dropout = 0.1 if mode == "training_dropout" else 0.0
    block = _block(weights, dropout, activation)
    padding_mask = None if MASKS[mask] is None else tf.constant(MASKS[mask])
    positions = tf.constant(POSITIONS) if rows == "query" else None
    training = mode != "inference"
    if name == "reference":
        outputs, probs, _ = _run(block, name, padding_mask, positions, training)
        expected, expected_probs = _numpy_block(block, padding_mask, positions)
        grads = expected_grads = []
    else:
        if name not in SERVING:
            # The implementation computes the query rows only where it can.
            _, call = select_implementation(
                block, _inputs(), padding_mask, positions, training, name
            )
            assert (call.query_positions is not None) == (
                rows == "query" and IMPLEMENTATIONS[name].query_rows
            )
        outputs, probs, grads = _run(
            block, name, padding_mask, positions, training
        )
        expected, expected_probs, expected_grads = _run(
            block, "reference", padding_mask, positions, training
        )
    assert outputs.shape == expected.shape
    assert probs.shape == expected_probs.shape
    output_error = np.abs(outputs - expected).max()
    probs_error = np.abs(probs - expected_probs).max()
    grad_error = None
    if grads:
        assert len(grads) == len(expected_grads) == 13
        grad_error = max(
            np.abs(g - e).max() / np.abs(e).max()
            for g, e in zip(grads, expected_grads)
            if np.abs(e).max() > 0  # the key bias has no gradient at all
        )
    FIGURES[_case_id(case)] = (output_error, probs_error, grad_error)
    tolerance = TOLERANCE[
        "mixed_bfloat16" if name in BFLOAT16_MATMULS else weights
    ]
    if name == CALIBRATED:
        tolerance = CALIBRATED_TOLERANCE
    assert output_error <= tolerance
    assert probs_error <= tolerance
    if grad_error is not None:
        assert grad_error <= GRADIENT_TOLERANCE[weights]


# The (implementation, weights) pairs that compute in bfloat16 at inference.
BFLOAT16_ROWS = sorted(
    {
        (name, weights)
        for name, weights, mode, rows, _, _ in CASES
        if mode == "inference"
        and rows == "all"
        and (weights == "mixed_bfloat16" or name in BFLOAT16_MATMULS)
    }
)


def _gelu_sensitive_block(weights):
    """The shared exact-GELU block, but with its intermediate
    pre-activations near -3 (bias -3, kernel a tenth as large) and an
    output kernel that scales them to unit size with a slope across the
    hidden units (which LayerNorm keeps): there the tanh GELU is about 10%
    off the exact one, while bfloat16 rounds the small outputs finely."""
    shared = _block(weights, 0.0, "gelu")
    block = TransformerEncoderBlock(
        num_heads=HEADS,
        intermediate_dim=INTERMEDIATE,
        dropout=0.0,
        activation="gelu",
        dtype=weights,
    )
    block(np.zeros((1, 2, HIDDEN), "float32"))
    block.set_weights(shared.get_weights())
    inner, outer = block.intermediate_dense, block.output_dense
    inner.kernel.assign(inner.kernel.numpy() * 0.1)
    inner.bias.assign(np.full(inner.bias.shape, -3.0, "float32"))
    slope = np.linspace(-8, 8, HIDDEN, dtype="float32")
    outer.kernel.assign(np.abs(outer.kernel.numpy()) * slope)
    return block


@pytest.mark.parametrize(
    "name, weights", BFLOAT16_ROWS, ids=["-".join(r) for r in BFLOAT16_ROWS]
)
def test_bfloat16_rows_compute_the_exact_gelu(name, weights):
    """On the shared block the tanh GELU is within 3e-4 of the exact one at
    the outputs (2.1e-4 measured), far inside bfloat16's tolerance
    (2**-6), so the matrix's bfloat16 rows cannot tell them apart. On
    `_gelu_sensitive_block` the formula's two GELUs differ by more than
    three times the tolerance (4.8e-2 measured), and each bfloat16 row
    must be within it of the exact one (at most 5.3e-3 measured)."""
    block = _gelu_sensitive_block(weights)
    mask = tf.constant(MASKS["padded"])
    outputs, _, _ = _run(block, name, mask, None, False)
    x = _inputs().numpy().astype("float64")
    w = {k: v.astype("float64") for k, v in block_weights(block).items()}
    exact, tanh = (
        numpy_block(x, np.asarray(mask), w, HEADS, approximate=approximate)
        for approximate in (False, True)
    )
    tolerance = TOLERANCE["mixed_bfloat16"]
    print(
        f"\n{name} {weights}: |tanh - exact| {np.abs(tanh - exact).max():.1e}"
        f", |outputs - exact| {np.abs(outputs - exact).max():.1e}"
    )
    assert np.abs(tanh - exact).max() > 3 * tolerance
    assert np.abs(outputs - exact).max() <= tolerance


def _numpy_block(block, padding_mask, positions):
    """The formula in float64 numpy, on the block's weights: outputs and
    attention probabilities (gathered at `positions`)."""
    x = _inputs().numpy().astype("float64")
    mask = np.ones(x.shape[:2]) if padding_mask is None else padding_mask
    outputs, probs = numpy_block(
        x,
        np.asarray(mask),
        {k: v.astype("float64") for k, v in block_weights(block).items()},
        HEADS,
        approximate=block.activation == "gelu_approximate",
        return_probs=True,
    )
    if positions is not None:
        positions = np.asarray(positions)
        outputs = np.take_along_axis(outputs, positions[:, :, None], axis=1)
        probs = np.take_along_axis(probs, positions[:, None, :, None], axis=2)
    return outputs, probs


@pytest.mark.parametrize(
    "settings, call, expected",
    [
        ({"optimizations": ()}, {}, "reference"),
        ({}, {}, "fast"),
        ({}, {"training": True}, "fast"),  # too small to pay: not fused
        ({}, {"training": True, "fuse_any_size": True}, "fused_training"),
        ({"optimizations": ("xla_fused_ops",)}, {}, "reference"),
        ({"optimizations": ("query_positions_only",)}, {"query": 1}, "fast"),
        ({}, {"training": True, "fuse_any_size": True, "int8": True}, "fast"),
        ({"optimizations": ("split_qkv_first",)}, {"int8": True}, "fast"),
        # Weight-only int8 (no input quantizer): Keras' own int8 call.
        ({}, {"int8": "weights_only"}, "fast"),
    ],
)
def test_selection(monkeypatch, settings, call, expected):
    """`select_implementation` picks the first row that can run the call
    and applies to it."""
    if call.get("fuse_any_size"):
        monkeypatch.setattr(fused_ops, "MIN_ELEMENTS", 0)
    block = TransformerEncoderBlock(
        num_heads=HEADS, intermediate_dim=INTERMEDIATE, **settings
    )
    block(np.zeros((1, 2, HIDDEN), "float32"))
    if call.get("int8"):
        config = None
        if call["int8"] == "weights_only":
            config = keras.quantizers.Int8QuantizationConfig(
                activation_quantizer=None
            )
        for dense in _dense_layers(block):
            dense.quantize("int8", config=config)
    positions = tf.constant(POSITIONS) if call.get("query") else None
    name, block_call = select_implementation(
        block, _inputs(), None, positions, call.get("training", False)
    )
    assert name == expected
    assert (block_call.query_positions is None) == (positions is None)


def test_without_query_positions_only_the_outputs_are_gathered():
    block = TransformerEncoderBlock(
        num_heads=HEADS, intermediate_dim=INTERMEDIATE, optimizations=()
    )
    block(np.zeros((1, 2, HIDDEN), "float32"))
    name, call = select_implementation(
        block, _inputs(), None, tf.constant(POSITIONS), False
    )
    assert name == "reference" and call.query_positions is None
    outputs, probs = run_block(
        block, _inputs(), None, tf.constant(POSITIONS), False, True
    )
    assert outputs.shape == (3, 3, HIDDEN)
    assert probs.shape == (3, HEADS, 3, 7)


def test_an_implementation_that_cannot_run_the_call_is_refused():
    block = TransformerEncoderBlock(num_heads=HEADS, intermediate_dim=8)
    block(np.zeros((1, 2, HIDDEN), "float32"))
    with pytest.raises(ValueError, match="'fused_training'.*training=False"):
        select_implementation(
            block, _inputs(), None, None, False, "fused_training"
        )
    with pytest.raises(ValueError, match="'flash'"):
        select_implementation(block, _inputs(), None, None, False, "flash")


def test_int8_serving_rows_follow_the_cpu():
    """Where oneDNN's int8 kernel runs, every serving int8 row is a case
    above; where it does not, the plan refuses int8 at export time, so
    that no int8 row is ever served there."""
    served_int8 = {n for n in SERVING if ROWS[n].int8}
    assert served_int8 == {"serving_graph_int8", CALIBRATED}
    names = {case[0] for case in CASES}
    if serves("int8"):
        assert served_int8 <= names
        return
    assert not served_int8 & names
    with pytest.raises(ValueError, match="oneDNN int8 kernels"):
        plan_export(_backbone(), quantize="int8")


def _backbone():
    return BertBackbone(
        vocabulary_size=8,
        num_layers=1,
        num_heads=HEADS,
        hidden_dim=HIDDEN,
        intermediate_dim=INTERMEDIATE,
        max_sequence_length=8,
    )
