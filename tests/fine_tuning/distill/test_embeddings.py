"""`EmbeddingDistillationJob` on the shared runner: a tiny 3-block
`BertTextEmbedder` teacher distilled into 2 of its blocks on unlabelled
sentences, scored by STS Spearman; `teacher_task` and
`load_embedder_teacher` on each kind of teacher; the refusals."""

import json
import os

import h5py
import keras
import numpy as np
import pytest

import keras_bert
from keras_bert.distillation import student_of
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.distill import EmbeddingDistillationJob
from keras_bert.fine_tuning.distill import load_embedder_teacher
from keras_bert.fine_tuning.distill import teacher_labels
from keras_bert.fine_tuning.distill import teacher_task
from keras_bert.fine_tuning.embeddings import EmbeddingFineTuning
from keras_bert.fine_tuning.embeddings import sts_spearman
from keras_bert.fine_tuning.embeddings import write_pairs_jsonl
from keras_bert.models import PairEmbeddingModel
from tests.fine_tuning.classify.test_job import DEV
from tests.fine_tuning.classify.test_job import TRAIN
from tests.fine_tuning.classify.test_job import VOCABULARY
from tests.fine_tuning.distill.test_job import write_teacher
from tests.models.test_bert_text_embedder import pooling_config
from tests.models.test_bert_text_embedder import save_checkpoint
from tests.models.test_bert_text_embedder import st_modules

SENTENCES = [text for text, _ in TRAIN + DEV]


def write_embedder_teacher(directory):
    """A 3-block, cls-pooled, normalised embedder saved as `.keras`.

    Its block 1 (which the students leave out) has its kernels scaled up,
    so that a student of blocks 0 and 2 starts away from the teacher.
    """
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=3,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=16,
        dropout=0.0,
    )
    teacher = keras_bert.BertTextEmbedder(
        backbone,
        pooling="cls",
        preprocessor=keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY), sequence_length=16
        ),
    )
    block = backbone.transformer_layers[1]
    block.set_weights(
        [w * (10 if w.ndim == 2 else 1) for w in block.get_weights()]
    )
    path = os.path.join(str(directory), "embedder.keras")
    teacher.save(path)
    return path


def write_sentence_files(directory, teacher=None):
    """Pairs to distil on (`text_a`, `text_b`) and an STS-B style TSV,
    scored by `teacher`'s cosine similarity (the best student is the
    one nearest the teacher), or arbitrarily without one."""
    directory = str(directory)
    train = os.path.join(directory, "pairs.jsonl")
    with open(train, "w") as file:
        for a, b in zip(SENTENCES, SENTENCES[1:] + SENTENCES[:1]):
            file.write(json.dumps({"text_a": a, "text_b": b}) + "\n")
    sts = os.path.join(directory, "sts.tsv")
    rows = list(zip(SENTENCES, SENTENCES[2:] + SENTENCES[:2]))
    scores = [(i * 7) % 5 for i in range(len(rows))]
    if teacher is not None:
        embedder = keras.models.load_model(teacher)
        a, b = (embedder.encode(list(side)) for side in zip(*rows))
        scores = np.sum(a * b, axis=-1)
    with open(sts, "w") as file:
        file.write("index\tsentence1\tsentence2\tscore\n")
        for i, ((a, b), score) in enumerate(zip(rows, scores)):
            file.write(f"{i}\t{a}\t{b}\t{score}\n")
    return train, sts


def distil(directory, **arguments):
    directory = str(directory)
    teacher = write_embedder_teacher(directory)
    train, sts = write_sentence_files(directory, teacher)
    job = EmbeddingDistillationJob(
        teacher,
        train,
        sts,
        {"layers": (0, 2)},
        eval_batch_size=3,
    )
    result = run_fine_tuning(
        job,
        os.path.join(directory, "run"),
        epochs=3,
        batch_size=4,
        learning_rate=1e-3,
        **arguments,
    )
    return job, result


def _mean_cosine(a, b):
    return float(np.mean(np.sum(a * b, -1)))  # both L2-normalised


