"""Every layer's hidden states and attention probabilities against
`transformers` (`output_hidden_states=True`, `output_attentions=True`,
eager attention) on the real all-MiniLM-L6-v2 weights and real sentences
(SST-2 dev, padded batches). The comparison is
`python benchmarks/parity.py --check=layer_outputs`'s, which prints the
figures for all 872 sentences; here the first 256.
"""


import pytest

from benchmarks.parity import glue_rows
from benchmarks.parity import layer_outputs
from tests.checkpoints.conftest import require_references
from tests.fine_tuning.ner.data import shared_path

require_references()

TOLERANCE = 1e-5


@pytest.mark.slow
def test_hidden_states_and_attentions_match_transformers(minilm_dir):
    glue_dir = shared_path("glue")
    sentences = [row[0] for row in glue_rows("SST-2", "dev", glue_dir)][:256]
    figures = layer_outputs(minilm_dir, sentences, batch_size=32)
    print(figures)
    assert figures["num_sentences"] == 256
    assert figures["num_padded_rows"] >= 200  # real padding in the batches
    assert figures["num_hidden_states"] == 7  # embeddings + 6 blocks
    assert figures["num_attentions"] == 6
    assert figures["hidden_states_real_tokens"] <= TOLERANCE
    assert figures["attentions_real_queries"] <= TOLERANCE
    # Padding keys get no attention in either.
    assert figures["attentions_all"] <= 1e-3
