r"""Export a model and its tokenizer for TensorFlow Serving.

Writes `--export_dir/<version>/`, one SavedModel that takes raw text (the
WordPiece tokenizer and the packing run inside the graph) and needs only
TensorFlow and tensorflow-text at serving time.

    # A fine-tuned classifier saved by Keras (`model.save("clf.keras")`):
    python recipes/export.py --model=clf.keras --vocab_file=vocab.txt \
        --labels=negative,positive --export_dir=saved_models/sst2

    # Sentence embeddings from a pretrained checkpoint directory:
    python recipes/export.py --checkpoint=path/to/bert \
        --export_dir=saved_models/bert_embeddings

See saved_models/README.md for serving the result.
"""

import json

from absl import app
from absl import flags
from absl import logging

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "model", None, "A `.keras` file of a BertClassifier or BertBackbone."
)
flags.DEFINE_string(
    "checkpoint",
    None,
    "A checkpoint directory (Hugging Face, Google or keras-bert); exports "
    "its backbone's embeddings. Also the default source of the vocabulary.",
)
flags.DEFINE_string(
    "vocab_file", None, "vocab.txt; defaults to the --checkpoint's."
)
flags.DEFINE_bool(
    "lowercase",
    None,
    "Lower-case and strip accents; defaults to the checkpoint's casing, "
    "else True.",
)
flags.DEFINE_integer("sequence_length", 128, "Tokens per example.")
flags.DEFINE_string("export_dir", None, "Base directory of the export.")
flags.DEFINE_integer("version", None, "Version number; next free by default.")
flags.DEFINE_list("labels", None, "Label strings of the classes, in order.")
flags.DEFINE_bool("pair", False, "The model reads sentence pairs.")
flags.DEFINE_string(
    "export_options",
    None,
    "Other export options of the model, as JSON, e.g. "
    '\'{"doc_stride": 128, "max_query_length": 64}\' for a '
    "BertQuestionAnswerer (see its serving_endpoints).",
)
flags.mark_flag_as_required("export_dir")


def main(argv):
    del argv
    import keras

    import keras_bert
    from keras_bert.serving import export_saved_model
    from keras_bert.serving import saved_model_op_types

    _check_flags()
    logging.info(
        "Exporting with %s",
        {
            name: FLAGS[name].value
            for name in (
                "model",
                "checkpoint",
                "vocab_file",
                "lowercase",
                "sequence_length",
                "export_dir",
                "version",
                "labels",
                "pair",
                "export_options",
            )
        },
    )
    if FLAGS.vocab_file:
        lowercase = True if FLAGS.lowercase is None else FLAGS.lowercase
        tokenizer = keras_bert.BertTokenizer(
            FLAGS.vocab_file, lowercase=lowercase
        )
    else:
        tokenizer = keras_bert.BertTokenizer.from_checkpoint(
            FLAGS.checkpoint, lowercase=FLAGS.lowercase
        )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.sequence_length
    )
    if FLAGS.model:
        if not keras_bert.files.exists(FLAGS.model):
            raise app.UsageError(f"--model={FLAGS.model} does not exist.")
        model = keras.models.load_model(FLAGS.model)
    else:
        model = keras_bert.BertBackbone.from_checkpoint(FLAGS.checkpoint)
    options = _export_options()
    if FLAGS.labels:
        options["labels"] = FLAGS.labels
    if FLAGS.pair:
        options["pair"] = True
    path = export_saved_model(
        model, preprocessor, FLAGS.export_dir, version=FLAGS.version, **options
    )
    logging.info("Ops in the SavedModel: %s", saved_model_op_types(path))
    logging.info("Exported %s", path)


def _check_flags():
    """Raises `app.UsageError` naming what is missing, before any work."""
    if not FLAGS.model and not FLAGS.checkpoint:
        raise app.UsageError(
            "Nothing to export: pass --model=FILE.keras (a trained keras_bert "
            "model) with --vocab_file or --checkpoint for its vocabulary, or "
            "--checkpoint=DIR to export that checkpoint's backbone."
        )
    if FLAGS.model and not (FLAGS.vocab_file or FLAGS.checkpoint):
        raise app.UsageError(
            f"--model={FLAGS.model} needs its tokenizer's vocabulary: pass "
            "--vocab_file=vocab.txt or --checkpoint=DIR (the checkpoint it "
            "was fine-tuned from)."
        )
    if FLAGS.sequence_length < 3:
        raise app.UsageError(
            "--sequence_length must be at least 3 ([CLS], a token, [SEP]). "
            f"Received: {FLAGS.sequence_length}"
        )
    _export_options()


def _export_options():
    try:
        options = json.loads(FLAGS.export_options or "{}")
    except json.JSONDecodeError as error:
        raise app.UsageError(
            f"--export_options={FLAGS.export_options!r} is not JSON ({error}); "
            "pass an object, e.g. '{\"doc_stride\": 128}'."
        ) from None
    if not isinstance(options, dict):
        raise app.UsageError(
            f"--export_options={FLAGS.export_options!r} must be a JSON "
            "object of option names and values."
        )
    return options


if __name__ == "__main__":
    app.run(main)
