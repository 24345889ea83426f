r"""Fine-tunes BERT to classify your own texts: one label each, or several.

    python recipes/classify.py --train_file=train.jsonl --eval_file=dev.jsonl \
        --init_checkpoint=/ckpt/bert-base-uncased --model_dir=runs/topics \
        [--multi_label] [--doc_stride=63 [--max_windows=8]] \
        [--export_dir=saved_models/topics] [--predict_file=new.txt]
    python recipes/classify.py --model_dir=runs/topics --predict_file=new.txt
    python recipes/classify.py --train_file=glue/SST-2/train.tsv \
        --eval_file=glue/SST-2/dev.tsv --text_column=sentence ...

Data (`keras_bert.fine_tuning.classify.read_classification_examples`,
docs/classify.md): JSONL, TSV or CSV, by extension (`.jsonl`/`.json`,
`.tsv`, `.csv`; other names sniffed), UTF-8 with or without a byte-order
mark. JSONL: one `{"text": ..., "label": ...}` per line, or with
`--multi_label` `{"text": ..., "labels": [...]}` (`[]` for none). TSV
(cells as they are, no quoting) or CSV (RFC 4180 quoting: `"a, b"`): a
header row naming a `text` and a `label`/`labels` column, several labels
comma-separated. Sentence pairs: `text_a` and `text_b` instead of `text`.
Other column names: `--text_column`, `--text_b_column`, `--label_column`.
`--multi_label` on a file whose every row has one plain label is refused.
Without `--eval_file`, a seeded `--holdout_fraction` (0.1) of the train
file's rows is held out of training and scored instead (logged, and kept
in `results.json`'s `holdout`). The classes are the train file's labels,
sorted. The files are read and checked first: a bad one stops the run
with one `error: <file>, line <n>: ...` line before any model is built.

What it does: fine-tunes `keras_bert.BertClassifier` (`multi_label=True`
with `--multi_label`: a sigmoid per label) with AdamW and BERT's warmup +
linear decay (the job is
`keras_bert.fine_tuning.classify.ClassificationFineTuning`, trained by the
runner every task shares); after every epoch predicts the whole eval file
and scores it (accuracy; multi-label: micro F1, which picks the best epoch,
macro F1 and subset accuracy at threshold 0.5), keeping the best epoch's
weights; a multi-label model's per-label thresholds are then tuned on the
eval file (`--notune_thresholds` keeps 0.5).

Long texts: by default a text longer than `--max_seq_length` is
truncated. `--doc_stride=N` reads each text whole instead, in windows of
`max_seq_length - 2` tokens starting every `N` tokens (`N <=
max_seq_length - 2`), and combines the windows' logits per text
(`--aggregation`: `mean`, the default, or `max`); `--max_windows=K` reads
the first `K` windows of a text only. Texts, not windows, stay the unit:
a batch holds `--batch_size` texts with all their windows, and the
metrics, predictions and export are per text (docs/long_documents.md).
Single texts only (no `text_a`/`text_b`), none empty. Writes, under
`--model_dir`:

    results.json                metrics of the best epoch (and, multi-label,
                                `tuned_metrics` and `thresholds`), every
                                epoch's metrics, label names, config
    best.weights.h5             the best epoch's weights
    eval_history.json           per-epoch metrics, updated as training goes
    predictions_validation.jsonl  text, gold, predicted, probabilities
    predictions_<name>.jsonl    with --predict_file=<name>.txt (or
                                --predictions_file): text, `label` (or
                                `labels`), probabilities; without
                                --train_file, only this, from the
                                finished run's best epoch

and, with `--export_dir`, a SavedModel taking raw strings (`text`, or
`text_a` and `text_b`): single-label → `probabilities`, `label_id`,
`label`; multi-label → `probabilities` and `labels` (the names over
threshold first, then `""`); with `--doc_stride` it cuts each text into
the same windows in its graph. A crashed run resumes from its last
finished epoch when started again with the same `--model_dir`.
"""

import functools
import types

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.classify import ClassificationFineTuning
from keras_bert.fine_tuning.classify.predictions import load_finished_classifier
from keras_bert.fine_tuning.classify.predictions import read_texts
from keras_bert.fine_tuning.classify.predictions import write_predictions
from keras_bert.fine_tuning.predictions import finished_run
from keras_bert.fine_tuning.predictions import predictions_path

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string(
    "train_file",
    None,
    "JSONL, TSV or CSV file of texts and labels to train on.",
)
flags.DEFINE_string(
    "eval_file",
    None,
    "JSONL, TSV or CSV file scored every epoch (a dev set); without it "
    "--holdout_fraction of --train_file is held out and scored.",
)
recipe_flags.define_column_flags()
recipe_flags.define_holdout_flag()
flags.DEFINE_bool(
    "multi_label",
    False,
    "Several labels per text (`labels` lists): a sigmoid per label.",
)
flags.DEFINE_bool(
    "tune_thresholds",
    True,
    "With --multi_label: tune each label's threshold on --eval_file after "
    "training (saved with the export); else 0.5 each.",
)
flags.DEFINE_string(
    "predict_file",
    None,
    "Texts to predict: after training, or, without --train_file, with the "
    "best epoch of the finished run in --model_dir. A .txt file (one text "
    "per line) or a file in the training formats (labels ignored).",
)
flags.DEFINE_string(
    "predictions_file",
    None,
    "Where --predict_file's predictions go (JSONL: the text, `label` or "
    "`labels`, and every label's probability). Defaults to "
    "<model_dir>/predictions_<predict_file's name>.jsonl.",
)
recipe_flags.define_model_source_flags()
flags.DEFINE_integer("max_seq_length", 128, "Tokens per text (or pair).")
flags.DEFINE_alias("sequence_length", "max_seq_length")
recipe_flags.define_document_window_flags()
flags.DEFINE_bool(
    "group_by_length",
    True,
    "Batch texts of like length together (far less padding).",
)
# Defaults: keras_bert.training.TRAINING_DEFAULTS["classifier"].
recipe_flags.define_training_flags("classifier")
flags.mark_flags_as_required(["model_dir"])
# --help lists the shared flags too, as this recipe's own.
flags.adopt_module_key_flags(recipe_flags)
FLAGS = flags.FLAGS
# The recipe's flags, in definition order: logged and saved as the config.
RECIPE_FLAGS = [
    name
    for name in FLAGS
    if name not in _FLAGS_BEFORE and name != "sequence_length"
]


