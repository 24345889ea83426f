"""run_fine_tuning on a tiny made-up task: evaluation, best epoch, resume."""

import json
import os
import random
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.data import shuffled_epochs
from keras_bert.fine_tuning import FineTuningJob
from keras_bert.fine_tuning import run_files
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning import runner
from tests.helpers import on_cpu
from tests.helpers import served_variables

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]
VOCABULARY += ["film", "plot", "very", "not"]
TEXTS = [
    "good film",
    "bad film",
    "very good plot",
    "very bad plot",
    "good",
    "bad",
    "not bad film",
    "not good film",
    "good plot",
    "bad plot",
]
LABELS = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0], "int32")
TRAINING = {"epochs": 3, "batch_size": 4, "learning_rate": 1e-2, "seed": 7}
ONE_STEP = {**TRAINING, "epochs": 1, "batch_size": 10}


class TinySentiment(FineTuningJob):
    """A two-class task on ten sentences; records what the runner asks."""

    name = "tiny_sentiment"
    monitor = "dev/accuracy"

    def __init__(self, scripted_scores=None, extras=None):
        self.scripted_scores = scripted_scores
        self.extras = extras or {"num_dev_examples": len(TEXTS)}
        self.calls = []
        self.evaluated_weights = []  # the weights each evaluation saw

    def load_data(self):
        self.calls.append("load_data")

    def build_model(self):
        self.calls.append("build_model")
        backbone = keras_bert.BertBackbone(
            vocabulary_size=len(VOCABULARY),
            num_layers=1,
            num_heads=2,
            hidden_dim=8,
            intermediate_dim=16,
            max_sequence_length=8,
            dropout=0.0,  # no random masks: a resumed run can be exact
        )
        model = keras_bert.BertClassifier(backbone, 2, dropout=0.0)
        self.preprocessor = keras_bert.BertPreprocessor(
            keras_bert.BertTokenizer(VOCABULARY), sequence_length=8
        )
        self.features = {
            name: values.numpy()
            for name, values in self.preprocessor(tf.constant(TEXTS)).items()
        }
        return model, self.preprocessor

    @property
    def num_train_examples(self):
        return len(TEXTS)

    def train_dataset(self, batch_size, seed, first_epoch, num_epochs):
        self.calls.append(("train_dataset", first_epoch, num_epochs))
        examples = tf.data.Dataset.from_tensor_slices((self.features, LABELS))
        return shuffled_epochs(
            examples, batch_size, seed, first_epoch, num_epochs
        )

    def evaluate(self, model):
        self.evaluated_weights.append(model.get_weights())
        logits = model.predict(self.features, verbose=0)
        accuracy = float(np.mean(np.argmax(logits, -1) == LABELS))
        if self.scripted_scores:
            accuracy = self.scripted_scores[len(self.evaluated_weights) - 1]
        return {"dev": {"accuracy": accuracy, "mean_logit": logits.mean()}}

    def write_outputs(self, model, directory):
        self.calls.append("write_outputs")
        self.output_weights = model.get_weights()
        path = os.path.join(directory, "predictions.txt")
        with tf.io.gfile.GFile(path, "w") as f:
            f.write("\n".join(TEXTS))
        return {"predictions_file": path}

    def export_options(self):
        return {"labels": ["negative", "positive"]}

    def results_extras(self):
        return self.extras


def assert_same_weights(first, second, atol=1e-6):
    assert len(first) == len(second)
    for mine, theirs in zip(first, second):
        np.testing.assert_allclose(mine, theirs, atol=atol, rtol=0)


