r"""Fill-mask vs `transformers`' `pipeline("fill-mask")` on real weights.

AntiBERTy (PyPI `antiberty==0.1.3`), a BERT with a masked-LM head trained
on antibody sequences, is loaded into `keras_bert.BertMaskedLM.
from_checkpoint` and into `transformers.BertForMaskedLM`; both read its
`vocab.txt` (25 tokens: the special tokens and the 20 amino acids) with a
cased BERT tokenizer, as AntiBERTy's own runner does
(`transformers.BertTokenizer(vocab_file, do_lower_case=False)`). Its
tokenizer splits text on spaces and punctuation, then into WordPieces of
its vocabulary: a sequence is written one residue per word
(`"E V Q L [MASK] E S"`); unspaced, `"EVQLVES"` is one word the
vocabulary cannot spell, a single `[UNK]`.

Inputs: real antibody chains (the sequences of
tests/checkpoints/test_antiberty_parity.py and the heavy and light chain of
AntiBERTy's README), each with one residue masked at five places spread
along it, and, for chains of 10 residues or more, with two residues
masked at once.

    python benchmarks/fill_mask_parity.py

`BertMaskedLM.fill_mask(texts, top_k=5)` (texts in padded batches of
16) against the pipeline's `top_k=5` (one text at a time): prints the
number of texts and masks, how many masks have the same five tokens in the
same order, and the largest score difference; checks that keras_bert's
tokenizer gives the Hugging Face tokenizer's ids for every text. With
`--export_dir`, also exports the model (`top_k=5`) and checks the
SavedModel's `serving_default` gives the same tokens and scores as
`fill_mask`. Exits non-zero unless every mask agrees within
`--tolerance`.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402


def define_flags():
    """The script's flags, defined only when it runs (the tests import
    its functions beside other scripts that define flags of the same
    names)."""
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
    texts = []
    for sequence in SEQUENCES:
        residues = list(sequence)
        places = sorted(
            set(np.linspace(0, len(residues) - 1, 5).round().astype(int))
        )
        for place in places:
            texts.append(" ".join(_masked(residues, [place])))
    for sequence in SEQUENCES:
        residues = list(sequence)
        if len(residues) >= 10:
            places = [len(residues) // 3, 2 * len(residues) // 3]
            texts.append(" ".join(_masked(residues, places)))
    return texts


def _masked(residues, places):
    return [MASK if i in places else r for i, r in enumerate(residues)]


def antiberty_paths():
    """`(checkpoint_dir, vocab_file)` of the installed `antiberty`."""
    import antiberty

    root = os.path.join(os.path.dirname(antiberty.__file__), "trained_models")
    return (
        os.path.join(root, "AntiBERTy_md_smooth"),
        os.path.join(root, "vocab.txt"),
    )


def keras_fill_mask_model(checkpoint_dir, vocab_file, sequence_length=256):
    """`BertMaskedLM` with the checkpoint's weights and a cased tokenizer."""
    import keras_bert

    model = keras_bert.BertMaskedLM.from_checkpoint(checkpoint_dir)
    model.preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocab_file, lowercase=False),
        sequence_length=sequence_length,
    )
    return model


def pipeline_predictions(checkpoint_dir, vocab_file, texts, top_k):
    """`transformers`' fill-mask pipeline on `texts`: per text, per mask,
    `(token ids, scores)` of its `top_k` tokens; and the tokenizer."""
    import transformers

    tokenizer = transformers.BertTokenizer(vocab_file, do_lower_case=False)
    model = transformers.BertForMaskedLM.from_pretrained(checkpoint_dir)
    fill_mask = transformers.pipeline(
        "fill-mask", model=model.eval(), tokenizer=tokenizer, device="cpu"
    )
    results = []
    for text in texts:
        answer = fill_mask(text, top_k=top_k)
        per_mask = answer if isinstance(answer[0], list) else [answer]
        results.append(
            [
                (
                    [guess["token"] for guess in guesses],
                    [guess["score"] for guess in guesses],
                    [guess["token_str"] for guess in guesses],
                )
                for guesses in per_mask
            ]
        )
    return results, tokenizer


