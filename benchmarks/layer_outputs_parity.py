r"""Every layer's hidden states and attention probabilities vs transformers.

The real all-MiniLM-L6-v2 weights in `BertBackbone.from_checkpoint` and in
`transformers.BertModel` (PyTorch, float32, `attn_implementation="eager"`)
on the SST-2 dev sentences (`../shared/glue/SST-2/dev.tsv`), tokenized by
the checkpoint's Hugging Face tokenizer in batches padded to their longest
sentence: `BertBackbone.layer_outputs(..., return_attention_probabilities=
True)` against `output_hidden_states=True, output_attentions=True`.
Hidden states (7 of `(batch, seq, 384)`) at real tokens, and every element
with padding (at a `[PAD]` query no two float32 implementations agree to
1e-5: tests/checkpoints/test_minilm_parity.py); attention probabilities
(6 of `(batch, 12, seq, seq)`) of real queries over all keys, and every
element.

    python benchmarks/layer_outputs_parity.py --max_sentences=0

Prints the maximum absolute differences (never a mean) and the counts;
exits non-zero if a real-token figure is over `--tolerance`.
"""

import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

FIGURES = (
    "hidden_states_real_tokens",
    "hidden_states_all",
    "attentions_real_queries",
    "attentions_all",
)


def define_flags():
    """The script's flags, defined when it runs (tests import `compare`)."""
    flags.DEFINE_string(
        "sentences_file",
        os.path.join(common.SHARED, "glue", "SST-2", "dev.tsv"),
        "A TSV with a `sentence` column.",
    )
    flags.DEFINE_integer("max_sentences", 0, "Sentences compared; 0: all.")
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
    """The maximum absolute differences of `FIGURES` between keras_bert's and
    transformers' outputs on `sentences`, and `num_sentences`,
    `num_batches`, `num_padded_rows`, `num_hidden_states`,
    `num_attentions`."""
    import torch
    import transformers

    import keras_bert

    backbone = keras_bert.BertBackbone.from_checkpoint(checkpoint_dir)
    reference = transformers.BertModel.from_pretrained(
        checkpoint_dir, attn_implementation="eager"
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint_dir)
    figures = dict.fromkeys(FIGURES, 0.0)
    figures.update(num_sentences=len(sentences), num_batches=0, num_padded_rows=0)  # fmt: skip

    def update(name, a, b):
        diff = np.max(np.abs(a.astype("float64") - b.astype("float64")))
        figures[name] = max(figures[name], float(diff))

    for first in range(0, len(sentences), batch_size):
        batch = sentences[first : first + batch_size]
        encoded = tokenizer(batch, padding=True, return_tensors="np")
        inputs = {
            "token_ids": encoded["input_ids"].astype("int32"),
            "segment_ids": encoded["token_type_ids"].astype("int32"),
            "padding_mask": encoded["attention_mask"].astype("int32"),
        }
        ours = backbone.layer_outputs(inputs, return_attention_probabilities=True)  # fmt: skip
        with torch.no_grad():
            theirs = reference(
                **{k: torch.tensor(v) for k, v in encoded.items()},
                output_hidden_states=True,
                output_attentions=True,
            )
        hidden = [np.asarray(h) for h in ours["hidden_states"]]
        probabilities = [np.asarray(p) for p in ours["attention_probabilities"]]
        assert len(hidden) == len(theirs.hidden_states)
        assert len(probabilities) == len(theirs.attentions)
        real = inputs["padding_mask"].astype(bool)
        for a, b in zip(hidden, theirs.hidden_states):
            update("hidden_states_real_tokens", a[real], b.numpy()[real])
            update("hidden_states_all", a, b.numpy())
        for a, b in zip(probabilities, theirs.attentions):
            # (batch, heads, queries, keys) -> the real queries' rows.
            a, b = a.transpose(0, 2, 1, 3), b.numpy().transpose(0, 2, 1, 3)
            update("attentions_real_queries", a[real], b[real])
            update("attentions_all", a, b)
        figures["num_batches"] += 1
        figures["num_padded_rows"] += int((~real).any(axis=1).sum())
    figures.update(num_hidden_states=len(hidden), num_attentions=len(probabilities))  # fmt: skip
    return figures


def main(argv):
    del argv
    f = flags.FLAGS
    sentences = read_sentences(f.sentences_file, f.max_sentences)
    figures = compare(common.minilm_dir(), sentences, f.batch_size)
    print(
        f"all-MiniLM-L6-v2, {figures['num_sentences']} sentences of "
        f"{f.sentences_file} in {figures['num_batches']} batches "
        f"({figures['num_padded_rows']} rows with padding); "
        f"{figures['num_hidden_states']} hidden states, "
        f"{figures['num_attentions']} attention tensors"
    )
    for name in FIGURES:
        print(f"{name} max-abs-diff: {figures[name]:.3g}")
    worst = max(figures[FIGURES[0]], figures[FIGURES[2]])
    if worst > f.tolerance:
        print(f"over the tolerance {f.tolerance}")
        return 1
    return 0


if __name__ == "__main__":
    define_flags()
    app.run(main)
