r"""BertTextEmbedder against sentence-transformers on real MiniLM and data.

all-MiniLM-L6-v2 (its weights and sentence-transformers files) loaded both
ways, compared on real sentences from `../shared/glue` plus an empty string
and a text longer than the 256-token limit (both sides truncate it):

1. The stock model (`BertTextEmbedder.from_checkpoint(dir)`: pooling,
   normalisation and `max_seq_length` from the files) against
   `SentenceTransformer(dir).encode` on both sides of STS-B dev's pairs;
   from the same embeddings, the Spearman correlation of each pair's
   cosine (ours `keras_bert.similarity`, theirs `util.cos_sim`) with the
   gold scores.
2. Each pooling (`cls`, `mean`, `max`), `normalize_embeddings` False and
   True, against `SentenceTransformer(modules=[Transformer(dir,
   max_seq_length=256), Pooling(384, mode)])` on `--num_sentences` real
   sentences (SST-2 dev, then STS-B train).
3. The raw-text SavedModel of the stock embedder, run in a process with
   only TensorFlow and tensorflow-text, on the sentences of 2., against
   the Keras model's `predict`.

    python benchmarks/sentence_embeddings.py [--max_sts_pairs=0]

Prints each figure (the maximum absolute difference over every element of
every embedding) and writes them to `--output` (JSON); exits non-zero if
one exceeds `--tolerance` or the Spearman correlations differ at 4
decimals.
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

flags.DEFINE_string("glue_dir", os.path.join(common.SHARED, "glue"), "GLUE.")
flags.DEFINE_integer("num_sentences", 1000, "Real sentences of comparison 2.")
flags.DEFINE_integer("max_sts_pairs", 0, "STS-B dev pairs (0: all 1,500).")
flags.DEFINE_integer("batch_size", 32, "Batch size of both libraries.")
flags.DEFINE_float("tolerance", 1e-5, "Largest allowed max-abs difference.")
flags.DEFINE_string("output", "sentence_embeddings.json", "The figures.")
FLAGS = flags.FLAGS

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


def read_tsv(task, split):
    """Rows of a GLUE TSV (header dropped), as GLUE's scripts read them."""
    path = os.path.join(FLAGS.glue_dir, task, f"{split}.tsv")
    with tf.io.gfile.GFile(path) as file:
        return list(csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]


def max_abs(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def served_embeddings(model, sentences):
    """The export's `serving_default` in a TensorFlow + tensorflow-text
    process (keras_bert not importable there)."""
    with tempfile.TemporaryDirectory() as directory:
        path = keras_bert.serving.export_saved_model(model, export_dir=f"{directory}/e")
        with open(f"{directory}/texts.json", "w") as file:
            json.dump(sentences, file)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        command = [sys.executable, "-c", SERVE, path, "texts.json", "out.npy"]
        subprocess.run(command, check=True, env=env, cwd=directory)
        return np.load(f"{directory}/out.npy")


def main(argv):
    del argv
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import util
    from sentence_transformers.models import Pooling
    from sentence_transformers.models import Transformer

    started, model_dir, batch = time.time(), common.minilm_dir(), FLAGS.batch_size
    print(f"Machine: {common.machine_description()}")
    results = {}
    ours = keras_bert.BertTextEmbedder.from_checkpoint(model_dir)
    theirs = SentenceTransformer(model_dir, device="cpu")
    settings = (ours.pooling, ours.normalize, ours.preprocessor.sequence_length)
    print(f"From the checkpoint's files: pooling, normalize, length {settings}")
    rows = read_tsv("STS-B", "dev")[: FLAGS.max_sts_pairs or None]
    pairs, scores = len(rows), np.array([float(row[9]) for row in rows])
    sentences = [r[7] for r in rows] + [r[8] for r in rows] + EDGE_CASES
    our_stock = ours.predict(sentences, batch_size=batch, verbose=0)
    their_stock = theirs.encode(sentences, batch_size=batch)

    def spearman(embeddings, cosine):
        first, second = embeddings[:pairs], embeddings[pairs : 2 * pairs]
        return float(spearmanr(np.diag(np.asarray(cosine(first, second))), scores)[0])  # fmt: skip

    results["stock"] = {
        "settings": settings,
        "sentences": len(sentences),
        "max_abs_diff": max_abs(our_stock, their_stock),
        "empty_string_max_abs_diff": max_abs(our_stock[-2], their_stock[-2]),
        "long_text_max_abs_diff": max_abs(our_stock[-1], their_stock[-1]),
    }
    results["stsb_dev_spearman"] = {
        "pairs": pairs,
        "keras_bert": spearman(our_stock, keras_bert.similarity),
        "sentence_transformers": spearman(their_stock, lambda a, b: util.cos_sim(a, b).numpy()),  # fmt: skip
    }
    print(f"stock model, STS-B dev sentences: {results['stock']}")
    print(f"STS-B dev Spearman of cosine: {results['stsb_dev_spearman']}")
    sst2 = [row[0] for row in read_tsv("SST-2", "dev")]
    more = [s for row in read_tsv("STS-B", "train") for s in row[7:9]]
    sentences = list(dict.fromkeys(sst2 + more))[: FLAGS.num_sentences] + EDGE_CASES
    print(f"Poolings: {len(sentences) - 2} real sentences, an empty string, a long text.")  # fmt: skip
    results["poolings"] = {"sentences": len(sentences)}
    for pooling in ("cls", "mean", "max"):
        reference = SentenceTransformer(
            modules=[Transformer(model_dir, max_seq_length=256), Pooling(ours.backbone.hidden_dim, pooling_mode=pooling)],  # fmt: skip
            device="cpu",
        )
        for normalize in (False, True):
            model = keras_bert.BertTextEmbedder(
                ours.backbone, pooling, normalize, preprocessor=ours.preprocessor
            )
            embeddings = model.predict(sentences, batch_size=batch, verbose=0)
            expected = reference.encode(sentences, batch_size=batch, normalize_embeddings=normalize)  # fmt: skip
            results["poolings"][f"{pooling}, normalize={normalize}"] = diff = max_abs(embeddings, expected)  # fmt: skip
            print(f"pooling={pooling!r} normalize={normalize}: max-abs {diff}")
            if (pooling, normalize) == (ours.pooling, ours.normalize):
                stock_embeddings = embeddings
    served = served_embeddings(ours, sentences)
    results["saved_model_max_abs_diff"] = max_abs(served, stock_embeddings)
    print(f"SavedModel (TF + tensorflow-text process) vs Keras predict, {len(sentences)} sentences: max-abs {results['saved_model_max_abs_diff']}")  # fmt: skip
    results.update(wall_seconds=round(time.time() - started), machine=common.machine_description())  # fmt: skip
    common.write_record(FLAGS.output, results)
    print(f"Wrote {FLAGS.output} ({results['wall_seconds']} s).")
    diffs = [results["stock"]["max_abs_diff"], results["saved_model_max_abs_diff"]]
    diffs += [v for k, v in results["poolings"].items() if k != "sentences"]
    spearmans = results["stsb_dev_spearman"]
    if max(diffs) > FLAGS.tolerance or round(spearmans["keras_bert"], 4) != round(spearmans["sentence_transformers"], 4):  # fmt: skip
        sys.exit(f"Not equal within {FLAGS.tolerance} or at 4 decimals.")


if __name__ == "__main__":
    app.run(main)
