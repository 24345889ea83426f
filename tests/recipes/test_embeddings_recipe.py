"""`recipes/embeddings.py` end to end on a tiny checkpoint, and its error
for a pairs file without the columns it needs.

The recipe runs in a subprocess (its absl flags would clash with the other
recipes' in this process).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_bert

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
WORDS = ["the", "a", "cat", "dog", "sat", "ran", "on", "mat", "park", "big"]

# Each case starts a TensorFlow process (~15 s).
pytestmark = pytest.mark.slow


def _write_inputs(tmp_path):
    checkpoint = tmp_path / "tiny"
    backbone = keras_bert.BertBackbone.from_preset(
        "bert_tiny", vocabulary_size=15
    )
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS)
    )
    keras_bert.checkpoints.save_huggingface(
        backbone, keras_bert.BertTokenizer(str(vocabulary)), str(checkpoint)
    )
    pairs = [(f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]}", f"{WORDS[i % 4]} mat")
             for i in range(12)]  # fmt: skip
    keras_bert.fine_tuning.embeddings.write_pairs_jsonl(
        pairs, str(tmp_path / "train.jsonl")
    )
    return checkpoint


def _run(tmp_path, *flags):
    return subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "recipes", "embeddings.py"),
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )


def test_trains_scores_and_writes_results(tmp_path):
    checkpoint = _write_inputs(tmp_path)
    result = _run(
        tmp_path,
        f"--train_file={tmp_path / 'train.jsonl'}",
        f"--retrieval_file={tmp_path / 'train.jsonl'}",
        f"--init_checkpoint={checkpoint}",
        f"--model_dir={tmp_path / 'run'}",
        "--max_seq_length=8",
        "--batch_size=4",
        "--epochs=1",
        "--scale=10",
        f"--export_dir={tmp_path / 'export'}",
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "retrieval: recall@1" in result.stdout
    with open(tmp_path / "run" / "results.json") as f:
        results = json.load(f)
    assert results["task"] == "embeddings"
    assert results["config"]["scale"] == 10
    assert results["config"]["max_seq_length"] == 8
    assert set(results["metrics"]["retrieval"]) == {"recall@1", "mrr@10"}
    # The export serves the embedder: text in, L2-normalised embedding out.
    serving = tf.saved_model.load(results["export_dir"]).signatures[
        "serving_default"
    ]
    embedding = serving(text=tf.constant(["cat on the mat", "a dog"]))[
        "embedding"
    ].numpy()
    assert embedding.dtype == np.float32
    assert embedding.shape == (2, 128)  # bert_tiny's hidden size
    np.testing.assert_allclose(np.linalg.norm(embedding, axis=1), 1, rtol=1e-5)


def test_a_missing_column_names_file_columns_and_fix(tmp_path):
    checkpoint = _write_inputs(tmp_path)
    bad = tmp_path / "pairs.tsv"
    bad.write_text("question\tanswer\ncat\tdog\n")
    result = _run(
        tmp_path,
        f"--train_file={bad}",
        f"--retrieval_file={bad}",
        f"--init_checkpoint={checkpoint}",
        f"--model_dir={tmp_path / 'run'}",
    )
    assert result.returncode == 1
    # One line, before any model: no traceback.
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {bad}, line 1: no columns `anchor`, "
                           "`positive`; columns found: ['question', "
                           "'answer']. Set --text_column"), last  # fmt: skip
    assert "Traceback" not in result.stderr
