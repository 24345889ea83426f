r"""Fine-tunes BERT on a GLUE task, scores it, writes submissions, exports it.

    python recipes/glue.py --task=mnli --model_dir=runs/mnli \
        --data_dir=/data/glue --init_checkpoint=/ckpt/bert-base-uncased

Data: `--data_dir` names a GLUE directory as GLUE's download script lays
it out (`MNLI/train.tsv`, `MNLI/dev_matched.tsv`, ...); without it the
task comes from TFDS (`glue/<task>`). `--demo` writes a small DEMO sample
in MNLI's layout (made-up sentences, not a benchmark) and trains on it.

What it does: fine-tunes `keras_bert.BertClassifier` (a regressor for
STS-B) with AdamW and BERT's warmup + linear decay (the task is
`keras_bert.fine_tuning.glue.GlueFineTuning`, trained by the runner every task
shares, `keras_bert.fine_tuning.run_fine_tuning`); after every epoch
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

import os

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.glue import GLUE_TASKS
from keras_bert.fine_tuning.glue import GlueFineTuning
from keras_bert.fine_tuning.glue import write_mnli_demo
from keras_bert.validation import check_rate

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_enum(
    "task",
    None,
    list(GLUE_TASKS),
    "GLUE task. `ax` trains on MNLI and predicts the diagnostic set.",
)
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
recipe_flags.define_model_source_flags()
flags.DEFINE_integer("sequence_length", 128, "Tokens per example.")
flags.DEFINE_bool(
    "group_by_length",
    True,
    "Batch examples of like length together (far less padding).",
)
# Defaults: keras_bert.training.TRAINING_DEFAULTS["classifier"].
recipe_flags.define_training_flags("classifier")
flags.mark_flags_as_required(["task", "model_dir"])
# --help lists the shared flags too, as this recipe's own.
flags.adopt_module_key_flags(recipe_flags)
FLAGS = flags.FLAGS
# The recipe's flags, in definition order: logged and saved as the config.
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]


def main(argv):
    del argv
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    _check_flags(config)
    if FLAGS.demo:
        config["data_dir"] = config["data_dir"] or os.path.join(
            FLAGS.model_dir, "demo_data"
        )
        write_mnli_demo(config["data_dir"])
        logging.info("Wrote the DEMO MNLI sample to %s", config["data_dir"])
    task = GlueFineTuning(
        FLAGS.task,
        _build_model,
        data_dir=config["data_dir"],
        tfds_data_dir=FLAGS.tfds_data_dir,
        holdout_fraction=FLAGS.holdout_fraction,
        eval_batch_size=FLAGS.eval_batch_size,
        group_by_length=FLAGS.group_by_length,
    )
    result = run_fine_tuning(
        task,
        FLAGS.model_dir,
        config=config,
        **recipe_flags.training_arguments(FLAGS),
    )
    if result.is_chief:
        _print_metrics(result.results)


def _check_flags(config):
    recipe_flags.check_flags(
        config,
        positive=("sequence_length", "batch_size", "eval_batch_size", "epochs"),
    )
    if config["demo"] and config["task"] != "mnli":
        raise app.UsageError(
            f"--demo writes an MNLI sample; use --task=mnli. Received: "
            f"--task={config['task']}"
        )
    check_rate(
        "--holdout_fraction", config["holdout_fraction"], error=app.UsageError
    )


def _build_model(task):
    """The classifier (a regressor for STS-B) and its preprocessor."""
    model, tokenizer = load_task_model(
        keras_bert.BertClassifier,
        sequence_length=FLAGS.sequence_length,
        num_classes=task.num_classes,
        **recipe_flags.model_source_arguments(FLAGS),
    )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.sequence_length
    )
    return model, preprocessor


def _print_metrics(results):
    lines = [f"GLUE {results['task']}: best epoch {results['best_epoch']}"]
    for split, metrics in results["metrics"].items():
        scores = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        lines.append(f"  {split}: {scores}")
    print("\n".join(lines))


if __name__ == "__main__":
    cpu_backend.run(main)