def test_evaluates_each_epoch_keeps_the_best_and_writes_results(tmp_path):
    # Epoch 2 scores best: its weights, not the last epoch's, come back.
    task = TinySentiment(scripted_scores=[0.5, 0.9, 0.7])
    with mock.patch.object(runner, "export_saved_model") as export:
        export.return_value = tmp_path / "export" / "1"
        result = run_fine_tuning(
            task,
            str(tmp_path / "run"),
            export_dir=str(tmp_path / "export"),
            export_server_cpu="avx512_vnni",
            **TRAINING,
        )
    results = result.results
    assert [e["epoch"] for e in results["epochs"]] == [1, 2, 3]
    assert [e["metrics"]["dev"]["accuracy"] for e in results["epochs"]] == [
        0.5,
        0.9,
        0.7,
    ]
    assert results["best_epoch"] == 2
    assert results["metrics"] == results["epochs"][1]["metrics"]
    assert results["monitor"] == "dev/accuracy"
    assert_same_weights(task.output_weights, task.evaluated_weights[1])
    assert_same_weights(result.model.get_weights(), task.evaluated_weights[1])
    last = task.evaluated_weights[2]
    assert max(np.abs(a - b).max() for a, b in zip(last, task.output_weights))

    # The outputs are written after training, with the best weights, then
    # the model is exported with its preprocessor and the task's options.
    assert task.calls == [
        "load_data",
        "build_model",
        ("train_dataset", 0, 3),
        "write_outputs",
    ]
    export.assert_called_once()
    (model, preprocessor, export_dir), options = export.call_args
    assert model is result.model and preprocessor is task.preprocessor
    assert export_dir == str(tmp_path / "export")
    assert options == {
        "labels": ["negative", "positive"],
        "precision": "float32",
        "check_cpu": True,
        "server_cpu": "avx512_vnni",
    }
    assert result.is_chief

    # results.json: the shared fields, then the task's extras and outputs.
    with open(tmp_path / "run" / "results.json") as f:
        on_disk = json.load(f)
    assert on_disk == results
    assert set(on_disk) == set(runner.SHARED_RESULTS) | {
        "num_dev_examples",
        "predictions_file",
    }
    assert on_disk["task"] == "tiny_sentiment"
    assert on_disk["num_train_examples"] == 10
    assert on_disk["num_dev_examples"] == 10
    assert on_disk["resumed_from_epoch"] is None
    assert on_disk["export_dir"] == str(tmp_path / "export" / "1")
    assert on_disk["config"]["learning_rate"] == 1e-2
    assert on_disk["wall_time_seconds"] > 0
    assert set(on_disk["versions"]) == {"keras_bert", "keras", "tensorflow"}
    assert os.path.exists(on_disk["predictions_file"])
    with open(tmp_path / "run" / "eval_history.json") as f:
        assert json.load(f)["epochs"] == on_disk["epochs"]
    assert sorted(os.listdir(tmp_path / "run")) == [
        "best.weights.h5",
        "eval_history.json",
        "logs",
        "predictions.txt",
        "results.json",
    ]  # the backup is gone once training has finished


def test_a_run_whose_every_score_is_nan_finishes(tmp_path):
    # E.g. STS-B's Pearson of constant predictions: undefined each epoch.
    nan = float("nan")
    task = TinySentiment(scripted_scores=[nan, nan])
    result = run_fine_tuning(
        task, str(tmp_path / "run"), **{**TRAINING, "epochs": 2}
    )
    assert result.results["best_epoch"] == 1
    assert_same_weights(task.output_weights, task.evaluated_weights[0])
    with open(tmp_path / "run" / "results.json") as file:
        written = json.load(file)  # strict JSON: NaN is written as null
    assert written["metrics"]["dev"]["accuracy"] is None


