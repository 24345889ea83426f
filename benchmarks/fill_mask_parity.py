r"""Fill-mask vs `transformers`' `pipeline("fill-mask")` on real weights.

AntiBERTy (PyPI `antiberty==0.1.3`), a BERT with a masked-LM head trained
on antibody sequences, loaded into `keras_bert.BertMaskedLM.from_checkpoint`
and into `transformers.BertForMaskedLM`; both read its 25-token
`vocab.txt` with a cased BERT tokenizer, as AntiBERTy's own runner does.
Its tokenizer splits on spaces and punctuation, so a sequence is written
one residue per word (`"E V Q L [MASK] E S"`; unspaced, `"EVQLVES"` is one
word the vocabulary cannot spell). Inputs: real antibody chains (those of
tests/checkpoints/test_antiberty_parity.py and AntiBERTy's README), each
with one residue masked at five places along it, and chains of 10 residues
or more with two masked at once.

    python benchmarks/fill_mask_parity.py [--export_dir=DIR]

`BertMaskedLM.fill_mask(texts, top_k=5)` (padded batches of 16) against
the pipeline's `top_k=5` (one text at a time): prints the texts and masks,
how many masks have the same five tokens in the same order, the largest
score difference, and whether our tokenizer gives Hugging Face's ids for
every text. With `--export_dir`, the model's export (`top_k=5`) too: its
`serving_default` against `fill_mask`. Exits non-zero unless every mask
agrees within `--tolerance`.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402


def define_flags():
    """The script's flags, defined when it runs (tests import `compare`)."""
    flags.DEFINE_float("tolerance", 1e-5, "The largest score difference.")
    flags.DEFINE_integer("top_k", 5, "Tokens per mask.")
    flags.DEFINE_string(
        "export_dir", None, "Also export there and compare the SavedModel."
    )


# Heavy and light antibody chains (and fragments), one letter per residue.
SEQUENCES = [
    "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMSWVRQAPGKGLEWVSAISGSGGSTYYADSVKG",
    "DIQMTQSPSSLSASVGDRVTITCRASQSISSYLNWYQQKPGKAPKLLIYAASSLQS",
    "QVQLQESGPGLVKPSETLSLTCTVSGGSISSYYWSWIRQPPGKGLEWIGYIYYSGSTNYNPSLKS",
    "EIVLTQSPGTLSLSPGERATLSCRASQSVSSSYLAWYQQKPGQAPRLLIYGASSRAT",
    "QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQG",
    "SYELTQPPSVSVSPGQTARITCSGDALPKQYAYWYQQKPGQAPVLVIYKDSERPS",
    "EVQLLESGGGLVQPGGSLRLSCAASGFTFS",
    "CQQYNSYPLTF",
    "WGQGTLVTVSS",
    "MKV",
    "ACDEFGHIKLMNPQRSTVWY",
    "GGGGSGGGGSGGGGS",
    # AntiBERTy's README: a heavy and a light chain.
    "EVQLVQSGPEVKKPGTSVKVSCKASGFTFMSSAVQWVRQARGQRLEWIGWIVIGSGNTNYAQKFQERV"
    "TITRDMSTSTAYMELSSLRSEDTAVYYCAAPYCSSISCNDGFDIWGQGTMVTVS",
    "DVVMTQTPFSLPVSLGDQASISCRSSQSLVHSNGNTYLHWYLQKPGQSPKLLIYKVSNRFSGVPDRFS"
    "GSGSGTDFTLKISRVEAEDLGVYFCSQSTHVPYTFGGGTKLEIK",
]
MASK = "[MASK]"


def masked_texts():
    """The inputs: each chain with one residue masked at five places, and
    chains of 10 or more residues with two masked at once (about a third
    and two thirds along). Residues are separated by spaces."""

    def masked(sequence, places):
        return " ".join(MASK if i in places else r for i, r in enumerate(sequence))

    texts = [
        masked(sequence, [place])
        for sequence in SEQUENCES
        for place in sorted(set(np.linspace(0, len(sequence) - 1, 5).round().astype(int)))  # fmt: skip
    ]
    return texts + [
        masked(sequence, [len(sequence) // 3, 2 * len(sequence) // 3])
        for sequence in SEQUENCES
        if len(sequence) >= 10
    ]


def antiberty_paths():
    """`(checkpoint_dir, vocab_file)` of the installed `antiberty`."""
    import antiberty

    root = os.path.join(os.path.dirname(antiberty.__file__), "trained_models")
    return f"{root}/AntiBERTy_md_smooth", f"{root}/vocab.txt"


def keras_fill_mask_model(checkpoint_dir, vocab_file):
    """`BertMaskedLM` with the checkpoint's weights and a cased tokenizer."""
    import keras_bert

    model = keras_bert.BertMaskedLM.from_checkpoint(checkpoint_dir)
    model.preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocab_file, lowercase=False), sequence_length=256
    )
    return model


