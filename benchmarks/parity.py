r"""keras-bert against the reference libraries on real weights and data.

Each `--check` prints maximum absolute differences (over every element,
never a mean) and exits non-zero if one is over `--tolerance`:

layer_outputs  all-MiniLM-L6-v2 in `BertBackbone.from_checkpoint` and in
    `transformers.BertModel` (eager attention) on the SST-2 dev sentences,
    tokenized by the checkpoint's Hugging Face tokenizer in batches padded
    to their longest: `layer_outputs(..., return_attention_probabilities=
    True)` against `output_hidden_states=True, output_attentions=True`.
    Hidden states at real tokens, and every element (at a `[PAD]` query no
    two float32 implementations agree to 1e-5); attention probabilities of
    real queries over all keys, and every element.
fill_mask  AntiBERTy (PyPI `antiberty==0.1.3`, a BERT with a masked-LM head
    trained on antibody sequences; its 25-token vocabulary read cased, as
    its own runner does) in `BertMaskedLM.fill_mask(texts, top_k=5)`
    (batches of 16) against `transformers`' fill-mask pipeline (one text
    at a time), on real chains written one residue a word, each with one
    residue masked at five places and, from 10 residues, two at once: the
    same five tokens in the same order, the scores, and our tokenizer's
    ids against Hugging Face's; with `--export_dir`, the export's
    `serving_default` against `fill_mask` too.
sentence_embeddings  all-MiniLM-L6-v2 as `BertTextEmbedder.from_checkpoint`
    (pooling, normalisation and length from its sentence-transformers
    files) against `SentenceTransformer(dir).encode` on both sides of the
    STS-B dev pairs, plus an empty string and a text over 256 tokens, and
    the Spearman correlation of each pair's cosine with the gold scores;
    each pooling with and without normalisation against `SentenceTransformer
    (modules=[Transformer(dir, max_seq_length=256), Pooling(384, mode)])`
    on `--num_sentences` sentences (SST-2 dev, then STS-B train); and the
    stock embedder's SavedModel, in a process with only TensorFlow and
    tensorflow-text, against `predict`. Writes the figures to `--output`.

    python benchmarks/parity.py --check=layer_outputs
    python benchmarks/parity.py --check=fill_mask --export_dir=/tmp/fill_mask
    python benchmarks/parity.py --check=sentence_embeddings
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

LAYER_FIGURES = (
    "hidden_states_real_tokens",
    "hidden_states_all",
    "attentions_real_queries",
    "attentions_all",
)
# Heavy and light antibody chains (and fragments), one letter a residue.
CHAINS = [
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
# Longer than all-MiniLM-L6-v2's max_seq_length (256 tokens).
EDGE_CASES = ["", "The weather was fine and the film was long, " * 40]
SERVE = """import json, sys, numpy as np, tensorflow as tf
import tensorflow_text  # noqa: F401
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
texts = json.load(open(sys.argv[2]))
rows = [serve(text=tf.constant(texts[i:i + 64]))["embedding"].numpy()
        for i in range(0, len(texts), 64)]
np.save(sys.argv[3], np.concatenate(rows))
assert not [m for m in sys.modules if m.startswith("keras_bert")]
"""


def define_flags():
    """The flags, defined when the script runs (tests import its checks)."""
    checks = ["layer_outputs", "fill_mask", "sentence_embeddings"]
    flags.DEFINE_enum("check", None, checks, "What to compare.")
    flags.DEFINE_float("tolerance", 1e-5, "The largest difference allowed.")
    flags.DEFINE_integer("batch_size", 32, "Sentences per batch, both sides.")
    flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
    flags.DEFINE_integer("max_sentences", 0, "layer_outputs: the first N.")
    flags.DEFINE_string("export_dir", None, "fill_mask: export there too.")
    flags.DEFINE_integer(
        "num_sentences", 1000, "sentence_embeddings: poolings."
    )
    flags.DEFINE_integer(
        "max_sts_pairs", 0, "sentence_embeddings: STS-B pairs."
    )
    flags.DEFINE_string("output", "sentence_embeddings.json", "Its figures.")
    flags.mark_flag_as_required("check")


def glue_rows(task, split, glue_dir=common.GLUE):
    """Rows of a GLUE TSV (header dropped), as GLUE's scripts read them."""
    from keras_bert import files

    text = files.read_text(os.path.join(glue_dir, task, f"{split}.tsv"))
    return list(
        csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    )[1:]


def max_abs(a, b):
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return float(np.max(np.abs(a - b), initial=0.0))


def layer_outputs(checkpoint_dir, sentences, batch_size=32):
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


def check_layer_outputs(f):
    sentences = [row[0] for row in glue_rows("SST-2", "dev", f.glue_dir)]
    sentences = sentences[: f.max_sentences or None]
    figures = layer_outputs(common.minilm_dir(), sentences, f.batch_size)
    print(
        f"all-MiniLM-L6-v2, {figures['num_sentences']} SST-2 dev sentences in "
        f"{figures['num_batches']} batches ({figures['num_padded_rows']} rows "
        f"with padding); {figures['num_hidden_states']} hidden states, "
        f"{figures['num_attentions']} attention tensors"
    )
    for name in LAYER_FIGURES:
        print(f"{name} max-abs-diff: {figures[name]:.3g}")
    return (
        max(figures[LAYER_FIGURES[0]], figures[LAYER_FIGURES[2]]) <= f.tolerance
    )