def compare(checkpoint_dir, vocab_file, texts, top_k=5, batch_size=16):
    """keras_bert's `fill_mask` against the pipeline on `texts`.

    Returns `(figures, outputs)`: figures `num_texts`, `num_masks`,
    `same_tokens` (masks whose `top_k` token ids and strings are the
    pipeline's, in order), `max_score_diff`, `same_input_ids` (texts our
    tokenizer encodes as Hugging Face's does); outputs, `fill_mask`'s.
    """
    model = keras_fill_mask_model(checkpoint_dir, vocab_file)
    outputs = model.fill_mask(
        texts, top_k=top_k, batch_size=batch_size, verbose=0
    )
    expected, tokenizer = pipeline_predictions(
        checkpoint_dir, vocab_file, texts, top_k
    )
    ours_tokenizer = model.preprocessor.tokenizer
    figures = {
        "num_texts": len(texts),
        "num_masks": 0,
        "same_tokens": 0,
        "max_score_diff": 0.0,
        "same_input_ids": sum(
            list(np.asarray(ours_tokenizer(text)))
            == tokenizer(text, add_special_tokens=False)["input_ids"]
            for text in texts
        ),
    }
    for index, per_mask in enumerate(expected):
        assert outputs["num_masks"][index] == len(per_mask), index
        for mask, (ids, scores, strings) in enumerate(per_mask):
            figures["num_masks"] += 1
            figures["same_tokens"] += bool(
                outputs["token_id"][index, mask].tolist() == ids
                and outputs["token"][index, mask].tolist() == strings
            )
            diff = np.abs(
                outputs["score"][index, mask].astype("float64") - scores
            ).max()
            figures["max_score_diff"] = max(
                figures["max_score_diff"], float(diff)
            )
    return figures, outputs


def export_difference(model, outputs, texts, export_dir, top_k):
    """The SavedModel's `serving_default` against `fill_mask`'s `outputs`:
    `(whether every token is the same, largest score difference)`."""
    import tensorflow as tf

    from keras_bert.serving import export_saved_model

    path = export_saved_model(model, export_dir=export_dir, top_k=top_k)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    served = serve(text=tf.constant(texts))
    width = outputs["token"].shape[1]
    tokens = served["token"].numpy().astype(str)[:, :width]
    same = bool(
        (tokens == outputs["token"].astype(str)).all()
        and (served["token_id"].numpy()[:, :width] == outputs["token_id"]).all()
        and (served["num_masks"].numpy() == outputs["num_masks"]).all()
    )
    diff = np.abs(served["score"].numpy()[:, :width] - outputs["score"]).max()
    return same, float(diff)


def main(argv):
    del argv
    flags_ = flags.FLAGS
    checkpoint_dir, vocab_file = antiberty_paths()
    texts = masked_texts()
    figures, outputs = compare(
        checkpoint_dir, vocab_file, texts, top_k=flags_.top_k
    )
    print(
        f"AntiBERTy fill-mask, top_k={flags_.top_k}: {figures['num_texts']} "
        f"texts, {figures['num_masks']} masks; input ids as Hugging Face's "
        f"tokenizer: {figures['same_input_ids']}/{figures['num_texts']}"
    )
    print(
        f"same top-{flags_.top_k} tokens in the same order: "
        f"{figures['same_tokens']}/{figures['num_masks']} masks"
    )
    print(f"score max-abs-diff: {figures['max_score_diff']:.3g}")
    ok = (
        figures["same_tokens"] == figures["num_masks"]
        and figures["same_input_ids"] == figures["num_texts"]
        and figures["max_score_diff"] <= flags_.tolerance
    )
    if flags_.export_dir:
        model = keras_fill_mask_model(checkpoint_dir, vocab_file)
        same, diff = export_difference(
            model, outputs, texts, flags_.export_dir, flags_.top_k
        )
        print(
            f"SavedModel serving_default vs fill_mask: same tokens {same}, "
            f"score max-abs-diff {diff:.3g}"
        )
        ok = ok and same and diff <= flags_.tolerance
    return 0 if ok else 1


if __name__ == "__main__":
    define_flags()
    app.run(main)
