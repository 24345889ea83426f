"""benchmarks/contestants/synthetic.py: the FLOPs the speed races' MFU
counts."""

import pytest

from benchmarks.contestants import synthetic

H, V = synthetic.CONFIG["hidden_dim"], synthetic.CONFIG["vocabulary_size"]
L, S, P = (
    synthetic.CONFIG["num_layers"],
    synthetic.SEQUENCE,
    synthetic.PREDICTIONS,
)


def test_peers_count_every_block_at_every_position():
    # 6 per weight per token, 12 x S x H per token for attention, the
    # pooler and the 2-class head once per sequence.
    expected = (
        6 * synthetic.encoder_parameters()
        + 12 * L * S * H
        + (6 * (H * H + H) + 6 * 2 * (H + 1)) / S
    )
    for framework in ("hub", "torch", "torch_compile"):
        assert synthetic.flops_per_token(
            framework, "classify"
        ) == pytest.approx(expected)


def test_ours_runs_the_last_block_on_the_read_positions_only():
    block = synthetic.encoder_parameters() // L
    key_value = 2 * H * H + 2 * H
    for task, rows in (("classify", 1), ("pretrain", 1 + P)):
        skipped = (S - rows) * (6 * (block - key_value) + 12 * S * H) / S
        ours = synthetic.flops_per_token("ours", task)
        hub = synthetic.flops_per_token("hub", task)
        nsp = 6 * 2 * (H + 1) / S if task == "pretrain" else 0
        assert hub - ours == pytest.approx(skipped - nsp)


def test_transformers_decodes_every_position_in_pre_training():
    decoder = 6 * (H * H + 2 * H + H * V + V)
    torch = synthetic.flops_per_token("torch", "pretrain")
    hub = synthetic.flops_per_token("hub", "pretrain")
    nsp = 6 * 2 * (H + 1)
    assert torch - hub == pytest.approx(((S - P) * decoder + nsp) / S)


def test_inference_counts_two_flops_per_weight_and_the_attention():
    expected = 2 * synthetic.encoder_parameters() + 4 * L * S * H
    assert synthetic.flops_per_token("ours", "inference") == expected
