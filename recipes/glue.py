r"""Fine-tunes BERT on a GLUE task, scores it, writes submissions, exports it.

    python recipes/glue.py --task=mnli --model_dir=runs/mnli \
        --data_dir=/data/glue --init_checkpoint=/ckpt/bert-base-uncased

Data: `--data_dir` names a GLUE directory as GLUE's download script lays
it out (`MNLI/train.tsv`, `MNLI/dev_matched.tsv`, ...); without it the
task comes from TFDS (`glue/<task>`). `--demo` writes a small DEMO sample
in MNLI's layout (made-up sentences, not a benchmark) and trains on it.

What it does: fine-tunes `keras_bert.BertClassifier` (a regressor for
STS-B) with AdamW and BERT's warmup + linear decay; after every epoch
predicts each eval split in full and computes GLUE's metrics over it,
keeping the best epoch's weights; then writes, under `--model_dir`:

    results.json        task, metrics per eval split (best epoch), every
                        epoch's metrics, config, wall time, files written
    best.weights.h5     the best epoch's weights
    eval_history.json   per-epoch metrics, updated as training goes
    submissions/*.tsv   GLUE server files for the test splits that are
                        there (MNLI-m.tsv, MNLI-mm.tsv, AX.tsv, ...)

and, with `--export_dir`, a SavedModel of the model with its
preprocessor (raw strings in). A run that crashed resumes from its last
finished epoch when started again with the same `--model_dir`.
"""

import json
import math
import os
import shutil
import time

import keras
import numpy as np
from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert.data.glue import GLUE_TASKS
from keras_bert.data.glue import get_glue_task
from keras_bert.data.glue_dataset import glue_dataset
from keras_bert.data.glue_dataset import preprocess_glue_splits
from keras_bert.data.glue_demo import write_mnli_demo
from keras_bert.data.glue_loader import load_glue
from keras_bert.data.glue_loader import split_holdout
from keras_bert.data.glue_submission import write_glue_submission
from keras_bert.data.glue_tfds import GlueDataNotFoundError
from keras_bert.data.glue_tsv import glue_split_path
from keras_bert.serving import export_saved_model
from keras_bert.training.distribution import remove_write_directory
from keras_bert.training.distribution import support_distributed_fit
from keras_bert.training.distribution import write_directory
from keras_bert.training.glue_evaluation import GlueEvaluation
from keras_bert.training.optimizers import create_adamw
from keras_bert.training.strategies import STRATEGIES
from keras_bert.training.strategies import check_fit_support
from keras_bert.training.strategies import create_strategy
from keras_bert.training.strategies import is_chief
from keras_bert.training.warmup_linear_decay import WarmupLinearDecay

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_enum(
    "task",
    None,
    list(GLUE_TASKS),
    "GLUE task. `ax` trains on MNLI and predicts the diagnostic set.",
)
flags.DEFINE_string("model_dir", None, "Output directory; resumes from it.")
flags.DEFINE_string(
    "data_dir",
    None,
    "GLUE directory (CoLA/, SST-2/, MNLI/, ...). Default: TFDS glue/<task>.",
)
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory.")
flags.DEFINE_bool(
    "demo",
    False,
    "Write the DEMO MNLI-layout sample to --data_dir (default "
    "MODEL_DIR/demo_data) and train on it. Requires --task=mnli.",
)
flags.DEFINE_float(
    "holdout_fraction",
    0.0,
    "If > 0, hold out this share of the train split (fixed split, seed 0) "
    "and evaluate on it instead of the dev files (e.g. MRPC without dev).",
)
flags.DEFINE_string(
    "init_checkpoint",
    None,
    "Pre-trained weights: a Hugging Face or Google BERT directory, or a "
    "keras-bert pre-training output. Its vocab.txt gives the tokenizer.",
)
flags.DEFINE_string(
    "preset",
    None,
    "Instead of --init_checkpoint: a BertBackbone preset with random "
    "weights (bert_tiny ... bert_large); needs --vocabulary.",
)
flags.DEFINE_string("vocabulary", None, "vocab.txt for --preset.")
flags.DEFINE_bool("lowercase", True, "Lowercase text (with --preset).")
flags.DEFINE_integer("sequence_length", 128, "Tokens per example.")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Batch size to predict.")
flags.DEFINE_float("learning_rate", 2e-5, "Peak learning rate.")
flags.DEFINE_integer("epochs", 3, "Training epochs.")
flags.DEFINE_float("warmup_fraction", 0.1, "Share of steps of warmup.")
flags.DEFINE_integer("seed", 0, "Seed of initialisation, dropout, order.")
flags.DEFINE_enum(
    "strategy",
    "one_device",
    list(STRATEGIES),
    "tf.distribute strategy (keras_bert.training.create_strategy).",
)
flags.DEFINE_string(
    "tpu", None, "With --strategy=tpu: the TPU's name, address or 'local'."
)
flags.DEFINE_enum(
    "mixed_precision",
    "none",
    ["none", "mixed_float16", "mixed_bfloat16"],
    "Keras dtype policy; mixed_float16 on GPUs, mixed_bfloat16 on TPUs.",
)
flags.DEFINE_string(
    "export_dir",
    None,
    "If set, export the best model with its preprocessor for serving.",
)
flags.mark_flags_as_required(["task", "model_dir"])
FLAGS = flags.FLAGS
# The recipe's flags, in definition order: logged and saved as the config.
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]


