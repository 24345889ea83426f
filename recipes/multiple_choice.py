r"""Fine-tunes BERT for multiple choice (SWAG), scores it, exports it.

    python recipes/multiple_choice.py --train_file=swag/train.csv \
        --eval_file=swag/val.csv --init_checkpoint=/ckpt/bert-base-uncased \
        --model_dir=runs/swag --export_dir=saved_models/swag \
        [--predict_file=new.jsonl]
    python recipes/multiple_choice.py --model_dir=runs/swag \
        --predict_file=new.jsonl [--predictions_file=new.predictions.jsonl]

Data: SWAG's CSV layout (`sent1`, `sent2`, `ending0` ... `endingN`,
`label`; each choice is `sent1` paired with `sent2 + " " + ending_i`, as
transformers' `run_swag.py` pairs them) or JSONL (`{"context": ...,
"choices": [...], "label": ...}`, files ending `.jsonl`); any number of
choices of at least two, the same within a file
(`keras_bert.fine_tuning.multiple_choice.read_multiple_choice`; UTF-8
with or without a byte-order mark). Without `--eval_file`, a seeded
`--holdout_fraction` (0.1) of the training rows is held out of training
and scored instead (logged; `results.json`'s `holdout`). The files are
read first: a bad one stops the run with one `error: ...` line.

What it does: fine-tunes `keras_bert.BertMultipleChoice` (one score per
choice from `[CLS]`, softmax over the choices) with AdamW and BERT's
warmup + linear decay (the job is `keras_bert.fine_tuning.
multiple_choice.MultipleChoiceFineTuning`, trained by the runner every
task shares, `keras_bert.fine_tuning.run_fine_tuning`); after every epoch
scores the accuracy over the whole eval file, keeping the best epoch's
weights; then writes, under `--model_dir`:

    results.json                  accuracy (best epoch), every epoch's,
                                  config, wall time, files written
    best.weights.h5               the best epoch's weights
    eval_history.json             per-epoch accuracy, as training goes
    predictions_validation.jsonl  per eval example: choice, label,
                                  probabilities
    predictions_<name>.jsonl      with --predict_file=<name>.jsonl (or
                                  --predictions_file): per example its
                                  context, choices, `choice` (index),
                                  `choice_text`, probabilities; without
                                  --train_file, only this, from the
                                  finished run's best epoch

`--predict_file` is in a training file's format, its labels optional
(ignored); its number of choices may differ from training's. A missing
or bad file, or a `--model_dir` without a finished run, stops it with
one `error: ...` line before any model is built.

and, with `--export_dir`, a SavedModel whose `serving_default` takes
`context` string `(batch,)` and `choices` string `(batch, num_choices)`
and returns `probabilities` and `choice`. A run that crashed resumes from
its last finished epoch when started again with the same `--model_dir`.
"""

import types

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import app
from absl import flags

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.multiple_choice import MultipleChoiceFineTuning
from keras_bert.fine_tuning.multiple_choice.predictions import read_questions
from keras_bert.fine_tuning.multiple_choice.predictions import (
    write_choice_predictions,
)
from keras_bert.fine_tuning.predictions import finished_run
from keras_bert.fine_tuning.predictions import load_finished_run
from keras_bert.fine_tuning.predictions import predictions_path

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string(
    "train_file", None, "Training examples: SWAG-layout CSV, or .jsonl."
)
flags.DEFINE_string(
    "eval_file",
    None,
    "Evaluation examples, scored after every epoch (the best epoch is "
    "kept). Without it --holdout_fraction of --train_file is held out of "
    "training and scored.",
)
recipe_flags.define_holdout_flag()
flags.DEFINE_string(
    "predict_file",
    None,
    "Examples to predict: after training, or, without --train_file, with "
    "the best epoch of the finished run in --model_dir. A training file's "
    "format (SWAG-layout CSV or .jsonl); labels optional, ignored.",
)
flags.DEFINE_string(
    "predictions_file",
    None,
    "Where --predict_file's predictions go (JSONL: context, choices, "
    "`choice`, `choice_text`, probabilities). Defaults to "
    "<model_dir>/predictions_<predict_file's name>.jsonl.",
)
recipe_flags.define_model_source_flags()
flags.DEFINE_integer(
    "max_seq_length", 128, "Tokens per (context, choice) pair."
)
# Defaults: keras_bert.training.TRAINING_DEFAULTS["multiple_choice"].
recipe_flags.define_training_flags("multiple_choice")
flags.mark_flags_as_required(["model_dir"])
# --help lists the shared flags too, as this recipe's own.
flags.adopt_module_key_flags(recipe_flags)
FLAGS = flags.FLAGS
# The recipe's flags, in definition order: logged and saved as the config.
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]


def main(argv):
    del argv
    if not FLAGS.train_file:
        _predict_with_finished_run()
        return
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    recipe_flags.check_flags(
        config,
        positive=("max_seq_length", "batch_size", "eval_batch_size", "epochs"),
    )
    recipe_flags.check_holdout(config)
    task = MultipleChoiceFineTuning(
        FLAGS.train_file,
        lambda: _build_model(FLAGS),
        eval_file=FLAGS.eval_file,
        eval_batch_size=FLAGS.eval_batch_size,
        holdout_fraction=FLAGS.holdout_fraction,
        seed=FLAGS.seed,
    )
    # The files first: a bad one stops here, before any model is built.
    recipe_flags.read_data_first(task)
    questions = _questions_to_predict() if FLAGS.predict_file else None
    config["holdout"] = task.holdout
    result = run_fine_tuning(
        task,
        FLAGS.model_dir,
        config=config,
        **recipe_flags.training_arguments(FLAGS),
    )
    if result.is_chief:
        results = result.results
        print(f"multiple choice: best epoch {results['best_epoch']}")
        for split, metrics in results["metrics"].items():
            print(f"  {split}: accuracy {metrics['accuracy']:.4f}")
        if FLAGS.predict_file:
            _predict(result.model, result.preprocessor, questions)


def _predict_with_finished_run():
    """--predict_file answered by the best epoch of --model_dir's run."""
    if not FLAGS.predict_file:
        raise app.UsageError(
            "Pass --train_file to train, or --predict_file to predict with "
            "the finished run in --model_dir."
        )
    # The file and the run first: a bad one stops here, in one line.
    questions = _questions_to_predict()
    results = recipe_flags.read_first(finished_run, FLAGS.model_dir)
    model, preprocessor, _ = load_finished_run(
        FLAGS.model_dir,
        lambda results: _build_model(
            types.SimpleNamespace(**results["config"])
        ),
        results,
    )
    _predict(model, preprocessor, questions)


def _build_model(source):
    """The multiple-choice model and the preprocessor that packs its
    pairs, from the flags or a finished run's config."""
    model, tokenizer = load_task_model(
        keras_bert.BertMultipleChoice,
        sequence_length=source.max_seq_length,
        **recipe_flags.model_source_arguments(source),
    )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=source.max_seq_length
    )
    return model, preprocessor


def _questions_to_predict():
    """--predict_file's examples, read before anything is built."""
    return recipe_flags.read_first(read_questions, FLAGS.predict_file)


def _predict(model, preprocessor, questions):
    output = predictions_path(
        FLAGS.model_dir, FLAGS.predict_file, FLAGS.predictions_file
    )
    count = write_choice_predictions(
        model, preprocessor, questions, output, FLAGS.eval_batch_size
    )
    print(f"multiple choice: wrote {count} predictions to {output}")


if __name__ == "__main__":
    cpu_backend.run(main)
