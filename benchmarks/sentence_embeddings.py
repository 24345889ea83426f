r"""BertTextEmbedder against sentence-transformers on real MiniLM and data.

all-MiniLM-L6-v2 as `BertTextEmbedder.from_checkpoint` (pooling,
normalisation and length from its sentence-transformers files) against
`SentenceTransformer(dir).encode` on both sides of the STS-B dev pairs,
plus an empty string and a text over 256 tokens (both truncate it), and
the Spearman correlation of each pair's cosine with the gold scores; each
pooling with and without normalisation against `SentenceTransformer(
modules=[Transformer(dir, max_seq_length=256), Pooling(384, mode)])` on
`--num_sentences` sentences (SST-2 dev, then STS-B train); and the stock
embedder's SavedModel, in a process with only TensorFlow and
tensorflow-text, against `predict`. Prints maximum absolute differences
(over every element, never a mean), writes them to `--output`, and exits
non-zero if one is over `--tolerance` or the correlations differ at 4
decimals.

    python benchmarks/sentence_embeddings.py [--max_sts_pairs=0]
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


flags.DEFINE_float("tolerance", 1e-5, "The largest difference allowed.")
flags.DEFINE_integer("batch_size", 32, "Sentences per batch, both sides.")
flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
flags.DEFINE_integer("num_sentences", 1000, "Sentences of the poolings.")
flags.DEFINE_integer("max_sts_pairs", 0, "STS-B dev pairs; 0: all.")
flags.DEFINE_string("output", "sentence_embeddings.json", "The figures.")


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


def main(argv):
    del argv
    f = flags.FLAGS
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
    return 0 if max(diffs) <= f.tolerance and same else 1


if __name__ == "__main__":
    app.run(main)