def main(argv):
    del argv
    start = time.time()
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    _check_flags(config)
    # The strategy comes before any other TensorFlow work: a multi-worker
    # strategy must configure collective ops at program start.
    strategy = create_strategy(FLAGS.strategy, tpu=FLAGS.tpu)
    check_fit_support(strategy)
    model_dir = FLAGS.model_dir
    os.makedirs(model_dir, exist_ok=True)
    if FLAGS.demo:
        config["data_dir"] = config["data_dir"] or os.path.join(
            model_dir, "demo_data"
        )
        write_mnli_demo(config["data_dir"])
        logging.info("Wrote the DEMO MNLI sample to %s", config["data_dir"])
    logging.info("Resolved configuration:\n%s", json.dumps(config, indent=2))

    task = get_glue_task(FLAGS.task)
    train_task = get_glue_task(task.training_task or task.name)
    keras.utils.set_random_seed(FLAGS.seed)
    if FLAGS.mixed_precision != "none":
        keras.mixed_precision.set_global_policy(FLAGS.mixed_precision)

    # Data first: a missing file fails before any model is built.
    train, eval_sets = _load_train_and_eval(train_task, config)
    test_sets, skipped_tests = _load_test_sets(task, config)
    logging.info(
        "%s: %d training examples; eval %s; test %s",
        train_task.name,
        len(train["label"]),
        {name: len(examples["label"]) for name, examples in eval_sets.items()},
        [f"{t.name}/{split}" for t, split, _ in test_sets],
    )

    # Every worker trains; only the chief writes into --model_dir. Other
    # workers write to a temporary directory (removed at the end), seeded
    # with the chief's backup so that a restarted job resumes everywhere
    # from the same epoch.
    chief = is_chief(strategy)
    run_dir = write_directory(model_dir, strategy)
    if not chief:
        _copy_resume_state(model_dir, run_dir)
    steps_per_epoch = math.ceil(len(train["label"]) / FLAGS.batch_size)
    total_steps = steps_per_epoch * FLAGS.epochs
    with strategy.scope():
        model, preprocessor = _build_model(train_task)
        model.compile(
            optimizer=create_adamw(
                WarmupLinearDecay(
                    FLAGS.learning_rate,
                    total_steps=total_steps,
                    warmup_steps=int(FLAGS.warmup_fraction * total_steps),
                )
            )
        )
    # Keras 3 workarounds so that fit under a strategy equals one device.
    support_distributed_fit(model)

    # One tokenizer pass over every split: its graph is built once.
    packed = preprocess_glue_splits(
        [(train_task, train)]
        + [(train_task, examples) for examples in eval_sets.values()]
        + [(test_task, examples) for test_task, _, examples in test_sets],
        preprocessor,
    )
    train_features = packed[0]
    eval_features = dict(zip(eval_sets, packed[1 : 1 + len(eval_sets)]))
    test_features = packed[1 + len(eval_sets) :]

    paths = {
        "best_weights": os.path.join(run_dir, "best.weights.h5"),
        "history": os.path.join(run_dir, "eval_history.json"),
        "backup": os.path.join(run_dir, "backup"),
    }
    history = _resumable_history(paths)
    evaluation = GlueEvaluation(
        train_task,
        {
            split: (
                glue_dataset(
                    eval_features[split],
                    examples["label"],
                    FLAGS.eval_batch_size,
                ),
                examples["label"],
            )
            for split, examples in eval_sets.items()
        },
        best_weights_path=paths["best_weights"],
        history_path=paths["history"],
        history=history,
    )
    # BackupAndRestore saves weights, optimizer state and epoch after the
    # evaluation has recorded that epoch, and restores them on a restart.
    backup = keras.callbacks.BackupAndRestore(paths["backup"])
    model.fit(
        # Epoch k's order depends on (seed, k) only: a resumed run trains
        # on the same batches as an uninterrupted one.
        glue_dataset(
            train_features,
            train["label"],
            FLAGS.batch_size,
            shuffle=True,
            seed=FLAGS.seed,
            first_epoch=min(
                _backed_up_epochs(paths["backup"]), FLAGS.epochs - 1
            ),
            num_epochs=FLAGS.epochs,
        ),
        steps_per_epoch=steps_per_epoch,
        epochs=FLAGS.epochs,
        callbacks=[evaluation, backup],
        shuffle=False,  # the dataset reshuffles itself every epoch
        verbose=2,
    )

    best = evaluation.best
    model.load_weights(paths["best_weights"])
    # Predicting and exporting can involve every worker (collective ops),
    # so all go on; the others' outputs land in their temporary run_dir.
    submissions = {}
    for (test_task, split, examples), inputs in zip(test_sets, test_features):
        outputs = model.predict(
            glue_dataset(inputs, examples["label"], FLAGS.eval_batch_size),
            verbose=0,
        )
        path = write_glue_submission(
            test_task,
            split,
            examples["idx"],
            outputs,
            os.path.join(run_dir, "submissions"),
        )
        submissions[f"{test_task.name}/{split}"] = path
        logging.info("Wrote %s", path)

    export = None
    if FLAGS.export_dir:
        export = _export(
            model,
            preprocessor,
            train_task,
            FLAGS.export_dir if chief else os.path.join(run_dir, "export"),
        )

    results = {
        "task": task.name,
        "training_task": train_task.name,
        "metrics": best["metrics"],
        "best_epoch": best["epoch"],
        "monitor": evaluation.history()["monitor"],
        "epochs": evaluation.epochs,
        "num_train_examples": int(len(train["label"])),
        "num_eval_examples": {
            split: int(len(examples["label"]))
            for split, examples in eval_sets.items()
        },
        "resumed_from_epoch": (history or {}).get("last_epoch"),
        "submissions": submissions,
        "submissions_skipped": skipped_tests,
        "export_dir": export,
        "config": config,
        "wall_time_seconds": round(time.time() - start, 1),
        "versions": {
            "keras_bert": keras_bert.__version__,
            "keras": keras.__version__,
            "tensorflow": _tensorflow_version(),
        },
    }
    with open(os.path.join(run_dir, "results.json"), "w") as f:
        json.dump(_json_ready(results), f, indent=2, allow_nan=False)
    logging.info("Wrote %s", os.path.join(run_dir, "results.json"))
    if chief:
        _print_metrics(task, best)
    remove_write_directory(run_dir, model_dir)


