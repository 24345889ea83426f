"""Every layer's hidden states and attention probabilities against
`transformers` (`output_hidden_states=True`, `output_attentions=True`,
eager attention) on the real all-MiniLM-L6-v2 weights and every SST-2 dev
sentence, tokenized by the checkpoint's Hugging Face tokenizer in padded
batches of 32. `python -m pytest -s -m slow
tests/checkpoints/test_layer_outputs_parity.py` prints the figures:
maximum absolute differences of hidden states at real tokens and of
attention probabilities of real queries (held to 1e-5), and of every
element (at a `[PAD]` query no two float32 implementations agree to
1e-5: tests/checkpoints/test_minilm_parity.py).
"""

import csv

import numpy as np
import pytest

from tests.checkpoints.conftest import require_references
from tests.fine_tuning.ner.data import shared_path

require_references()

TOLERANCE = 1e-5
LAYER_FIGURES = (
    "hidden_states_real_tokens",
    "hidden_states_all",
    "attentions_real_queries",
    "attentions_all",
)


def max_abs(a, b):
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return float(np.max(np.abs(a - b), initial=0.0))


def compare(checkpoint_dir, sentences, batch_size=32):
    """`LAYER_FIGURES` between keras_bert's and transformers' outputs on
    `sentences`, and `num_sentences`, `num_batches`, `num_padded_rows`,
    `num_hidden_states`, `num_attentions`."""
    import torch
    import transformers

    import keras_bert

    backbone = keras_bert.BertBackbone.from_checkpoint(checkpoint_dir)
    reference = transformers.BertModel.from_pretrained(
        checkpoint_dir, attn_implementation="eager"
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint_dir)
    figures = dict.fromkeys(LAYER_FIGURES, 0.0)
    figures.update(
        num_sentences=len(sentences), num_batches=0, num_padded_rows=0
    )

    def update(name, a, b):
        figures[name] = max(figures[name], max_abs(a, b))

    for first in range(0, len(sentences), batch_size):
        batch = sentences[first : first + batch_size]
        encoded = tokenizer(batch, padding=True, return_tensors="np")
        names = ("input_ids", "token_type_ids", "attention_mask")
        inputs = {
            ours: encoded[theirs].astype("int32")
            for ours, theirs in zip(
                ("token_ids", "segment_ids", "padding_mask"), names
            )
        }
        ours = backbone.layer_outputs(
            inputs, return_attention_probabilities=True
        )
        with torch.no_grad():
            theirs = reference(
                **{k: torch.tensor(v) for k, v in encoded.items()},
                output_hidden_states=True,
                output_attentions=True,
            )
        assert len(ours["hidden_states"]) == len(theirs.hidden_states)
        assert len(ours["attention_probabilities"]) == len(theirs.attentions)
        real = inputs["padding_mask"].astype(bool)
        for a, b in zip(ours["hidden_states"], theirs.hidden_states):
            a, b = np.asarray(a), b.numpy()
            update("hidden_states_real_tokens", a[real], b[real])
            update("hidden_states_all", a, b)
        for a, b in zip(ours["attention_probabilities"], theirs.attentions):
            # (batch, heads, queries, keys) -> the real queries' rows.
            a, b = (
                np.asarray(a).transpose(0, 2, 1, 3),
                b.numpy().transpose(0, 2, 1, 3),
            )
            update("attentions_real_queries", a[real], b[real])
            update("attentions_all", a, b)
        figures["num_batches"] += 1
        figures["num_padded_rows"] += int((~real).any(axis=1).sum())
    figures["num_hidden_states"] = len(ours["hidden_states"])
    figures["num_attentions"] = len(ours["attention_probabilities"])
    return figures


@pytest.mark.slow
def test_hidden_states_and_attentions_match_transformers(minilm_dir):
    with open(shared_path("glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    sentences = [row[0] for row in rows[1:]]
    figures = compare(minilm_dir, sentences, batch_size=32)
    print(figures)
    assert figures["num_sentences"] == len(sentences) == 872
    assert figures["num_padded_rows"] >= 800  # real padding in the batches
    assert figures["num_hidden_states"] == 7  # embeddings + 6 blocks
    assert figures["num_attentions"] == 6
    assert figures["hidden_states_real_tokens"] <= TOLERANCE
    assert figures["attentions_real_queries"] <= TOLERANCE
    # Padding keys get no attention in either.
    assert figures["attentions_all"] <= 1e-3
