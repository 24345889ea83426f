"""Real weights, real reference: BertTextEmbedder against sentence-transformers.

all-MiniLM-L6-v2 both ways, on the checkpoint tests' 20 single sentences
(accents, CJK, emoji, numbers, one word, long), an empty string and a text
over the model's 256-token limit: the stock model (settings from its
files) and every pooling with and without normalisation, max-abs over
every element; on both sides of the first `STS_PAIRS` STS-B dev pairs,
the stock model, the Spearman correlation of each pair's cosine with the
gold score (`keras_bert.similarity` against sentence-transformers'
`util.cos_sim`), and its SavedModel's `serving_default` against its
`predict`; a model that sentence-transformers itself saves with cls
pooling and no Normalize module loads as such. `python -m pytest -s -m
slow tests/checkpoints/test_text_embedder_parity.py` prints the figures.
"""

import csv

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertTextEmbedder
from keras_bert import similarity
from keras_bert.checkpoints.sentence_transformers_files import (
    read_sentence_transformers_config,
)
from keras_bert.serving import export_saved_model
from tests.checkpoints.conftest import SINGLES
from tests.fine_tuning.ner.data import shared_path

pytestmark = pytest.mark.slow
sentence_transformers = pytest.importorskip(
    "sentence_transformers", reason="the reference is sentence-transformers"
)

TOLERANCE = 1e-5
TEXTS = SINGLES + ["", "The film was long and the night was cold. " * 40]
STS_PAIRS = 100


@pytest.fixture(scope="module")
def minilm_embedder(minilm_dir):
    return BertTextEmbedder.from_checkpoint(minilm_dir)


def reference(minilm_dir, pooling):
    from sentence_transformers.models import Pooling
    from sentence_transformers.models import Transformer

    return sentence_transformers.SentenceTransformer(
        modules=[
            Transformer(minilm_dir, max_seq_length=256),
            Pooling(384, pooling_mode=pooling),
        ],
        device="cpu",
    )


def test_stock_model_equals_sentence_transformers(minilm_dir, minilm_embedder):
    assert minilm_embedder.pooling == "mean" and minilm_embedder.normalize
    assert minilm_embedder.preprocessor.sequence_length == 256
    theirs = sentence_transformers.SentenceTransformer(minilm_dir, device="cpu")
    ours = minilm_embedder.predict(TEXTS, verbose=0)
    expected = theirs.encode(TEXTS, normalize_embeddings=False)
    difference = np.abs(ours - expected).max(axis=1)
    print(
        f"\nstock model, {len(TEXTS)} texts: max-abs {difference.max():.1e}; "
        f"the empty string {difference[-2]:.1e}, the text over 256 tokens "
        f"{difference[-1]:.1e}"
    )
    assert difference.max() <= TOLERANCE
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-6)


@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_every_pooling_and_normalisation(minilm_dir, minilm_embedder, pooling):
    theirs = reference(minilm_dir, pooling)
    for normalize in (False, True):
        model = BertTextEmbedder(
            minilm_embedder.backbone,
            pooling,
            normalize,
            preprocessor=minilm_embedder.preprocessor,
        )
        ours = model.predict(TEXTS, verbose=0)
        expected = theirs.encode(TEXTS, normalize_embeddings=normalize)
        difference = np.abs(ours - expected).max()
        print(f"\n{pooling}, normalize={normalize}: max-abs {difference:.1e}")
        assert difference <= TOLERANCE, (pooling, normalize, difference)


def test_stsb_dev_pairs_spearman_and_the_export(
    minilm_dir, minilm_embedder, tmp_path
):
    from scipy.stats import spearmanr
    from sentence_transformers import util

    with open(shared_path("glue", "STS-B", "dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    rows = rows[1 : STS_PAIRS + 1]
    texts = [r[7] for r in rows] + [r[8] for r in rows]
    scores = [float(r[9]) for r in rows]
    theirs = sentence_transformers.SentenceTransformer(minilm_dir, device="cpu")
    ours = minilm_embedder.predict(texts, batch_size=32, verbose=0)
    expected = theirs.encode(texts, batch_size=32)
    pairs = slice(0, STS_PAIRS), slice(STS_PAIRS, None)
    spearman = [
        spearmanr(np.diag(np.asarray(cosine(*(e[p] for p in pairs)))), scores)[
            0
        ]
        for e, cosine in (
            (ours, similarity),
            (expected, lambda a, b: util.cos_sim(a, b).numpy()),
        )
    ]
    path = export_saved_model(minilm_embedder, export_dir=str(tmp_path))
    serve = tf.saved_model.load(path).signatures["serving_default"]
    served = np.concatenate(
        [
            serve(text=tf.constant(texts[i : i + 32]))["embedding"].numpy()
            for i in range(0, len(texts), 32)
        ]
    )
    differences = np.abs(ours - expected).max(), np.abs(served - ours).max()
    print(
        f"\nSTS-B dev, first {STS_PAIRS} pairs ({len(texts)} texts): "
        f"max-abs {differences[0]:.1e} against sentence-transformers; "
        f"Spearman of cosine {spearman[0]:.6f} (keras_bert), "
        f"{spearman[1]:.6f} (sentence-transformers); the SavedModel's "
        f"serving_default against predict: max-abs {differences[1]:.1e}"
    )
    assert max(differences) <= TOLERANCE
    assert round(spearman[0], 4) == round(spearman[1], 4)


def test_a_model_sentence_transformers_saves_loads_as_saved(
    minilm_dir, tmp_path
):
    reference(minilm_dir, "cls").save(str(tmp_path))
    # Version 6 writes `pooling_mode`, module types of a new path, and its
    # max_seq_length as tokenizer_config.json's model_max_length.
    assert read_sentence_transformers_config(str(tmp_path)) == {
        "pooling": "cls",
        "normalize": False,
        "max_seq_length": 256,
    }
    # It writes tokenizer.json but no vocab.txt, so BertTokenizer cannot
    # read its vocabulary: give it the original's.
    model = BertTextEmbedder.from_checkpoint(str(tmp_path), preprocessor=None)
    assert (model.pooling, model.normalize) == ("cls", False)