def _check_flags(config):
    if bool(config["init_checkpoint"]) == bool(config["preset"]):
        raise app.UsageError(
            "Pass exactly one of --init_checkpoint (pre-trained weights) and "
            f"--preset (random weights). Received: init_checkpoint="
            f"{config['init_checkpoint']!r}, preset={config['preset']!r}"
        )
    if config["preset"] and not config["vocabulary"]:
        raise app.UsageError(
            f"--preset={config['preset']} has no vocabulary; pass "
            "--vocabulary=PATH/vocab.txt."
        )
    if config["demo"] and config["task"] != "mnli":
        raise app.UsageError(
            f"--demo writes an MNLI sample; use --task=mnli. Received: "
            f"--task={config['task']}"
        )
    if not 0 <= config["holdout_fraction"] < 1:
        raise app.UsageError(
            "--holdout_fraction must be in [0, 1). Received: "
            f"{config['holdout_fraction']}"
        )
    for name in ("sequence_length", "batch_size", "eval_batch_size", "epochs"):
        if config[name] <= 0:
            raise app.UsageError(
                f"--{name} must be positive. Received: {config[name]}"
            )
    if not 0 <= config["warmup_fraction"] <= 1:
        raise app.UsageError(
            "--warmup_fraction must be in [0, 1]. Received: "
            f"{config['warmup_fraction']}"
        )