def masked_texts():
    """Each chain with one residue masked at five places, and chains of 10
    or more with two masked at once (a third and two thirds along)."""

    def masked(chain, places):
        return " ".join(
            "[MASK]" if i in places else r for i, r in enumerate(chain)
        )

    texts = [
        masked(chain, [place])
        for chain in CHAINS
        for place in sorted(
            set(np.linspace(0, len(chain) - 1, 5).round().astype(int))
        )
    ]
    return texts + [
        masked(chain, [len(chain) // 3, 2 * len(chain) // 3])
        for chain in CHAINS
        if len(chain) >= 10
    ]


def antiberty():
    """`(checkpoint_dir, vocab_file)` of the installed `antiberty`."""
    import antiberty

    root = os.path.join(os.path.dirname(antiberty.__file__), "trained_models")
    return f"{root}/AntiBERTy_md_smooth", f"{root}/vocab.txt"


def fill_mask(checkpoint_dir, vocab_file, texts, top_k=5, batch_size=16):
    """keras_bert's `fill_mask` against the pipeline on `texts`: `(figures,
    outputs, model)`, figures `num_texts`, `num_masks`, `same_tokens`
    (masks whose `top_k` token ids and strings are the pipeline's, in
    order), `max_score_diff`, `same_input_ids` (texts our tokenizer
    encodes as Hugging Face's)."""
    import transformers

    import keras_bert

    model = keras_bert.BertMaskedLM.from_checkpoint(checkpoint_dir)
    model.preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer(vocab_file, lowercase=False),
        sequence_length=256,
    )
    outputs = model.fill_mask(
        texts, top_k=top_k, batch_size=batch_size, verbose=0
    )
    tokenizer = transformers.BertTokenizer(vocab_file, do_lower_case=False)
    reference = transformers.BertForMaskedLM.from_pretrained(
        checkpoint_dir
    ).eval()
    pipeline = transformers.pipeline(
        "fill-mask", model=reference, tokenizer=tokenizer, device="cpu"
    )
    ours = model.preprocessor.tokenizer
    figures = {
        "num_texts": len(texts),
        "num_masks": 0,
        "same_tokens": 0,
        "max_score_diff": 0.0,
        "same_input_ids": sum(
            np.asarray(ours(t)).tolist()
            == tokenizer(t, add_special_tokens=False)["input_ids"]
            for t in texts
        ),
    }
    for index, text in enumerate(texts):
        answer = pipeline(text, top_k=top_k)
        per_mask = answer if isinstance(answer[0], list) else [answer]
        assert outputs["num_masks"][index] == len(per_mask), index
        for mask, guesses in enumerate(per_mask):
            figures["num_masks"] += 1
            figures["same_tokens"] += bool(
                outputs["token_id"][index, mask].tolist()
                == [g["token"] for g in guesses]
                and outputs["token"][index, mask].tolist()
                == [g["token_str"] for g in guesses]
            )
            scores = [g["score"] for g in guesses]
            figures["max_score_diff"] = max(
                figures["max_score_diff"],
                max_abs(outputs["score"][index, mask], scores),
            )
    return figures, outputs, model


def check_fill_mask(f):
    import tensorflow as tf

    from keras_bert.serving import export_saved_model

    texts = masked_texts()
    figures, outputs, model = fill_mask(*antiberty(), texts)
    print(
        f"AntiBERTy fill-mask, top_k=5: {figures['num_texts']} texts, "
        f"{figures['num_masks']} masks; input ids as Hugging Face's "
        f"tokenizer: {figures['same_input_ids']}/{figures['num_texts']}\n"
        f"same top-5 tokens in the same order: "
        f"{figures['same_tokens']}/{figures['num_masks']} masks\n"
        f"score max-abs-diff: {figures['max_score_diff']:.3g}"
    )
    ok = (
        figures["same_tokens"] == figures["num_masks"]
        and figures["same_input_ids"] == figures["num_texts"]
        and figures["max_score_diff"] <= f.tolerance
    )
    if f.export_dir:
        path = export_saved_model(model, export_dir=f.export_dir, top_k=5)
        serve = tf.saved_model.load(path).signatures["serving_default"]
        served = {
            k: v.numpy() for k, v in serve(text=tf.constant(texts)).items()
        }
        width = outputs["token"].shape[1]
        same = bool(
            (
                served["token"].astype(str)[:, :width]
                == outputs["token"].astype(str)
            ).all()
            and (served["token_id"][:, :width] == outputs["token_id"]).all()
            and (served["num_masks"] == outputs["num_masks"]).all()
        )
        diff = max_abs(served["score"][:, :width], outputs["score"])
        print(
            f"SavedModel serving_default vs fill_mask: same tokens {same}, score max-abs-diff {diff:.3g}"
        )
        ok = ok and same and diff <= f.tolerance
    return ok


def served_embeddings(model, sentences):
    """The export's `serving_default` in a TensorFlow + tensorflow-text
    process (keras_bert not importable there)."""
    import keras_bert

    with tempfile.TemporaryDirectory() as directory:
        path = keras_bert.serving.export_saved_model(
            model, export_dir=f"{directory}/e"
        )
        with open(f"{directory}/texts.json", "w") as file:
            json.dump(sentences, file)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        command = [sys.executable, "-c", SERVE, path, "texts.json", "out.npy"]
        subprocess.run(command, check=True, env=env, cwd=directory)
        return np.load(f"{directory}/out.npy")


def check_sentence_embeddings(f):
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import util
    from sentence_transformers.models import Pooling
    from sentence_transformers.models import Transformer

    import keras_bert

    started, model_dir, batch = time.time(), common.minilm_dir(), f.batch_size
    print(f"Machine: {common.machine_description()}")
    ours = keras_bert.BertTextEmbedder.from_checkpoint(model_dir)
    theirs = SentenceTransformer(model_dir, device="cpu")
    settings = (ours.pooling, ours.normalize, ours.preprocessor.sequence_length)
    print(f"From the checkpoint's files: pooling, normalize, length {settings}")
    rows = glue_rows("STS-B", "dev", f.glue_dir)[: f.max_sts_pairs or None]
    pairs, scores = len(rows), [float(row[9]) for row in rows]
    sentences = [r[7] for r in rows] + [r[8] for r in rows] + EDGE_CASES
    our_stock = ours.predict(sentences, batch_size=batch, verbose=0)
    their_stock = theirs.encode(sentences, batch_size=batch)

    def spearman(embeddings, cosine):
        first, second = embeddings[:pairs], embeddings[pairs : 2 * pairs]
        return float(
            spearmanr(np.diag(np.asarray(cosine(first, second))), scores)[0]
        )

    results = {
        "stock": {
            "settings": settings,
            "sentences": len(sentences),
            "max_abs_diff": max_abs(our_stock, their_stock),
            "empty_string_max_abs_diff": max_abs(
                our_stock[-2], their_stock[-2]
            ),
            "long_text_max_abs_diff": max_abs(our_stock[-1], their_stock[-1]),
        },
        "stsb_dev_spearman": {
            "pairs": pairs,
            "keras_bert": spearman(our_stock, keras_bert.similarity),
            "sentence_transformers": spearman(
                their_stock, lambda a, b: util.cos_sim(a, b).numpy()
            ),
        },
    }
    spearmans = results["stsb_dev_spearman"]
    print(f"stock model, STS-B dev sentences: {results['stock']}")
    print(
        f"STS-B dev Spearman of cosine ({pairs} pairs): keras_bert "
        f"{spearmans['keras_bert']:.6f}, sentence-transformers "
        f"{spearmans['sentence_transformers']:.6f}"
    )
    sst2 = [row[0] for row in glue_rows("SST-2", "dev", f.glue_dir)]
    more = [
        s for row in glue_rows("STS-B", "train", f.glue_dir) for s in row[7:9]
    ]
    sentences = list(dict.fromkeys(sst2 + more))[: f.num_sentences] + EDGE_CASES
    results["poolings"] = {"sentences": len(sentences)}
    for pooling in ("cls", "mean", "max"):
        modules = [
            Transformer(model_dir, max_seq_length=256),
            Pooling(ours.backbone.hidden_dim, pooling_mode=pooling),
        ]
        reference = SentenceTransformer(modules=modules, device="cpu")
        for normalize in (False, True):
            model = keras_bert.BertTextEmbedder(
                ours.backbone,
                pooling,
                normalize,
                preprocessor=ours.preprocessor,
            )
            embeddings = model.predict(sentences, batch_size=batch, verbose=0)
            expected = reference.encode(
                sentences, batch_size=batch, normalize_embeddings=normalize
            )
            diff = max_abs(embeddings, expected)
            results["poolings"][f"{pooling}, normalize={normalize}"] = diff
            print(f"pooling={pooling!r} normalize={normalize}: max-abs {diff}")
            if (pooling, normalize) == (ours.pooling, ours.normalize):
                stock = embeddings
    results["saved_model_max_abs_diff"] = served = max_abs(
        served_embeddings(ours, sentences), stock
    )
    print(
        f"SavedModel (TF + tensorflow-text) vs predict, {len(sentences)} sentences: {served}"
    )
    results.update(
        wall_seconds=round(time.time() - started),
        machine=common.machine_description(),
    )
    common.write_record(f.output, results)
    print(f"Wrote {f.output} ({results['wall_seconds']} s).")
    diffs = [results["stock"]["max_abs_diff"], served]
    diffs += [v for k, v in results["poolings"].items() if k != "sentences"]
    same = round(spearmans["keras_bert"], 4) == round(
        spearmans["sentence_transformers"], 4
    )
    return max(diffs) <= f.tolerance and same


def main(argv):
    del argv
    f = flags.FLAGS
    check = globals()[f"check_{f.check}"]
    return 0 if check(f) else 1


if __name__ == "__main__":
    define_flags()
    app.run(main)
