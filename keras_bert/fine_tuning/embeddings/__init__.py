"""Training sentence embeddings: pairs, in-batch negatives, retrieval.

`EmbeddingFineTuning` trains a `keras_bert.models.PairEmbeddingModel` (an
embedder such as
`keras_bert.BertTextEmbedder` on both sides of each pair) with
`keras_bert.training.MultipleNegativesRankingLoss` on batches without
duplicate texts, and scores it by retrieval and STS; `recipes/
embeddings.py` runs it. `squad_question_paragraph_pairs` makes real pairs.
"""

from keras_bert.fine_tuning.embeddings.job import EmbeddingFineTuning
from keras_bert.fine_tuning.embeddings.job import encode_texts
from keras_bert.fine_tuning.embeddings.metrics import retrieval_metrics
from keras_bert.fine_tuning.embeddings.metrics import sts_spearman
from keras_bert.fine_tuning.embeddings.pairs import read_pairs
from keras_bert.fine_tuning.embeddings.pairs import read_sts
from keras_bert.fine_tuning.embeddings.squad_pairs import (
    squad_question_paragraph_pairs,
)
from keras_bert.fine_tuning.embeddings.squad_pairs import write_pairs_jsonl

__all__ = [
    "EmbeddingFineTuning",
    "encode_texts",
    "read_pairs",
    "read_sts",
    "retrieval_metrics",
    "squad_question_paragraph_pairs",
    "sts_spearman",
    "write_pairs_jsonl",
]