def _load_train_and_eval(task, config):
    def load(split):
        return load_glue(
            task, split, config["data_dir"], config["tfds_data_dir"]
        )

    train = load("train")
    if config["holdout_fraction"]:
        train, holdout = split_holdout(train, config["holdout_fraction"])
        return train, {"holdout": holdout}
    return train, {split: load(split) for split in task.eval_splits}


def _load_test_sets(task, config):
    """The test splits there are; missing test files are skipped."""
    wanted = [(task, split) for split in task.test_splits]
    if task.name == "mnli":  # GLUE scores the diagnostic set with MNLI.
        wanted.append((get_glue_task("ax"), "test"))
    test_sets, skipped = [], {}
    for test_task, split in wanted:
        name = f"{test_task.name}/{split}"
        if config["data_dir"]:
            path = glue_split_path(test_task, split, config["data_dir"])
            if not os.path.isfile(path):
                skipped[name] = f"no file {path}"
                logging.warning("No %s; skipping its submission.", path)
                continue
        try:
            examples = load_glue(
                test_task, split, config["data_dir"], config["tfds_data_dir"]
            )
        except GlueDataNotFoundError as error:
            skipped[name] = str(error).splitlines()[0]
            logging.warning("Skipping %s: %s", name, skipped[name])
            continue
        test_sets.append((test_task, split, examples))
    return test_sets, skipped


def _build_model(task):
    if FLAGS.init_checkpoint:
        tokenizer = keras_bert.BertTokenizer.from_checkpoint(
            FLAGS.init_checkpoint
        )
        model = keras_bert.BertClassifier.from_checkpoint(
            FLAGS.init_checkpoint, num_classes=task.num_classes
        )
    else:
        tokenizer = keras_bert.BertTokenizer(
            FLAGS.vocabulary, lowercase=FLAGS.lowercase
        )
        # The embedding table fits the vocabulary it will be used with.
        backbone = keras_bert.BertBackbone.from_preset(
            FLAGS.preset, vocabulary_size=tokenizer.vocabulary_size()
        )
        model = keras_bert.BertClassifier(backbone, task.num_classes)
    if FLAGS.sequence_length > model.backbone.max_sequence_length:
        raise app.UsageError(
            f"--sequence_length={FLAGS.sequence_length} exceeds the model's "
            f"{model.backbone.max_sequence_length} positions."
        )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.sequence_length
    )
    return model, preprocessor


def _copy_resume_state(model_dir, run_dir):
    """Copies the chief's backup and eval history into a worker's run_dir."""
    backup = os.path.join(model_dir, "backup")
    if not (os.path.isdir(backup) and os.listdir(backup)):
        return
    shutil.copytree(backup, os.path.join(run_dir, "backup"))
    shutil.copy(os.path.join(model_dir, "eval_history.json"), run_dir)
    logging.info("Worker: copied the chief's backup from %s", backup)


def _backed_up_epochs(backup_dir):
    """Epochs finished according to BackupAndRestore's backup (0 if none)."""
    path = os.path.join(backup_dir, "training_metadata.json")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return int(json.load(f)["epoch"])


def _resumable_history(paths):
    """The eval history of an interrupted run, or `None` for a fresh start."""
    resuming = os.path.exists(paths["backup"]) and os.listdir(paths["backup"])
    if not resuming:
        for path in (paths["history"], paths["best_weights"]):
            if os.path.exists(path):
                os.remove(path)
        return None
    with open(paths["history"]) as f:
        history = json.load(f)
    history["last_epoch"] = max(e["epoch"] for e in history["epochs"])
    logging.info(
        "Resuming from %s after epoch %d",
        paths["backup"],
        history["last_epoch"],
    )
    return history


def _export(model, preprocessor, task, export_dir):
    export_dir = str(
        export_saved_model(
            model,
            preprocessor,
            export_dir,
            labels=task.label_names,
            pair=len(task.text_features) == 2,
        )
    )
    logging.info("Exported the model with its preprocessor to %s", export_dir)
    return export_dir


def _print_metrics(task, best):
    lines = [f"GLUE {task.name}: best epoch {best['epoch']}"]
    for split, metrics in best["metrics"].items():
        scores = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        lines.append(f"  {split}: {scores}")
    print("\n".join(lines))


def _json_ready(value):
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _tensorflow_version():
    import tensorflow as tf

    return tf.__version__


if __name__ == "__main__":
    app.run(main)
