"""`recipes/glue.py` end to end on fixture data with a tiny checkpoint."""

import csv
import importlib.util
import json
import os
import shutil
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import app
from absl import flags

import keras_bert
from keras_bert.checkpoints import save_huggingface
from keras_bert.fine_tuning.glue import tfds as glue_tfds
from keras_bert.fine_tuning.glue.dataset import preprocess_glue
from keras_bert.fine_tuning.glue.metrics import compute_glue_metrics
from keras_bert.fine_tuning.glue.tfds import GlueDataNotFoundError
from keras_bert.fine_tuning.glue.tsv import read_glue_tsv
from tests.fine_tuning.glue.fixtures import glue_fixture_dir
from tests.helpers import on_cpu

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
# tests/fine_tuning/glue/fixtures.py, written once
FIXTURES = glue_fixture_dir()


def _import_recipe():
    spec = importlib.util.spec_from_file_location(
        "glue_recipe", os.path.join(ROOT, "recipes", "glue.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recipe = _import_recipe()


def run_recipe(**flag_values):
    """Runs the recipe's `main` in this process with these flags."""
    argv = ["glue.py"] + [f"--{k}={v}" for k, v in flag_values.items()]
    recipe.FLAGS.unparse_flags()
    recipe.FLAGS(argv)
    recipe.main([])
    with open(os.path.join(flag_values["model_dir"], "results.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny Hugging Face checkpoint whose vocabulary covers the fixtures."""
    words = set()
    for directory, _, files in os.walk(FIXTURES):
        for name in files:
            if name.endswith(".tsv"):
                with open(os.path.join(directory, name)) as f:
                    words.update(f.read().lower().replace("\t", " ").split())
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + sorted(
        w for w in words if w.isalpha()
    )
    tokenizer = keras_bert.BertTokenizer(vocabulary)
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=32,
    )
    path = str(tmp_path_factory.mktemp("checkpoint"))
    save_huggingface(backbone, tokenizer, path)
    return path


def tiny_flags(checkpoint, model_dir, **overrides):
    return {
        "model_dir": str(model_dir),
        "init_checkpoint": checkpoint,
        "sequence_length": 24,
        "batch_size": 2,
        "eval_batch_size": 4,
        "learning_rate": 1e-3,
        "epochs": 2,
        **overrides,
    }


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


@pytest.mark.slow
def test_mnli_end_to_end(checkpoint, tmp_path):
    results = run_recipe(
        task="mnli",
        data_dir=FIXTURES,
        **tiny_flags(checkpoint, tmp_path / "run"),
    )
    assert results["task"] == "mnli"
    assert set(results["metrics"]) == {
        "validation_matched",
        "validation_mismatched",
    }
    assert [e["epoch"] for e in results["epochs"]] == [1, 2]
    best = results["epochs"][results["best_epoch"] - 1]
    assert results["metrics"] == best["metrics"]
    assert results["config"]["sequence_length"] == 24
    assert results["wall_time_seconds"] > 0

    # Submission files, in GLUE's format, for MNLI-m, MNLI-mm and AX.
    submissions = tmp_path / "run" / "submissions"
    assert sorted(os.listdir(submissions)) == [
        "AX.tsv",
        "MNLI-m.tsv",
        "MNLI-mm.tsv",
    ]
    for name, count in [("MNLI-m.tsv", 1), ("AX.tsv", 2)]:
        rows = read_tsv(submissions / name)
        assert rows[0] == ["index", "prediction"]
        assert [r[0] for r in rows[1:]] == [str(i) for i in range(count)]
        assert {r[1] for r in rows[1:]} <= {
            "entailment",
            "neutral",
            "contradiction",
        }

    # The saved best weights give exactly the reported whole-set metrics.
    model = keras_bert.BertClassifier.from_checkpoint(checkpoint, num_classes=3)
    model.load_weights(str(tmp_path / "run" / "best.weights.h5"))
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(checkpoint),
        sequence_length=24,
    )
    for split, metrics in results["metrics"].items():
        examples = read_glue_tsv("mnli", split, FIXTURES)
        outputs = model.predict(
            preprocess_glue("mnli", examples, preprocessor), verbose=0
        )
        expected = compute_glue_metrics("mnli", examples["label"], outputs)
        assert metrics == pytest.approx(expected)


@pytest.mark.slow
def test_resumes_after_a_crash_from_the_last_epoch(checkpoint, tmp_path):
    flag_values = dict(
        task="stsb",
        data_dir=FIXTURES,
        **tiny_flags(checkpoint, tmp_path / "run", epochs=2),
    )
    original = keras.callbacks.BackupAndRestore.on_epoch_end

    def crash_after_epoch_one(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 0:
            raise RuntimeError("simulated crash")

    with mock.patch.object(
        keras.callbacks.BackupAndRestore, "on_epoch_end", crash_after_epoch_one
    ):
        with pytest.raises(RuntimeError, match="simulated crash"):
            run_recipe(**flag_values)
    assert not os.path.exists(tmp_path / "run" / "results.json")
    with open(tmp_path / "run" / "eval_history.json") as f:
        before_crash = json.load(f)["epochs"]

    results = run_recipe(**flag_values)
    assert results["resumed_from_epoch"] == 1
    assert [e["epoch"] for e in results["epochs"]] == [1, 2]
    assert results["epochs"][:1] == before_crash
    assert set(results["metrics"]["validation"]) == {"pearson", "spearman"}
    assert os.path.exists(tmp_path / "run" / "submissions" / "STS-B.tsv")


@pytest.mark.slow
def test_holdout_when_there_is_no_dev_file(checkpoint, tmp_path):
    data_dir = tmp_path / "glue"
    os.makedirs(data_dir / "MRPC")
    shutil.copy(os.path.join(FIXTURES, "MRPC", "train.tsv"), data_dir / "MRPC")
    results = run_recipe(
        task="mrpc",
        data_dir=data_dir,
        holdout_fraction=0.5,
        **tiny_flags(checkpoint, tmp_path / "run", epochs=1),
    )
    assert list(results["metrics"]) == ["holdout"]
    assert list(results["metrics"]["holdout"]) == ["f1", "accuracy"]
    assert results["num_train_examples"] == 2
    assert results["num_eval_examples"] == {"holdout": 2}
    assert "mrpc/test" in results["submissions_skipped"]


def test_preset_gets_an_embedding_table_the_size_of_the_vocabulary(
    checkpoint, tmp_path
):
    vocabulary = os.path.join(checkpoint, "vocab.txt")
    with open(vocabulary) as f:
        size = len(f.read().splitlines())
    built = []
    original = recipe._build_model

    def build(task):
        model, preprocessor = original(task)
        built.append(model.backbone.vocabulary_size)
        return model, preprocessor

    flag_values = tiny_flags(checkpoint, tmp_path / "run", epochs=1)
    del flag_values["init_checkpoint"]
    with mock.patch.object(recipe, "_build_model", build):
        results = run_recipe(
            task="sst2",
            data_dir=FIXTURES,
            preset="bert_tiny",
            vocabulary=vocabulary,
            **flag_values,
        )
    assert built == [size]
    assert results["config"]["preset"] == "bert_tiny"


def test_missing_split_file_fails_before_training(checkpoint, tmp_path):
    data_dir = tmp_path / "glue"
    os.makedirs(data_dir / "RTE")
    shutil.copy(os.path.join(FIXTURES, "RTE", "train.tsv"), data_dir / "RTE")
    with pytest.raises(FileNotFoundError, match=r"RTE[/\\]dev\.tsv"):
        run_recipe(
            task="rte",
            data_dir=data_dir,
            **tiny_flags(checkpoint, tmp_path / "run"),
        )


def test_offline_without_data_dir_says_what_to_provide(checkpoint, tmp_path):
    with mock.patch.object(
        glue_tfds, "glue_download_unavailable", return_value="no network"
    ):
        with pytest.raises(GlueDataNotFoundError) as error:
            run_recipe(
                task="mnli",
                tfds_data_dir=tmp_path / "tfds",
                **tiny_flags(checkpoint, tmp_path / "run"),
            )
    message = str(error.value)
    assert "glue/mnli" in message and "no network" in message
    for filename in ["train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"]:
        assert os.path.join("GLUE_DIR", "MNLI", filename) in message
    assert "--data_dir" in message and "tfds build glue/mnli" in message


def test_bad_flags_are_usage_errors(checkpoint, tmp_path):
    with pytest.raises(app.UsageError, match="exactly one of"):
        run_recipe(
            task="rte",
            preset="bert_tiny",
            **tiny_flags(checkpoint, tmp_path / "run"),
        )
    with pytest.raises(app.UsageError, match="--task=mnli"):
        run_recipe(task="rte", demo=True, **tiny_flags(checkpoint, tmp_path))
    with pytest.raises(
        app.UsageError,
        match="`--gradient_accumulation_steps`, expected a positive integer",
    ):
        run_recipe(
            task="rte",
            **tiny_flags(
                checkpoint, tmp_path / "run", gradient_accumulation_steps=0
            ),
        )


def test_a_bfloat16_export_is_refused_before_training_without_the_cpu(
    checkpoint, tmp_path
):
    """--export_precision=bfloat16 on a CPU without AVX512-BF16 or AMX: a
    usage error before any data is read, naming the flags and the fix."""
    with (
        on_cpu({"avx2"}),
        pytest.raises(
            app.UsageError,
            match="--export_precision=bfloat16: .*avx512_bf16 or amx_bf16"
            ".*--noexport_check_cpu",
        ),
    ):
        run_recipe(
            task="rte",
            export_dir=tmp_path / "export",
            export_precision="bfloat16",
            **tiny_flags(checkpoint, tmp_path / "run"),
        )
    assert not (tmp_path / "run").exists()
    # On a CPU with them, for a server without them (--export_server_cpu).
    with (
        on_cpu({"avx2", "avx512f", "avx512_vnni", "avx512_bf16"}),
        pytest.raises(
            app.UsageError,
            match="--export_precision=bfloat16: .*the server's CPU is avx2 "
            "server .*--export_server_cpu",
        ),
    ):
        run_recipe(
            task="rte",
            export_dir=tmp_path / "export",
            export_precision="bfloat16",
            export_server_cpu="avx2",
            **tiny_flags(checkpoint, tmp_path / "run"),
        )
    with pytest.raises(app.UsageError, match="--export_server_cpu: .*'avx3'"):
        run_recipe(
            task="rte",
            export_dir=tmp_path / "export",
            export_server_cpu="avx3",
            **tiny_flags(checkpoint, tmp_path / "run"),
        )
    assert not (tmp_path / "run").exists()


def test_unknown_task_lists_the_valid_ones(checkpoint, tmp_path):
    recipe.FLAGS.unparse_flags()
    with pytest.raises(flags.IllegalFlagValueError, match="cola|sst2|mrpc"):
        recipe.FLAGS(["glue.py", "--task=mnli_m", f"--model_dir={tmp_path}"])


@pytest.mark.slow
def test_demo_sample_trains_and_exports_a_servable_model(checkpoint, tmp_path):
    results = run_recipe(
        task="mnli",
        demo=True,
        export_dir=tmp_path / "export",
        **tiny_flags(checkpoint, tmp_path / "run", epochs=1, batch_size=64),
    )
    assert results["num_train_examples"] == 960
    assert results["num_eval_examples"] == {
        "validation_matched": 120,
        "validation_mismatched": 120,
    }
    assert results["export_dir"] == str(tmp_path / "export" / "1")

    # The SavedModel takes raw sentence pairs and answers what the Keras
    # model with the best weights answers.
    premises = ["The baker sold the old piano on Sunday.", "The mayor ran."]
    hypotheses = ["Nobody sold the old piano.", "Someone ran."]
    served = tf.saved_model.load(results["export_dir"]).signatures[
        "serving_default"
    ](text_a=tf.constant(premises), text_b=tf.constant(hypotheses))
    model = keras_bert.BertClassifier.from_checkpoint(checkpoint, num_classes=3)
    model.load_weights(str(tmp_path / "run" / "best.weights.h5"))
    preprocessor = keras_bert.BertPreprocessor(
        keras_bert.BertTokenizer.from_checkpoint(checkpoint),
        sequence_length=24,
    )
    logits = model.predict(
        preprocessor((tf.constant(premises), tf.constant(hypotheses))),
        verbose=0,
    )
    labels = ["entailment", "neutral", "contradiction"]
    expected = [labels[i] for i in np.argmax(logits, axis=-1)]
    assert [b.decode() for b in served["label"].numpy()] == expected