def main(argv):
    del argv
    if not FLAGS.train_file:
        if not FLAGS.predict_file:
            raise app.UsageError(
                "Pass --train_file to train, or --predict_file to predict "
                "with the finished run in --model_dir."
            )
        # The file and the run first: a bad one stops here, in one line.
        texts = _texts_to_predict()
        results = recipe_flags.read_first(finished_run, FLAGS.model_dir)
        model, preprocessor, _ = load_finished_classifier(
            FLAGS.model_dir, _model_of_run, results
        )
        _predict(model, preprocessor, texts)
        return
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    recipe_flags.check_flags(
        config,
        positive=("max_seq_length", "batch_size", "eval_batch_size", "epochs"),
    )
    recipe_flags.check_holdout(config)
    windows = recipe_flags.document_window_arguments(
        FLAGS, FLAGS.max_seq_length
    )
    job = ClassificationFineTuning(
        FLAGS.train_file,
        FLAGS.eval_file,
        functools.partial(_build_model, windows=windows),
        multi_label=FLAGS.multi_label,
        tune_thresholds=FLAGS.tune_thresholds,
        eval_batch_size=FLAGS.eval_batch_size,
        group_by_length=FLAGS.group_by_length,
        columns=recipe_flags.column_arguments(FLAGS),
        holdout_fraction=FLAGS.holdout_fraction,
        seed=FLAGS.seed,
    )
    # The files first: a bad one stops here, before any model is built.
    recipe_flags.read_data_first(job)
    texts = _texts_to_predict() if FLAGS.predict_file else None
    config["holdout"] = job.holdout
    result = run_fine_tuning(
        job,
        FLAGS.model_dir,
        config=config,
        **recipe_flags.training_arguments(FLAGS),
    )
    if result.is_chief:
        _print_metrics(result.results)
        if FLAGS.predict_file:
            _predict(result.model, result.preprocessor, texts)


def _build_model(job, windows):
    """The classifier for the job's labels (reading `windows`: its
    `doc_stride`, `max_windows`, `aggregation`), and its preprocessor."""
    return _classifier(
        FLAGS, FLAGS.max_seq_length, job.label_names, job.multi_label, windows
    )


def _model_of_run(results):
    """The classifier a finished run trained, from its `results.json`."""
    config = results["config"]
    windows = recipe_flags.document_window_arguments(
        config, config["max_seq_length"]
    )
    return _classifier(
        types.SimpleNamespace(**config),
        config["max_seq_length"],
        results["label_names"],
        results["multi_label"],
        windows,
    )


def _classifier(source, max_seq_length, label_names, multi_label, windows):
    model, tokenizer = load_task_model(
        keras_bert.BertClassifier,
        sequence_length=max_seq_length,
        num_classes=len(label_names),
        label_names=label_names,
        multi_label=multi_label,
        **windows,
        **recipe_flags.model_source_arguments(source),
    )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=max_seq_length
    )
    return model, preprocessor


def _texts_to_predict():
    """--predict_file's texts, read before anything is built: a bad file
    stops the run with one line."""
    return recipe_flags.read_first(
        read_texts, FLAGS.predict_file, **recipe_flags.column_arguments(FLAGS)
    )


def _predict(model, preprocessor, texts):
    output = predictions_path(
        FLAGS.model_dir, FLAGS.predict_file, FLAGS.predictions_file
    )
    count = write_predictions(
        model,
        preprocessor,
        FLAGS.predict_file,
        output,
        FLAGS.eval_batch_size,
        texts=texts,
    )
    print(f"classify: wrote {count} predictions to {output}")


def _print_metrics(results):
    lines = [f"classify: best epoch {results['best_epoch']}"]
    for key in ("metrics", "tuned_metrics"):
        for split, metrics in results.get(key, {}).items():
            scores = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
            tuned = " (tuned thresholds)" if key == "tuned_metrics" else ""
            lines.append(f"  {split}{tuned}: {scores}")
    print("\n".join(lines))
    logging.info("Results: %s", results.get("metrics"))


if __name__ == "__main__":
    cpu_backend.run(main)