def compare(checkpoint_dir, vocab_file, texts, top_k=5, batch_size=16):
    """keras_bert's `fill_mask` against the pipeline on `texts`.

    Returns `(figures, outputs)`: figures `num_texts`, `num_masks`,
    `same_tokens` (masks whose `top_k` token ids and strings are the
    pipeline's, in order), `max_score_diff`, `same_input_ids` (texts our
    tokenizer encodes as Hugging Face's does); outputs, `fill_mask`'s.
    """
    import transformers

    model = keras_fill_mask_model(checkpoint_dir, vocab_file)
    outputs = model.fill_mask(texts, top_k=top_k, batch_size=batch_size, verbose=0)
    tokenizer = transformers.BertTokenizer(vocab_file, do_lower_case=False)
    fill_mask = transformers.pipeline(
        "fill-mask",
        model=transformers.BertForMaskedLM.from_pretrained(checkpoint_dir).eval(),
        tokenizer=tokenizer,
        device="cpu",
    )
    ours = model.preprocessor.tokenizer
    figures = {
        "num_texts": len(texts),
        "num_masks": 0,
        "same_tokens": 0,
        "max_score_diff": 0.0,
        "same_input_ids": sum(
            list(np.asarray(ours(text)))
            == tokenizer(text, add_special_tokens=False)["input_ids"]
            for text in texts
        ),
    }
    for index, text in enumerate(texts):
        answer = fill_mask(text, top_k=top_k)
        per_mask = answer if isinstance(answer[0], list) else [answer]
        assert outputs["num_masks"][index] == len(per_mask), index
        for mask, guesses in enumerate(per_mask):
            figures["num_masks"] += 1
            figures["same_tokens"] += bool(
                outputs["token_id"][index, mask].tolist() == [g["token"] for g in guesses]  # fmt: skip
                and outputs["token"][index, mask].tolist() == [g["token_str"] for g in guesses]  # fmt: skip
            )
            scores = [g["score"] for g in guesses]
            diff = np.abs(outputs["score"][index, mask].astype("float64") - scores).max()  # fmt: skip
            figures["max_score_diff"] = max(figures["max_score_diff"], float(diff))
    return figures, outputs


def export_difference(model, outputs, texts, export_dir, top_k):
    """The SavedModel's `serving_default` against `fill_mask`'s `outputs`:
    `(whether every token is the same, largest score difference)`."""
    import tensorflow as tf

    from keras_bert.serving import export_saved_model

    path = export_saved_model(model, export_dir=export_dir, top_k=top_k)
    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(texts))  # fmt: skip
    width = outputs["token"].shape[1]
    same = bool(
        (served["token"].numpy().astype(str)[:, :width] == outputs["token"].astype(str)).all()  # fmt: skip
        and (served["token_id"].numpy()[:, :width] == outputs["token_id"]).all()
        and (served["num_masks"].numpy() == outputs["num_masks"]).all()
    )
    diff = np.abs(served["score"].numpy()[:, :width] - outputs["score"]).max()
    return same, float(diff)


def main(argv):
    del argv
    f = flags.FLAGS
    checkpoint_dir, vocab_file = antiberty_paths()
    texts = masked_texts()
    figures, outputs = compare(checkpoint_dir, vocab_file, texts, top_k=f.top_k)
    print(
        f"AntiBERTy fill-mask, top_k={f.top_k}: {figures['num_texts']} texts, "
        f"{figures['num_masks']} masks; input ids as Hugging Face's "
        f"tokenizer: {figures['same_input_ids']}/{figures['num_texts']}\n"
        f"same top-{f.top_k} tokens in the same order: "
        f"{figures['same_tokens']}/{figures['num_masks']} masks\n"
        f"score max-abs-diff: {figures['max_score_diff']:.3g}"
    )
    ok = (
        figures["same_tokens"] == figures["num_masks"]
        and figures["same_input_ids"] == figures["num_texts"]
        and figures["max_score_diff"] <= f.tolerance
    )
    if f.export_dir:
        model = keras_fill_mask_model(checkpoint_dir, vocab_file)
        same, diff = export_difference(model, outputs, texts, f.export_dir, f.top_k)
        print(f"SavedModel serving_default vs fill_mask: same tokens {same}, score max-abs-diff {diff:.3g}")  # fmt: skip
        ok = ok and same and diff <= f.tolerance
    return 0 if ok else 1


if __name__ == "__main__":
    define_flags()
    app.run(main)
