r"""Fine-tunes BERT for named-entity recognition, scores it, exports it.

    python recipes/ner.py --train_file=conll2003/train.txt \
        --validation_file=conll2003/valid.txt [--test_file=test.txt] \
        --init_checkpoint=/ckpt/bert-base-cased --model_dir=runs/ner \
        [--export_dir=saved_models/ner] [--predict_file=new.txt]
    python recipes/ner.py --model_dir=runs/ner --predict_file=new.txt \
        [--predictions_file=new.predictions.jsonl]

What it does: reads CoNLL column files (space- or tab-separated, the tag in
the last column or `--tag_column`, `-DOCSTART-` lines, IOB1 / IOB2 / IOBES
tags converted to IOB2), takes the label set from the training file, cuts
every sentence (or, with `--document_context`, every document) into
windows of `--sequence_length` tokens every `--stride` tokens with each
word labelled on its first sub-token (`--label_all_tokens`: every
sub-token), fine-tunes `keras_bert.BertTokenClassifier` with AdamW and
BERT's warmup + linear decay, and after every epoch predicts every word of
the validation (and test) file once and scores the entities as `conlleval`
does, keeping the best epoch (by validation F1). Then writes, under
`--model_dir`:

    results.json               per split: precision, recall, f1, accuracy
                               and per type (PER_f1, ...); every epoch's
                               scores; labels, config, wall time
    predictions_<split>.txt    `token gold predicted`, a blank line between
                               sentences (what conlleval reads)
    best.weights.h5, eval_history.json
    predictions_<name>.jsonl   with --predict_file=<name>.txt (or
                               --predictions_file): per sentence its
                               words, a tag per word and its entities;
                               without --train_file, only this, from the
                               finished run's best epoch

`--predict_file` is raw text, one sentence a line (entities with
`start` / `end` in code points, as the export gives them), or CoNLL
columns, one word a line and a blank line between sentences (tags
ignored; entities with `start` / `end` word indexes); `--predict_format`
says which, `auto` tells them apart (a `-DOCSTART-` line, or blank lines
between blocks of like columns, some of several lines: CoNLL). A
missing file, or a `--model_dir` without a finished run, stops it with
one `error: ...` line before any model is built.

And, with `--export_dir`, a SavedModel whose `serving_default` takes raw
text and returns its entities (text, type, start / end in code points,
score). A run that stopped resumes from its last finished epoch when
started again with the same `--model_dir`.

Feature-based instead of fine-tuning (the BERT paper's Table 7):
`--features=ROW` freezes the backbone and trains
`keras_bert.models.FrozenFeaturesTagger`, a two-layer BiLSTM of
`--lstm_units` per direction, on its hidden states combined as ROW says
(`last`, `sum_last_four`, `concat_last_four`, `weighted_sum_all`,
`second_to_last` or `embeddings`; see `--helpfull`), with the same data,
windows, epochs and scores; `--learning_rate` then defaults to the
tagger's 1e-3. Such a run is not exported (`--export_dir` and
`--lora_rank` are refused with it).
Every row next to fine-tuning, on CoNLL-2003: docs/embeddings.md.
"""

import functools
import types

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import app
from absl import flags

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.ner import NerFineTuning
from keras_bert.fine_tuning.ner.predictions import FORMATS
from keras_bert.fine_tuning.ner.predictions import read_sentences
from keras_bert.fine_tuning.ner.predictions import write_ner_predictions
from keras_bert.fine_tuning.predictions import finished_run
from keras_bert.fine_tuning.predictions import load_finished_run
from keras_bert.fine_tuning.predictions import predictions_path
from keras_bert.models import FrozenFeaturesTagger
from keras_bert.models.frozen_features_tagger import FEATURES

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string("train_file", None, "CoNLL file to train on.")
flags.DEFINE_string(
    "validation_file", None, "CoNLL file scored every epoch (best epoch)."
)
flags.DEFINE_string("test_file", None, "Another CoNLL file to score.")
flags.DEFINE_string(
    "predict_file",
    None,
    "Sentences to tag: after training, or, without --train_file, with the "
    "best epoch of the finished run in --model_dir. Raw text (one sentence "
    "a line) or CoNLL columns (one word a line; tags ignored).",
)
flags.DEFINE_enum(
    "predict_format",
    "auto",
    list(FORMATS),
    "How --predict_file is read: text (a sentence a line), conll (a word a "
    "line), or auto (CoNLL if it has -DOCSTART-, or blank lines between "
    "blocks of like columns, some of several lines).",
)
flags.DEFINE_string(
    "predictions_file",
    None,
    "Where --predict_file's tags go (JSONL: per sentence its words, tags "
    "and entities). Defaults to <model_dir>/predictions_<predict_file's "
    "name>.jsonl.",
)
recipe_flags.define_model_source_flags()
flags.DEFINE_integer("sequence_length", 128, "Tokens per window.")
flags.DEFINE_integer(
    "stride", None, "Tokens between window starts; default half a window."
)
flags.DEFINE_bool(
    "label_all_tokens", False, "Train on every sub-token, not the first only."
)
flags.DEFINE_bool(
    "document_context",
    False,
    "Window whole documents (-DOCSTART- to -DOCSTART-), not sentences.",
)
flags.DEFINE_integer(
    "tag_column", -1, "Column of the tag (0-based; negative from the end)."
)
flags.DEFINE_enum(
    "scheme",
    "auto",
    ["auto", "iob1", "iob2", "iobes"],
    "Tag scheme of the files (converted to IOB2).",
)
flags.DEFINE_bool(
    "group_by_length",
    True,
    "Batch windows of like length together (far less padding).",
)
flags.DEFINE_enum(
    "features",
    None,
    list(FEATURES),
    "Feature-based instead of fine-tuning: freeze the backbone and train a "
    "BiLSTM tagger (keras_bert.models.FrozenFeaturesTagger) on "
    + "; ".join(f"{name}: {text}" for name, text in FEATURES.items())
    + ". Unset: fine-tune the whole model.",
)
flags.DEFINE_integer(
    "lstm_units",
    None,
    "With --features: units per LSTM direction; default half the hidden size.",
)
# Defaults: keras_bert.training.TRAINING_DEFAULTS["token_classification"].
recipe_flags.define_training_flags("token_classification", batch_unit="windows")
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
    if not FLAGS.validation_file:
        raise app.UsageError(
            "--validation_file is required with --train_file: the CoNLL "
            "file scored every epoch (it picks the best epoch)."
        )
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    recipe_flags.check_flags(FLAGS, positive=_POSITIVE)
    training = recipe_flags.training_arguments(FLAGS)
    if FLAGS.features:
        _check_feature_based_flags()
        if not FLAGS["learning_rate"].present:
            # The tagger's own default (it trains from scratch).
            training["learning_rate"] = config["learning_rate"] = None
    elif FLAGS.lstm_units is not None:
        raise app.UsageError(
            f"--lstm_units={FLAGS.lstm_units} sizes the tagger of "
            "--features; pass --features too, or leave --lstm_units out."
        )
    # The file to tag first: a bad one stops here, before any model.
    sentences = _sentences_to_predict() if FLAGS.predict_file else None
    task = _task(FLAGS)
    result = run_fine_tuning(
        task,
        FLAGS.model_dir,
        config=config,
        **training,
    )
    if result.is_chief:
        for split, scores in result.results["metrics"].items():
            print(
                f"NER {split} (best epoch {result.results['best_epoch']}): "
                f"precision {100 * scores['precision']:.2f}, recall "
                f"{100 * scores['recall']:.2f}, F1 {100 * scores['f1']:.2f}"
            )
        if FLAGS.predict_file:
            _predict(task, result.model, sentences)


