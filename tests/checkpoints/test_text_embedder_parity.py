"""Real weights, real reference: BertTextEmbedder against sentence-transformers.

all-MiniLM-L6-v2 both ways, on the checkpoint tests' 20 single sentences
(accents, CJK, emoji, numbers, one word, long), an empty string and a text
over the model's 256-token limit: the stock model (settings from its
files) and every pooling with and without normalisation, max-abs over
every element; a model that sentence-transformers itself saves with cls
pooling and no Normalize module loads as such. The 1,000-sentence and
STS-B figures: `benchmarks/sentence_embeddings.py`.
"""

import numpy as np
import pytest

from keras_bert import BertTextEmbedder
from keras_bert.checkpoints.sentence_transformers_files import (
    read_sentence_transformers_config,
)
from tests.checkpoints.conftest import SINGLES

pytestmark = pytest.mark.slow
sentence_transformers = pytest.importorskip(
    "sentence_transformers", reason="the reference is sentence-transformers"
)

TOLERANCE = 1e-5
TEXTS = SINGLES + ["", "The film was long and the night was cold. " * 40]


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
    assert np.abs(ours - expected).max() <= TOLERANCE
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
        assert difference <= TOLERANCE, (pooling, normalize, difference)


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
