r"""Every layer's hidden states and attention probabilities vs transformers.

Loads the real all-MiniLM-L6-v2 weights (`common.minilm_dir()`) into
`keras_bert.BertBackbone.from_checkpoint` and into
`transformers.BertModel` (PyTorch, CPU, float32, `attn_implementation=
"eager"`), tokenizes the SST-2 dev sentences (`../shared/glue/SST-2/
dev.tsv`) with the checkpoint's Hugging Face tokenizer, in batches padded
to their longest sentence, and compares `BertBackbone.layer_outputs(...,
return_attention_probabilities=True)` with `output_hidden_states=True,
output_attentions=True`:

- `hidden_states` (7 of `(batch, seq, 384)`): every element at real
  tokens; also every element, padding included (at a `[PAD]` query no
  two float32 implementations agree to 1e-5: see
  tests/checkpoints/test_minilm_parity.py);
- `attentions` (6 of `(batch, 12, seq, seq)`): every probability of a
  real query (over all keys, padding keys included: both give them 0);
  also every element.

    python benchmarks/layer_outputs_parity.py --max_sentences=0

Prints the maximum absolute differences (never a mean) and the sentence
count; exits non-zero if a real-token figure is over `--tolerance`.
"""

import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402


def define_flags():
    """The script's flags, defined only when it runs (the tests import
    its functions beside other scripts that define flags of the same
    names)."""
    flags.DEFINE_string(
        "sentences_file",
        os.path.join(common.SHARED, "glue", "SST-2", "dev.tsv"),
        "A TSV with a `sentence` column.",
    )
    flags.DEFINE_integer(
        "max_sentences", 0, "Sentences compared, from the first; 0: all."
    )
    flags.DEFINE_integer("batch_size", 32, "Sentences per padded batch.")
    flags.DEFINE_float("tolerance", 1e-5, "The largest real-token difference.")


def read_sentences(path, limit=0):
    """The `sentence` column of a GLUE TSV (SST-2's layout)."""
    from keras_bert import files

    lines = files.read_text(path).splitlines()
    rows = csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    sentences = [row["sentence"] for row in rows]
    return sentences[:limit] if limit else sentences


def compare(checkpoint_dir, sentences, batch_size=32):
    """Maximum absolute differences between keras_bert's and transformers'
    hidden states and attention probabilities on `sentences`.

    Returns a dict: `hidden_states_real_tokens`, `hidden_states_all`,
    `attentions_real_queries`, `attentions_all` (floats), `num_sentences`,
    `num_batches`, `num_padded_rows`, `num_hidden_states`,
    `num_attentions`.
    """
    import torch
    import transformers

    import keras_bert

    backbone = keras_bert.BertBackbone.from_checkpoint(checkpoint_dir)
    reference = transformers.BertModel.from_pretrained(
        checkpoint_dir, attn_implementation="eager"
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint_dir)
    figures = {
        "hidden_states_real_tokens": 0.0,
        "hidden_states_all": 0.0,
        "attentions_real_queries": 0.0,
        "attentions_all": 0.0,
        "num_sentences": len(sentences),
        "num_batches": 0,
        "num_padded_rows": 0,
    }

    def update(name, a, b):
        diff = float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))
        figures[name] = max(figures[name], diff)

    for first in range(0, len(sentences), batch_size):
        encoded = tokenizer(
            sentences[first : first + batch_size],
            padding=True,
            return_tensors="np",
        )
        inputs = {
            "token_ids": encoded["input_ids"].astype("int32"),
            "segment_ids": encoded["token_type_ids"].astype("int32"),
            "padding_mask": encoded["attention_mask"].astype("int32"),
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
        hidden = [np.asarray(h) for h in ours["hidden_states"]]
        probs = [np.asarray(p) for p in ours["attention_probabilities"]]
        expected_hidden = [h.numpy() for h in theirs.hidden_states]
        expected_probs = [p.numpy() for p in theirs.attentions]
        assert len(hidden) == len(expected_hidden), len(expected_hidden)
        assert len(probs) == len(expected_probs), len(expected_probs)
        real = inputs["padding_mask"].astype(bool)
        for a, b in zip(hidden, expected_hidden):
            update("hidden_states_real_tokens", a[real], b[real])
            update("hidden_states_all", a, b)
        for a, b in zip(probs, expected_probs):
            # (batch, heads, queries, keys) -> real queries' rows.
            a, b = a.transpose(0, 2, 1, 3), b.transpose(0, 2, 1, 3)
            update("attentions_real_queries", a[real], b[real])
            update("attentions_all", a, b)
        figures["num_batches"] += 1
        figures["num_padded_rows"] += int((~real).any(axis=1).sum())
    figures["num_hidden_states"] = len(hidden)
    figures["num_attentions"] = len(probs)
    return figures


def main(argv):
    del argv
    flags_ = flags.FLAGS
    sentences = read_sentences(flags_.sentences_file, flags_.max_sentences)
    figures = compare(common.minilm_dir(), sentences, flags_.batch_size)
    print(
        f"all-MiniLM-L6-v2, {figures['num_sentences']} sentences of "
        f"{flags_.sentences_file} in {figures['num_batches']} batches "
        f"({figures['num_padded_rows']} rows with padding); "
        f"{figures['num_hidden_states']} hidden states, "
        f"{figures['num_attentions']} attention tensors"
    )
    for name in (
        "hidden_states_real_tokens",
        "hidden_states_all",
        "attentions_real_queries",
        "attentions_all",
    ):
        print(f"{name} max-abs-diff: {figures[name]:.3g}")
    worst = max(
        figures["hidden_states_real_tokens"],
        figures["attentions_real_queries"],
    )
    if worst > flags_.tolerance:
        print(f"over the tolerance {flags_.tolerance}")
        return 1
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(main)
