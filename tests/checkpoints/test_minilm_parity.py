"""Real weights, real reference: all-MiniLM-L6-v2 against transformers.

36 inputs (20 singles, 16 pairs; accents, CJK, emoji; padded to the longest)
through `BertBackbone.from_checkpoint` and `transformers.BertModel`
(PyTorch, CPU, float32). Differences are the maximum over elements, never
a mean.
"""

import numpy as np
import pytest

from tests.checkpoints.conftest import max_abs_diff
from tests.checkpoints.conftest import require_references
from tests.checkpoints.conftest import run_torch_backbone
from tests.checkpoints.conftest import transformers

require_references()

TOLERANCE = 1e-5


def _keras_outputs(backbone, inputs):
    outputs = backbone(inputs, training=False)
    return (
        outputs["sequence_output"].numpy(),
        outputs["pooled_output"].numpy(),
    )


def test_config_comes_from_checkpoint(minilm_backbone):
    assert minilm_backbone.num_layers == 6
    assert minilm_backbone.hidden_dim == 384
    assert minilm_backbone.num_heads == 12
    assert minilm_backbone.activation == "gelu"  # HF "gelu" is exact erf
    assert minilm_backbone.layer_norm_epsilon == 1e-12


def test_parameter_count_equals_transformers(minilm_backbone, minilm_torch):
    expected = sum(p.numel() for p in minilm_torch.parameters())
    assert minilm_backbone.count_params() == expected == 22_713_216


def test_inputs_cover_singles_pairs_and_padding(minilm_inputs):
    mask = minilm_inputs["padding_mask"]
    assert len(mask) >= 32
    assert (mask == 0).any(axis=1).sum() >= 30  # most rows are padded
    assert (minilm_inputs["segment_ids"] == 1).any(axis=1).sum() == 16


def test_sequence_and_pooled_output_match_transformers(
    minilm_backbone, minilm_inputs, minilm_torch_outputs
):
    sequence, pooled = _keras_outputs(minilm_backbone, minilm_inputs)
    expected_sequence, expected_pooled = minilm_torch_outputs
    real = minilm_inputs["padding_mask"].astype(bool)
    # Every element of every real (non-padding) token, 36 inputs.
    sequence_diff = max_abs_diff(sequence[real], expected_sequence[real])
    pooled_diff = max_abs_diff(pooled, expected_pooled)
    print(f"MiniLM sequence_output max-abs-diff (real tokens): {sequence_diff}")
    print(f"MiniLM pooled_output max-abs-diff: {pooled_diff}")
    assert sequence_diff <= TOLERANCE
    assert pooled_diff <= TOLERANCE


@pytest.fixture(scope="module")
def minilm_torch64_sequence(minilm_dir, minilm_inputs):
    reference = transformers.BertModel.from_pretrained(
        minilm_dir, dtype="float64"
    ).eval()
    return run_torch_backbone(reference, minilm_inputs)[0]


def test_padding_positions_are_as_accurate_as_transformers(
    minilm_backbone,
    minilm_inputs,
    minilm_torch_outputs,
    minilm_torch64_sequence,
):
    """At padding positions no float32 implementation agrees to 1e-5.

    The hidden state of a `[PAD]` query is ill-conditioned: float32
    round-off grows about 100x over six layers there (it does not at real
    tokens), so `transformers` itself misses its own float64 result by
    ~1e-4, and ours by as much, varying from run to run with the CPU
    kernels chosen. We hold ours to the same standard: within three times
    `transformers`' own float32 error of the float64 result. (In float64
    the padding gap disappears; see the next test.)
    """
    sequence, _ = _keras_outputs(minilm_backbone, minilm_inputs)
    padding = ~minilm_inputs["padding_mask"].astype(bool)
    expected = minilm_torch64_sequence
    ours = max_abs_diff(sequence[padding], expected[padding])
    theirs = max_abs_diff(minilm_torch_outputs[0][padding], expected[padding])
    ours_real = max_abs_diff(sequence[~padding], expected[~padding])
    print(f"padding positions vs float64: keras {ours}, transformers {theirs}")
    print(f"real tokens vs float64: keras {ours_real}")
    assert ours <= 3 * theirs
    assert ours_real <= TOLERANCE


@pytest.mark.slow
def test_float64_matches_at_every_element_padding_included(
    minilm_dir, minilm_inputs, minilm_torch64_sequence
):
    """Same semantics everywhere: in float64 the padding gap disappears."""
    from keras_bert import BertBackbone

    backbone = BertBackbone.from_checkpoint(minilm_dir, dtype="float64")
    sequence, _ = _keras_outputs(backbone, minilm_inputs)
    assert sequence.dtype == np.float64
    diff = max_abs_diff(sequence, minilm_torch64_sequence)
    print(f"float64 sequence_output max-abs-diff, all elements: {diff}")
    assert diff <= TOLERANCE


def test_padding_does_not_change_real_tokens(minilm_backbone, minilm_inputs):
    # Row 1 alone, unpadded, against its padded copy in the batch.
    length = int(minilm_inputs["padding_mask"][1].sum())
    alone = {k: v[1:2, :length] for k, v in minilm_inputs.items()}
    sequence_alone, _ = _keras_outputs(minilm_backbone, alone)
    sequence, _ = _keras_outputs(minilm_backbone, minilm_inputs)
    assert max_abs_diff(sequence_alone[0], sequence[1, :length]) <= 1e-5


@pytest.mark.slow
def test_approximate_gelu_would_miss_the_reference(
    minilm_dir, minilm_inputs, minilm_torch_outputs
):
    """Why the activation is read from the config: tanh GELU misses."""
    from keras_bert import BertBackbone

    wrong = BertBackbone.from_checkpoint(
        minilm_dir, activation="gelu_approximate"
    )
    sequence, _ = _keras_outputs(wrong, minilm_inputs)
    real = minilm_inputs["padding_mask"].astype(bool)
    diff = max_abs_diff(sequence[real], minilm_torch_outputs[0][real])
    print(f"MiniLM with tanh GELU instead of exact: {diff}")
    assert diff > 1e-3


@pytest.mark.parametrize("model_class", ["BertMaskedLM", "BertClassifier"])
def test_task_models_load_the_same_backbone(
    minilm_dir, minilm_backbone, model_class
):
    import keras_bert

    cls = getattr(keras_bert, model_class)
    kwargs = {"num_classes": 3} if model_class == "BertClassifier" else {}
    model = cls.from_checkpoint(minilm_dir, **kwargs)
    for ours, theirs in zip(
        model.backbone.weights, minilm_backbone.weights, strict=True
    ):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
