"""Fill-mask against `transformers`' `pipeline("fill-mask")` on the real
AntiBERTy masked-LM weights: the same top-5 tokens, in the same order, and
their scores within 1e-5, for every mask of 81 real antibody chains with
residues masked (`python benchmarks/parity.py --check=fill_mask` prints
the figures)."""

import os

import pytest

from benchmarks.parity import fill_mask
from benchmarks.parity import masked_texts
from tests.checkpoints.conftest import require_references

require_references()

TOLERANCE = 1e-5


@pytest.mark.slow
def test_fill_mask_matches_the_transformers_pipeline(antiberty_dir):
    vocab_file = os.path.join(antiberty_dir, "..", "vocab.txt")
    texts = masked_texts()
    figures, outputs, _ = fill_mask(antiberty_dir, vocab_file, texts, top_k=5)
    print(figures)
    assert figures["num_texts"] == len(texts) >= 50
    assert figures["num_masks"] > figures["num_texts"]  # some have two
    assert figures["same_input_ids"] == figures["num_texts"]
    assert figures["same_tokens"] == figures["num_masks"]
    assert figures["max_score_diff"] <= TOLERANCE
    # Trained weights: confident first guesses (uniform would be 1/25).
    assert outputs["score"][:, 0, 0].mean() > 0.3
