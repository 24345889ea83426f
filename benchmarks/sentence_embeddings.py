r"""BertTextEmbedder against sentence-transformers on real MiniLM and data.

Loads all-MiniLM-L6-v2 (`common.minilm_dir()`: its weights and its
sentence-transformers files) both ways and compares, on real sentences
from `../shared/glue`:

1. Stock model and STS-B: `BertTextEmbedder.from_checkpoint(dir)`
   (pooling, normalisation and `max_seq_length` read from the files)
   against `SentenceTransformer(dir).encode(sentences)` on every sentence
   of STS-B dev (both sides of its 1,500 pairs, unless `--max_sts_pairs`),
   plus an empty string and a text longer than the 256-token limit (both
   truncate it). From the same embeddings: the Spearman correlation of
   each pair's cosine (ours: `keras_bert.similarity`; theirs:
   `sentence_transformers.util.cos_sim`) with the gold scores.
2. Each pooling (`cls`, `mean`, `max`) with `normalize_embeddings` False
   and True: `BertTextEmbedder(backbone, pooling, normalize)` against a
   `SentenceTransformer(modules=[Transformer(dir, max_seq_length=256),
   Pooling(384, pooling_mode)])`'s `encode(sentences,
   normalize_embeddings=normalize)`, on `--num_sentences` real sentences
   (every SST-2 dev sentence, then STS-B train sentences) plus the empty
   and the long text.
3. The raw-text SavedModel (`export_saved_model` of the stock embedder)
   run in a process with only TensorFlow and tensorflow-text, on the
   sentences of 2., against the Keras model's `predict`.

    python benchmarks/sentence_embeddings.py

Prints each figure (maximum absolute difference over every element of
every embedding, never a mean) and writes them to `--output` (JSON).
Exits non-zero if a difference exceeds `--tolerance` (1e-5) or the
Spearman correlations differ at 4 decimals.
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
import tensorflow as tf  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import keras_bert  # noqa: E402
from benchmarks import common  # noqa: E402
from keras_bert.serving import export_saved_model  # noqa: E402

flags.DEFINE_string(
    "glue_dir", os.path.join(common.SHARED, "glue"), "GLUE data directory."
)
flags.DEFINE_integer(
    "num_sentences",
    1000,
    "Real sentences of the pooling comparison (SST-2 dev, then STS-B train).",
)
flags.DEFINE_integer(
    "max_sts_pairs", 0, "STS-B dev pairs scored (0: all 1,500)."
)
flags.DEFINE_integer("batch_size", 32, "Batch size of both libraries.")
flags.DEFINE_float("tolerance", 1e-5, "Largest allowed max-abs difference.")
flags.DEFINE_string(
    "output", "sentence_embeddings.json", "Where the figures go (JSON)."
)
FLAGS = flags.FLAGS

POOLINGS = ("cls", "mean", "max")
# Longer than all-MiniLM-L6-v2's max_seq_length (256 tokens).
LONG_TEXT = "The weather was fine and the film was long, " * 40


def read_tsv(path):
    """Rows of a GLUE TSV (header dropped), as GLUE's scripts read them."""
    with tf.io.gfile.GFile(path) as file:
        rows = list(csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[1:]


def sts_dev():
    """`(sentences_1, sentences_2, scores)` of STS-B dev."""
    rows = read_tsv(os.path.join(FLAGS.glue_dir, "STS-B", "dev.tsv"))
    rows = rows[: FLAGS.max_sts_pairs or None]
    return (
        [row[7] for row in rows],
        [row[8] for row in rows],
        np.array([float(row[9]) for row in rows]),
    )


def pooling_sentences():
    """SST-2 dev, then STS-B train sentences: `--num_sentences` of them."""
    sst2 = [row[0] for row in read_tsv(FLAGS.glue_dir + "/SST-2/dev.tsv")]
    sts_train = read_tsv(FLAGS.glue_dir + "/STS-B/train.tsv")
    more = [sentence for row in sts_train for sentence in row[7:9]]
    sentences = list(dict.fromkeys(sst2 + more))
    return sentences[: FLAGS.num_sentences]


def max_abs(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def spearman(embeddings_1, embeddings_2, scores, cosine):
    from scipy.stats import spearmanr

    return float(spearmanr(cosine(embeddings_1, embeddings_2), scores)[0])


def saved_model_embeddings(model, sentences):
    """`serving_default` of the exported model, in a TensorFlow +
    tensorflow-text process (keras_bert not importable there)."""
    with tempfile.TemporaryDirectory() as directory:
        path = export_saved_model(model, export_dir=directory + "/export")
        texts = os.path.join(directory, "texts.json")
        with open(texts, "w") as file:
            json.dump(sentences, file)
        out = os.path.join(directory, "out.npy")
        code = (
            "import json, sys, numpy as np, tensorflow as tf\n"
            "import tensorflow_text  # noqa: F401\n"
            "serve = tf.saved_model.load(sys.argv[1]).signatures"
            "['serving_default']\n"
            "texts = json.load(open(sys.argv[2]))\n"
            "rows = [serve(text=tf.constant(texts[i:i + 64]))['embedding']"
            ".numpy() for i in range(0, len(texts), 64)]\n"
            "np.save(sys.argv[3], np.concatenate(rows))\n"
            "assert not [m for m in sys.modules if m.startswith('keras_bert')]"
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run(
            [sys.executable, "-c", code, path, texts, out],
            check=True,
            env=env,
            cwd=directory,
        )
        return np.load(out)


def main(argv):
    del argv
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import util
    from sentence_transformers.models import Pooling
    from sentence_transformers.models import Transformer

    started = time.time()
    model_dir = common.minilm_dir()
    batch = FLAGS.batch_size
    edge_cases = ["", LONG_TEXT]
    print(f"Machine: {common.machine_description()}")
    results = {}

    # 1. The stock model, settings read from its files; STS-B dev.
    ours = keras_bert.BertTextEmbedder.from_checkpoint(model_dir)
    theirs = SentenceTransformer(model_dir, device="cpu")
    settings = (
        ours.pooling,
        ours.normalize,
        ours.preprocessor.sequence_length,
    )
    print(f"From the checkpoint's files: pooling, normalize, length {settings}")
    first, second, scores = sts_dev()
    sentences = first + second + edge_cases
    our_stock = ours.predict(sentences, batch_size=batch, verbose=0)
    their_stock = theirs.encode(sentences, batch_size=batch)
    pairs = len(scores)
    our_spearman = spearman(
        our_stock[:pairs],
        our_stock[pairs : 2 * pairs],
        scores,
        lambda a, b: np.diag(np.asarray(keras_bert.similarity(a, b))),
    )
    their_spearman = spearman(
        their_stock[:pairs],
        their_stock[pairs : 2 * pairs],
        scores,
        lambda a, b: np.diag(util.cos_sim(a, b).numpy()),
    )
    results["stock"] = {
        "settings": settings,
        "sentences": len(sentences),
        "max_abs_diff": max_abs(our_stock, their_stock),
        "empty_string_max_abs_diff": max_abs(our_stock[-2], their_stock[-2]),
        "long_text_max_abs_diff": max_abs(our_stock[-1], their_stock[-1]),
    }
    results["stsb_dev_spearman"] = {
        "pairs": pairs,
        "keras_bert": our_spearman,
        "sentence_transformers": their_spearman,
    }
    print(f"stock model, STS-B dev sentences: {results['stock']}")
    print(
        f"STS-B dev Spearman of cosine ({pairs} pairs): keras_bert "
        f"{our_spearman:.6f}, sentence-transformers {their_spearman:.6f}"
    )

    # 2. Each pooling, normalize_embeddings False and True.
    sentences = pooling_sentences() + edge_cases
    print(
        f"Poolings: {len(sentences) - 2} real sentences (SST-2 dev, STS-B "
        "train), an empty string and a text over 256 tokens."
    )
    results["poolings"] = {"sentences": len(sentences)}
    backbone, preprocessor = ours.backbone, ours.preprocessor
    for pooling in POOLINGS:
        reference = SentenceTransformer(
            modules=[
                Transformer(model_dir, max_seq_length=256),
                Pooling(backbone.hidden_dim, pooling_mode=pooling),
            ],
            device="cpu",
        )
        for normalize in (False, True):
            model = keras_bert.BertTextEmbedder(
                backbone, pooling, normalize, preprocessor=preprocessor
            )
            embeddings = model.predict(sentences, batch_size=batch, verbose=0)
            diff = max_abs(
                embeddings,
                reference.encode(
                    sentences, batch_size=batch, normalize_embeddings=normalize
                ),
            )
            key = f"{pooling}, normalize={normalize}"
            results["poolings"][key] = diff
            print(f"pooling={pooling!r} normalize={normalize}: max-abs {diff}")
            if (pooling, normalize) == (ours.pooling, ours.normalize):
                stock_embeddings = embeddings

    # 3. The raw-text SavedModel outside Python packages.
    served = saved_model_embeddings(ours, sentences)
    results["saved_model_max_abs_diff"] = max_abs(served, stock_embeddings)
    print(
        f"SavedModel (TF + tensorflow-text process) vs Keras predict, "
        f"{len(sentences)} sentences: max-abs "
        f"{results['saved_model_max_abs_diff']}"
    )

    results["wall_seconds"] = round(time.time() - started)
    results["machine"] = common.machine_description()
    with tf.io.gfile.GFile(FLAGS.output, "w") as file:
        json.dump(results, file, indent=2)
    print(f"Wrote {FLAGS.output} ({results['wall_seconds']} s).")
    diffs = [
        results["stock"]["max_abs_diff"],
        *[v for k, v in results["poolings"].items() if k != "sentences"],
        results["saved_model_max_abs_diff"],
    ]
    ok = max(diffs) <= FLAGS.tolerance and round(our_spearman, 4) == round(
        their_spearman, 4
    )
    if not ok:
        sys.exit(f"Not equal within {FLAGS.tolerance} or at 4 decimals.")


if __name__ == "__main__":
    app.run(main)