def _predict_with_finished_run():
    """--predict_file tagged by the best epoch of --model_dir's run."""
    if not FLAGS.predict_file:
        raise app.UsageError(
            "Pass --train_file (and --validation_file) to train, or "
            "--predict_file to tag with the finished run in --model_dir."
        )
    # The file and the run first: a bad one stops here, in one line.
    sentences = _sentences_to_predict()
    results = recipe_flags.read_first(finished_run, FLAGS.model_dir)
    task = _task(types.SimpleNamespace(**results["config"]))
    task.labels = results["labels"]
    model, _, _ = load_finished_run(
        FLAGS.model_dir, lambda _: task.build_model(), results
    )
    _predict(task, model, sentences)


def _task(source):
    """The NER job of the flags, or of a finished run's config."""
    return NerFineTuning(
        functools.partial(_build_model, source),
        recipe_flags.tokenizer_from_flags(source),
        source.train_file,
        source.validation_file,
        test_file=source.test_file,
        sequence_length=source.sequence_length,
        stride=source.stride,
        label_all_tokens=source.label_all_tokens,
        document_context=source.document_context,
        tag_column=source.tag_column,
        scheme=source.scheme,
        group_by_length=source.group_by_length,
        eval_batch_size=source.eval_batch_size,
    )


def _sentences_to_predict():
    """--predict_file's sentences, read before anything is built."""
    return recipe_flags.read_first(
        read_sentences, FLAGS.predict_file, FLAGS.predict_format
    )


def _predict(task, model, sentences):
    output = predictions_path(
        FLAGS.model_dir, FLAGS.predict_file, FLAGS.predictions_file
    )
    count = write_ner_predictions(task, model, sentences, output)
    print(f"NER: wrote {count} predictions to {output}")


_POSITIVE = ("sequence_length", "batch_size", "eval_batch_size", "epochs")


def _check_feature_based_flags():
    """What a feature-based run cannot do, refused before any work."""
    if FLAGS.export_dir:
        raise app.UsageError(
            f"--features={FLAGS.features} trains a FrozenFeaturesTagger, "
            "which has no serving export yet; leave --export_dir out, or "
            "fine-tune (no --features) to export."
        )
    if FLAGS.lora_rank:
        raise app.UsageError(
            f"--lora_rank={FLAGS.lora_rank} adapts the backbone, which "
            f"--features={FLAGS.features} freezes; pass one of the two."
        )
    if FLAGS.lstm_units is not None and FLAGS.lstm_units <= 0:
        raise app.UsageError(
            f"--lstm_units must be positive. Received: {FLAGS.lstm_units}"
        )


def _build_model(source, labels):
    """The tagger of the flags (or a finished run's config) for `labels`."""
    if source.features:
        model_class = FrozenFeaturesTagger
        head = {"features": source.features, "lstm_units": source.lstm_units}
    else:
        model_class, head = keras_bert.BertTokenClassifier, {}
    model, _ = load_task_model(
        model_class,
        sequence_length=source.sequence_length,
        num_classes=len(labels),
        labels=labels,
        **head,
        **recipe_flags.model_source_arguments(source),
    )
    return model


if __name__ == "__main__":
    cpu_backend.run(main)
