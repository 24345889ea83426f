"""`EmbeddingFineTuning` trained by `run_fine_tuning` on a tiny embedder:
results.json with retrieval and STS scores, batches without duplicates."""

import json

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.fine_tuning.embeddings import EmbeddingFineTuning
from keras_bert.fine_tuning.embeddings import encode_texts
from keras_bert.fine_tuning.embeddings import write_pairs_jsonl
from keras_bert.models import PairEmbeddingModel
from tests.helpers import tiny_backbone_config

WORDS = ["the", "a", "cat", "dog", "sat", "ran", "on", "mat", "park", "big"]


def _files(tmp_path):
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS)
    )
    rng = np.random.default_rng(0)
    # Three questions share each passage: batches must keep them apart.
    passages = [" ".join(rng.choice(WORDS, 6)) for _ in range(6)]
    pairs = [
        (" ".join(rng.choice(WORDS, 3)) + f" {i}", passages[i % 6])
        for i in range(18)
    ]
    write_pairs_jsonl(pairs, str(tmp_path / "train.jsonl"))
    write_pairs_jsonl(pairs[:6], str(tmp_path / "dev.jsonl"))
    sts = tmp_path / "sts.tsv"
    sts.write_text(
        "sentence1\tsentence2\tscore\n"
        + "".join(f"{a}\t{b}\t{i % 5}\n" for i, (a, b) in enumerate(pairs))
    )
    return vocabulary, pairs


def _task(tmp_path, vocabulary, **kwargs):
    def model_fn():
        keras.utils.set_random_seed(0)
        backbone = keras_bert.BertBackbone(
            **tiny_backbone_config(vocabulary_size=15)
        )
        tokenizer = keras_bert.BertTokenizer(str(vocabulary))
        return (
            PairEmbeddingModel(keras_bert.BertTextEmbedder(backbone)),
            keras_bert.BertPreprocessor(tokenizer, sequence_length=12),
        )

    return EmbeddingFineTuning(
        str(tmp_path / "train.jsonl"), model_fn, **kwargs
    )


@pytest.mark.slow
def test_trains_and_writes_retrieval_and_sts_results(tmp_path, monkeypatch):
    vocabulary, _ = _files(tmp_path)
    exported = []
    # The export serves the embedder, not the pair model that trained it.
    monkeypatch.setattr(
        keras_bert.fine_tuning.runner,
        "export_saved_model",
        lambda model, preprocessor, export_dir, **options: (
            exported.append((model, preprocessor)) or export_dir
        ),
    )
    task = _task(
        tmp_path,
        vocabulary,
        retrieval_file=str(tmp_path / "dev.jsonl"),
        sts_file=str(tmp_path / "sts.tsv"),
    )
    result = keras_bert.fine_tuning.run_fine_tuning(
        task,
        str(tmp_path / "run"),
        epochs=2,
        batch_size=4,
        learning_rate=1e-3,
        export_dir=str(tmp_path / "export"),
    )
    assert exported == [(result.model.embedder, result.preprocessor)]
    with open(tmp_path / "run" / "results.json") as f:
        results = json.load(f)
    assert results["monitor"] == "retrieval/mrr@10"
    assert set(results["metrics"]) == {"retrieval", "sts"}
    assert set(results["metrics"]["retrieval"]) == {"recall@1", "mrr@10"}
    assert results["retrieval_corpus"] == 6
    assert results["num_train_pairs"] == 18
    # The embedder's own scores equal what results.json holds.
    queries = encode_texts(
        result.model.embedder, result.preprocessor, task.retrieval["queries"]
    )
    corpus = encode_texts(
        result.model.embedder, result.preprocessor, task.retrieval["corpus"]
    )
    metrics = keras_bert.fine_tuning.embeddings.retrieval_metrics(
        queries, corpus, task.retrieval["relevant"]
    )
    assert metrics == pytest.approx(results["metrics"]["retrieval"])


@pytest.mark.slow
def test_train_batches_hold_no_passage_twice(tmp_path):
    vocabulary, pairs = _files(tmp_path)
    task = _task(tmp_path, vocabulary, sts_file=str(tmp_path / "sts.tsv"))
    task.load_data()
    task.build_model()
    batches = list(task.train_dataset(4, seed=0, first_epoch=0, num_epochs=1))
    assert len(batches) == 5  # ceil(18 / 4)
    for inputs, labels in batches:
        ids = inputs["positive"]["token_ids"].numpy()
        rows = {tuple(row) for row in ids}
        assert len(rows) == len(ids)
        assert labels.shape == (len(ids),)
        # Each side cut to its own longest row.
        assert inputs["anchor"]["token_ids"].shape[1] < 12


@pytest.mark.slow
def test_encode_texts_keeps_the_order_of_the_texts(tmp_path):
    vocabulary, pairs = _files(tmp_path)
    task = _task(tmp_path, vocabulary, sts_file=str(tmp_path / "sts.tsv"))
    model, preprocessor = task.build_model()
    texts = [pairs[0][1], pairs[0][0], "cat"]
    together = encode_texts(model.embedder, preprocessor, texts, batch_size=2)
    for text, row in zip(texts, together):
        np.testing.assert_allclose(
            encode_texts(model.embedder, preprocessor, [text])[0],
            row,
            atol=1e-6,
        )


def test_needs_an_eval_file(tmp_path):
    with pytest.raises(ValueError, match="retrieval_file.*sts_file"):
        EmbeddingFineTuning("train.jsonl", lambda: None)
