"""Training sentence embeddings on text pairs, as a `FineTuningJob`."""

import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert.data.no_duplicates_batches import no_duplicates_epochs
from keras_bert.data.packed_batches import predict_packed
from keras_bert.data.trim_batch import trim_batch
from keras_bert.fine_tuning.embeddings.metrics import retrieval_metrics
from keras_bert.fine_tuning.embeddings.metrics import sts_spearman
from keras_bert.fine_tuning.embeddings.pairs import PAIR_COLUMNS
from keras_bert.fine_tuning.embeddings.pairs import read_pairs
from keras_bert.fine_tuning.embeddings.pairs import read_sts
from keras_bert.fine_tuning.job import FineTuningJob
from keras_bert.models.pair_embedding_model import PAIR_INPUTS


def encode_texts(embedder, preprocessor, texts, batch_size=64):
    """Embeddings of `texts`, batched by length (little padding).

    Args:
        embedder: a model from the backbone's inputs to `(batch, hidden)`.
        preprocessor: the `keras_bert.BertPreprocessor` of the texts.
        texts: list of str.
        batch_size: int. Texts per forward pass.

    Returns:
        float32 numpy array `(len(texts), hidden_dim)`, in `texts`' order.

    Example:
    ```python
    encode_texts(embedder, preprocessor, ["a text", "another"])  # (2, H)
    ```
    """
    features = {
        name: np.asarray(value) for name, value in preprocessor(texts).items()
    }
    embeddings = predict_packed(embedder, features, batch_size)
    return np.asarray(embeddings, np.float32)


class EmbeddingFineTuning(FineTuningJob):
    """Contrastive training of an embedder, for `run_fine_tuning`.

    Trains a `PairEmbeddingModel` on `(anchor, positive)` pairs with
    in-batch negatives (`keras_bert.training.MultipleNegativesRankingLoss`)
    in batches that never hold a text twice
    (`keras_bert.data.no_duplicates_epochs`), and evaluates the embedder
    after every epoch:

    - retrieval (`retrieval_file`, pairs like the training file's): the
      corpus is the file's distinct positives, each anchor a query whose
      one relevant entry is its positive; Recall@1 and MRR@10.
    - STS (`sts_file`, an STS-B style TSV): Spearman correlation of the
      pairs' cosine similarity with the gold scores.

    The best epoch is picked by retrieval MRR@10 when there is a
    retrieval file, else by STS Spearman. The export serves the embedder
    (text in, L2-normalised embedding out).

    Args:
        train_file: str. Training pairs: JSONL with `anchor` and
            `positive` fields, or a TSV with those columns.
        model_fn: callable. Returns `(model, preprocessor)`: a
            `PairEmbeddingModel` and the `keras_bert.BertPreprocessor`
            whose `sequence_length` is the longest input.
        retrieval_file: str or `None`. Retrieval eval pairs.
        sts_file: str or `None`. STS-B style eval TSV.
        eval_batch_size: int. Texts per forward pass when evaluating.
        columns: tuple of two str. The anchor and positive columns of the
            training and retrieval files. Defaults to `("anchor",
            "positive")`.

    Example:
    ```python
    task = EmbeddingFineTuning(
        "pairs.jsonl", model_fn, retrieval_file="dev_pairs.jsonl"
    )
    keras_bert.fine_tuning.run_fine_tuning(task, "runs/embeddings", epochs=1)
    ```
    """

    name = "embeddings"

    def __init__(
        self,
        train_file,
        model_fn,
        retrieval_file=None,
        sts_file=None,
        eval_batch_size=64,
        columns=PAIR_COLUMNS,
    ):
        if not retrieval_file and not sts_file:
            raise ValueError(
                "EmbeddingFineTuning needs an eval set to pick the best "
                "epoch: pass `retrieval_file` (query/passage pairs) or "
                "`sts_file` (an STS-B style TSV), or both. Received neither."
            )
        self.train_file = train_file
        self.model_fn = model_fn
        self.retrieval_file = retrieval_file
        self.sts_file = sts_file
        self.columns = tuple(columns)
        self.train = None
        self.eval_batch_size = eval_batch_size
        self.preprocessor = None
        self.monitor = "retrieval/mrr@10" if retrieval_file else "sts/spearman"

    def load_data(self):
        if self.train is not None:
            return  # read already (a recipe reads first, then the runner)
        self.train = read_pairs(self.train_file, self.columns)
        self.retrieval = None
        if self.retrieval_file:
            pairs = read_pairs(self.retrieval_file, self.columns)
            corpus = list(dict.fromkeys(positive for _, positive in pairs))
            row = {text: index for index, text in enumerate(corpus)}
            self.retrieval = {
                "queries": [anchor for anchor, _ in pairs],
                "corpus": corpus,
                "relevant": np.array([row[p] for _, p in pairs]),
            }
        self.sts = read_sts(self.sts_file) if self.sts_file else None
        logging.info(
            "Embeddings: %d training pairs; retrieval %s; STS %s",
            len(self.train),
            self.retrieval
            and f"{len(self.retrieval['queries'])} queries over "
            f"{len(self.retrieval['corpus'])} passages",
            self.sts and f"{len(self.sts[2])} pairs",
        )

    def build_model(self):
        model, self.preprocessor = self.model_fn()
        return model, self.preprocessor

    @property
    def num_train_examples(self):
        return len(self.train)

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        columns = list(zip(*self.train))
        features = {
            key: {
                name: np.asarray(value)
                for name, value in self.preprocessor(list(texts)).items()
            }
            for key, texts in zip(PAIR_INPUTS, columns)
        }
        batches = no_duplicates_epochs(
            features, self.train, batch_size, seed, first_epoch, num_epochs
        )
        # Each side cut to its own longest row; the loss needs no labels.
        return batches.map(
            lambda pair: (
                {key: trim_batch(pair[key], multiple=1) for key in pair},
                tf.zeros_like(pair["anchor"]["padding_mask"][:, 0]),
            )
        )

    def evaluate(self, model):
        embedder = model.embedder
        results = {}
        if self.retrieval:
            queries = self._encode(embedder, self.retrieval["queries"])
            corpus = self._encode(embedder, self.retrieval["corpus"])
            results["retrieval"] = retrieval_metrics(
                queries, corpus, self.retrieval["relevant"]
            )
        if self.sts:
            sentences_a, sentences_b, scores = self.sts
            results["sts"] = {
                "spearman": sts_spearman(
                    self._encode(embedder, sentences_a),
                    self._encode(embedder, sentences_b),
                    scores,
                )
            }
        return results

    def serving_model(self, model):
        return model.embedder

    def results_extras(self):
        extras = {"num_train_pairs": len(self.train)}
        if self.retrieval:
            extras["retrieval_queries"] = len(self.retrieval["queries"])
            extras["retrieval_corpus"] = len(self.retrieval["corpus"])
        if self.sts:
            extras["sts_pairs"] = len(self.sts[2])
        return extras

    def _encode(self, embedder, texts):
        return encode_texts(
            embedder, self.preprocessor, texts, self.eval_batch_size
        )