def test_the_runner_distils_an_embedder_and_keeps_the_student(tmp_path):
    job, result = distil(tmp_path)
    student = result.model.student
    results = result.results
    assert type(student) is keras_bert.BertTextEmbedder
    assert student.backbone.num_layers == 2
    assert results["task"] == "distill_embeddings"
    assert results["monitor"] == "sts/spearman"
    assert results["student_layers"] == [0, 2]
    # Both sentences of each pair, each distinct sentence once.
    assert results["num_train_sentences"] == len(set(SENTENCES))
    assert len(results["epochs"]) == 3
    # The recorded scores are the models' own embeddings, scored.
    sentences_a, sentences_b, gold = job.sts
    for model, metrics in (
        (student, results["metrics"]),
        (job.teacher, results["teacher_metrics"]),
    ):
        expected = sts_spearman(
            model.encode(sentences_a), model.encode(sentences_b), gold
        )
        assert metrics["sts"]["spearman"] == pytest.approx(expected, abs=1e-6)
    # Trained on the teacher's vectors: the loss falls and the student
    # ends nearer the teacher than the copy of its blocks it started as.
    losses = [e["train_logs"]["distillation_loss"] for e in results["epochs"]]
    assert losses[-1] < losses[0]
    teacher = keras.models.load_model(job.teacher_path)
    target = teacher.encode(SENTENCES)
    start = student_of(teacher, layers=(0, 2)).encode(SENTENCES)
    assert _mean_cosine(student.encode(SENTENCES), target) > _mean_cosine(
        start, target
    )
    # best.weights.h5 holds the student's weights, and nothing else.
    run = tmp_path / "run"
    with h5py.File(run / "best.weights.h5") as weights:
        stored = []
        weights.visititems(
            lambda name, item: (
                stored.append(name) if isinstance(item, h5py.Dataset) else None
            )
        )
    assert len(stored) == len(student.weights)
    saved = keras.models.load_model(run / "student.keras")
    assert type(saved) is keras_bert.BertTextEmbedder
    assert (saved.backbone.num_layers, saved.pooling) == (2, "cls")
    np.testing.assert_allclose(
        saved.encode(SENTENCES), student.encode(SENTENCES), atol=1e-6
    )


def test_teacher_task_tells_embedders_from_classifiers(tmp_path):
    assert teacher_task(write_embedder_teacher(tmp_path)) == "embedder"
    assert teacher_task(write_teacher(tmp_path)) == "classifier"
    sentence_transformers = tmp_path / "st"
    save_checkpoint(sentence_transformers, st_modules(), pooling_config("max"))
    assert teacher_task(str(sentence_transformers)) == "embedder"
    teacher = load_embedder_teacher(str(sentence_transformers), 12)
    assert (teacher.pooling, teacher.normalize) == ("max", True)
    assert teacher.preprocessor.sequence_length == 12
    # A plain Hugging Face BERT directory stays a classifier, as before.
    save_checkpoint(tmp_path / "plain")
    assert teacher_task(str(tmp_path / "plain")) == "classifier"
    with pytest.raises(ValueError, match="holds a BertClassifier"):
        load_embedder_teacher(write_teacher(tmp_path))


def _embeddings_run(tmp_path):
    """A finished run as recipes/embeddings.py writes it (its config)."""
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("\n".join(VOCABULARY) + "\n")
    config = {
        "init_checkpoint": None,
        "preset": "bert_tiny",
        "vocabulary": str(vocabulary),
        "lowercase": True,
        "max_seq_length": 16,
        "pooling": "cls",
        "scale": 20.0,
    }

    def model_fn():
        embedder, tokenizer = load_task_model(
            keras_bert.BertTextEmbedder,
            preset="bert_tiny",
            vocabulary=str(vocabulary),
            pooling="cls",
            normalize=True,
        )
        preprocessor = keras_bert.BertPreprocessor(tokenizer, 16)
        return PairEmbeddingModel(embedder, scale=20.0), preprocessor

    pairs = list(zip(SENTENCES, SENTENCES[1:]))
    write_pairs_jsonl(pairs, str(tmp_path / "anchors.jsonl"))
    _, sts = write_sentence_files(tmp_path)
    task = EmbeddingFineTuning(
        str(tmp_path / "anchors.jsonl"), model_fn, sts_file=sts
    )
    result = run_fine_tuning(
        task,
        str(tmp_path / "embeddings"),
        epochs=1,
        batch_size=4,
        learning_rate=1e-3,
        config=config,
    )
    return str(tmp_path / "embeddings"), result.model.embedder


def test_an_embeddings_run_is_an_embedder_teacher_with_its_weights(tmp_path):
    run, trained = _embeddings_run(tmp_path)
    assert teacher_task(run) == "embedder"
    teacher = load_embedder_teacher(run)
    assert teacher.pooling == "cls"
    assert teacher.preprocessor.sequence_length == 16
    trained.preprocessor = teacher.preprocessor
    np.testing.assert_allclose(
        teacher.encode(SENTENCES), trained.encode(SENTENCES), atol=1e-6
    )
    with pytest.raises(ValueError, match="not a recipes/classify.py one"):
        teacher_labels(run)


def test_refusals_name_the_fix(tmp_path):
    train, sts = write_sentence_files(tmp_path)
    with pytest.raises(ValueError, match="pass `sts_file`"):
        EmbeddingDistillationJob(
            write_embedder_teacher(tmp_path), train, None, {"layers": (0,)}
        )
    job = EmbeddingDistillationJob(
        write_teacher(tmp_path), train, sts, {"layers": (0,)}
    )
    with pytest.raises(ValueError, match="distil a classifier with"):
        job.load_data()