@pytest.mark.slow
def test_resumes_after_a_crash_as_if_uninterrupted(tmp_path):
    training = {**TRAINING, "epochs": 2}
    uninterrupted = TinySentiment()
    reference = run_fine_tuning(
        uninterrupted, str(tmp_path / "reference"), **training
    )

    original = keras.callbacks.BackupAndRestore.on_epoch_end

    def crash_after_epoch_one(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 0:
            raise RuntimeError("simulated crash")

    run_dir = str(tmp_path / "run")
    with mock.patch.object(
        keras.callbacks.BackupAndRestore, "on_epoch_end", crash_after_epoch_one
    ):
        with pytest.raises(RuntimeError, match="simulated crash"):
            run_fine_tuning(TinySentiment(), run_dir, **training)
    assert not os.path.exists(os.path.join(run_dir, "results.json"))

    resumed_task = TinySentiment()
    resumed = run_fine_tuning(resumed_task, run_dir, **training)
    assert resumed.results["resumed_from_epoch"] == 1
    assert ("train_dataset", 1, 2) in resumed_task.calls
    # Epoch 2 trained on the same batches from the same state.
    for mine, theirs in zip(
        resumed_task.evaluated_weights, uninterrupted.evaluated_weights[1:]
    ):
        assert_same_weights(mine, theirs)
    assert_same_weights(
        resumed.model.get_weights(), reference.model.get_weights()
    )
    resumed_epochs = resumed.results["epochs"]
    assert [e["epoch"] for e in resumed_epochs] == [1, 2]
    for mine, theirs in zip(resumed_epochs, reference.results["epochs"]):
        assert mine["metrics"]["dev"] == pytest.approx(theirs["metrics"]["dev"])
        assert mine["loss"] == pytest.approx(theirs["loss"], abs=1e-6)


@pytest.mark.slow  # two runs of two epochs (~10 s of CPU)
def test_accumulated_micro_batches_train_as_their_whole_batches(tmp_path):
    """`batch_size=2, gradient_accumulation_steps=2` trains on the batches
    of `batch_size=4` (the same data order, updates and schedule) and
    ends with their weights; epochs and the schedule count updates."""
    whole_task = TinySentiment()
    run_fine_tuning(
        whole_task, str(tmp_path / "whole"), **{**TRAINING, "epochs": 2}
    )
    task = TinySentiment()
    accumulated = run_fine_tuning(
        task,
        str(tmp_path / "accumulated"),
        **{**TRAINING, "epochs": 2, "batch_size": 2},
        gradient_accumulation_steps=2,
    )
    assert len(task.evaluated_weights) == 2
    assert accumulated.results["config"]["gradient_accumulation_steps"] == 2
    # The model runs each batch of 4 as 2 micro-batches (what that means is
    # tests/training/test_gradient_accumulation.py's), not whole.
    assert accumulated.model.gradient_accumulation_steps == 2
    for mine, theirs in zip(
        task.evaluated_weights, whole_task.evaluated_weights
    ):
        assert_same_weights(mine, theirs, atol=1e-5)
    with pytest.raises(ValueError, match="gradient_accumulation_steps=0"):
        run_fine_tuning(
            TinySentiment(), str(tmp_path), gradient_accumulation_steps=0
        )


def test_the_learning_rate_defaults_to_the_models(tmp_path):
    task = TinySentiment()
    result = run_fine_tuning(
        task, str(tmp_path / "run"), **{**ONE_STEP, "learning_rate": None}
    )
    classifier = keras_bert.training.TRAINING_DEFAULTS["classifier"]
    assert result.results["config"]["learning_rate"] == classifier.learning_rate
    optimizer = result.model.optimizer
    schedule = optimizer.get_config()["learning_rate"]["config"]
    assert schedule["learning_rate"] == classifier.learning_rate
    assert optimizer.weight_decay == classifier.weight_decay
    assert optimizer.global_clipnorm == classifier.global_clipnorm


def test_every_file_goes_through_gfile():
    # `ram://` is TensorFlow's in-memory file system: only tf.io.gfile
    # (and Keras' file utilities, which use it) can write there.
    model_dir = "ram://fine_tuning_test/run"
    task = TinySentiment()
    result = run_fine_tuning(task, model_dir, **ONE_STEP)
    with tf.io.gfile.GFile(model_dir + "/results.json") as f:
        assert json.load(f) == result.results
    assert sorted(tf.io.gfile.listdir(model_dir)) == [
        "best.weights.h5",
        "eval_history.json",
        "logs",
        "predictions.txt",
        "results.json",
    ]


def test_a_task_without_name_or_monitor_is_refused_at_once(tmp_path):
    task = TinySentiment()
    task.monitor = None
    with pytest.raises(ValueError, match="must set `name` and `monitor`"):
        run_fine_tuning(task, str(tmp_path / "run"))
    assert task.calls == []
    with pytest.raises(ValueError, match="batch_size=0"):
        run_fine_tuning(TinySentiment(), str(tmp_path), batch_size=0)


def test_a_bfloat16_export_is_refused_before_training_without_the_cpu(
    tmp_path,
):
    task = TinySentiment()
    with (
        on_cpu({"avx2"}),
        pytest.raises(ValueError, match="avx512_bf16 or amx_bf16"),
    ):
        run_fine_tuning(
            task,
            str(tmp_path / "run"),
            export_dir=str(tmp_path / "export"),
            export_precision="bfloat16",
        )
    assert task.calls == []
    # Planned for a server without them: refused on a CPU that has them.
    with (
        on_cpu({"avx2", "avx512f", "avx512_vnni", "avx512_bf16"}),
        pytest.raises(ValueError, match="the server's CPU is avx2 server"),
    ):
        run_fine_tuning(
            task,
            str(tmp_path / "run"),
            export_dir=str(tmp_path / "export"),
            export_precision="bfloat16",
            export_server_cpu="avx2",
        )
    assert task.calls == []
    with pytest.raises(ValueError, match="precision='float16'"):
        run_fine_tuning(
            task,
            str(tmp_path / "run"),
            export_dir=str(tmp_path / "export"),
            export_precision="float16",
        )


def test_extras_may_not_replace_the_shared_fields(tmp_path):
    task = TinySentiment(extras={"metrics": "mine"})
    with pytest.raises(ValueError, match=r"\['metrics'\]"):
        run_fine_tuning(task, str(tmp_path / "run"), **ONE_STEP)


def test_a_resuming_worker_gets_the_chiefs_best_weights_so_far(tmp_path):
    """A non-chief worker resumes in a fresh temporary directory; when the
    best epoch was one before the interruption it must still find those
    weights to restore at the end (the chief's are in `model_dir`)."""
    model_dir, run_dir = tmp_path / "model", tmp_path / "worker"
    (model_dir / "backup" / "chief").mkdir(parents=True)
    (model_dir / "backup" / "chief" / "state").write_text("step")
    (model_dir / "eval_history.json").write_text("[]")
    (model_dir / "best.weights.h5").write_bytes(b"weights")
    run_dir.mkdir()
    run_files.copy_resume_state(str(model_dir), str(run_dir))
    assert (run_dir / "best.weights.h5").read_bytes() == b"weights"
    assert (run_dir / "eval_history.json").read_text() == "[]"
    assert (run_dir / "backup" / "chief" / "state").read_text() == "step"


@pytest.mark.slow
def test_lora_trains_lora_and_head_only_and_exports_them_merged(tmp_path):
    """`lora_rank`: enabled after the checkpoint, before compiling; the
    frozen weights stay, the export's answers are the merged model's."""
    from keras_bert.models import merge_lora

    task = TinySentiment()
    result = run_fine_tuning(
        task,
        str(tmp_path / "run"),
        export_dir=str(tmp_path / "export"),
        lora_rank=2,
        **ONE_STEP,
    )
    model = result.model
    backbone = model.backbone
    assert backbone.lora_rank == 2
    # LoRA A and B of the one block, the classifier's kernel and bias.
    assert result.results["trainable_parameters"] == (8 * 2 + 2 * 24) + (
        8 * 2 + 2
    )
    assert result.results["config"]["lora_rank"] == 2
    lora_b = backbone.transformer_layers[0].qkv_dense.lora_kernel_b
    assert np.any(lora_b.numpy() != 0)  # trained, and reloaded as trained

    loaded = tf.saved_model.load(result.results["export_dir"])
    served = served_variables(result.results["export_dir"])
    assert served  # at least the WordPiece table
    assert not any("lora" in v.name for v in served)
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    merged = merge_lora(model)
    expected = keras.ops.softmax(merged.predict(task.features, verbose=0))
    np.testing.assert_allclose(
        served["probabilities"].numpy(), expected, atol=1e-6
    )
    np.testing.assert_allclose(
        merged.predict(task.features, verbose=0),
        model.predict(task.features, verbose=0),
        atol=1e-6,
    )


@pytest.mark.slow
def test_a_lora_run_resumes_as_if_uninterrupted(tmp_path):
    """Keras' own `Dense` saves LoRA merged and zeroes it on loading, after
    which it cannot train: the backup keeps LoRA's weights as they are."""
    training = {**TRAINING, "epochs": 2, "lora_rank": 2}
    reference = run_fine_tuning(
        TinySentiment(), str(tmp_path / "reference"), **training
    )
    original = keras.callbacks.BackupAndRestore.on_epoch_end

    def crash_after_epoch_one(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 0:
            raise RuntimeError("simulated crash")

    run_dir = str(tmp_path / "run")
    with mock.patch.object(
        keras.callbacks.BackupAndRestore, "on_epoch_end", crash_after_epoch_one
    ):
        with pytest.raises(RuntimeError, match="simulated crash"):
            run_fine_tuning(TinySentiment(), run_dir, **training)
    resumed = run_fine_tuning(TinySentiment(), run_dir, **training)
    assert resumed.results["resumed_from_epoch"] == 1
    assert_same_weights(
        resumed.model.get_weights(), reference.model.get_weights()
    )


def _global_draws():
    """One draw from each global generator the seed touches."""
    return (
        random.random(),
        float(np.random.rand()),
        float(tf.random.uniform(())),
        float(keras.random.uniform(())),
    )


def test_the_processs_global_random_state_is_left_as_it_was(tmp_path):
    # The run seeds itself (seed=7; its results repeat bit for bit), but
    # the caller's generators go on as if it had not run:
    # Python's, NumPy's, TensorFlow's and Keras' global ones.
    keras.utils.set_random_seed(123)  # a seeded caller
    python, numpy = random.getstate(), np.random.get_state()
    run_fine_tuning(TinySentiment(), str(tmp_path), **ONE_STEP)
    assert random.getstate() == python
    after = np.random.get_state()
    assert after[0] == numpy[0] and (after[1] == numpy[1]).all()
    draws = _global_draws()
    keras.utils.set_random_seed(123)
    assert draws == _global_draws()


def test_the_log_holds_a_line_per_quarter_epoch_and_a_one_line_config(
    tmp_path,
):
    lines = []
    with (
        mock.patch.object(
            runner.logging, "info", lambda f, *a: lines.append(f % a)
        ),
        mock.patch(
            "keras_bert.training.progress_logger.logging.info",
            lambda f, *a: lines.append(f % a),
        ),
    ):
        run_fine_tuning(
            TinySentiment(), str(tmp_path), **{**ONE_STEP, "batch_size": 1}
        )
    progress = [line for line in lines if line.startswith("epoch 1 step")]
    assert [line.split(":")[0] for line in progress] == [
        f"epoch 1 step {step}/10" for step in (2, 4, 6, 8, 10)
    ]
    (config,) = [line for line in lines if line.startswith("Resolved")]
    assert "\n" not in config and '"batch_size": 1' in config
