r"""Converts a BERT checkpoint to Keras or to Hugging Face.

    python recipes/convert_checkpoint.py --input=uncased_L-12_H-768_A-12 \
        --output=/tmp/bert_keras --to=keras
    python recipes/convert_checkpoint.py --input=/tmp/bert_keras \
        --output=/tmp/bert_hf --to=huggingface

Input: a Hugging Face directory (`config.json` + `model.safetensors` or
`pytorch_model.bin`), an original Google directory (`bert_config.json` +
`bert_model.ckpt.*`), a directory this script wrote with `--to=keras`
(`model.keras`), or a Hugging Face Hub id (`google-bert/bert-base-uncased`,
`hf://org/name@revision`) or trained preset name (`bert_base_en_uncased`),
fetched into huggingface_hub's cache. The vocabulary and casing come from
the input (`keras_bert.BertTokenizer.from_checkpoint`).

Flags:
    --input: the checkpoint directory (or Hub id) to read.
    --output: the directory to write; created if needed.
    --to: `keras` writes `model.keras`, `vocab.txt` and
        `tokenizer_config.json`; `huggingface` writes `config.json`,
        `model.safetensors`, `vocab.txt` and `tokenizer_config.json`, which
        `transformers` loads with no missing or unexpected weights.
    --model: which model to build from a checkpoint: `auto` (the task model
        whose head the checkpoint holds, else the backbone), `backbone`,
        or any task model by its `TASK_NAME` (`masked_lm`, `classifier`,
        `question_answering`, `token_classification`, ...;
        `question_answerer`, deprecated, still works).
    --num_classes: for `--model=classifier` (or `token_classification`)
        without that head in the checkpoint.

Writes `OUTPUT/conversion.json`: the resolved flags, the input format, the
model class, its parameter count and the files written.
"""

import keras
import tensorflow as tf
from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert import deprecations
from keras_bert import files
from keras_bert.checkpoints import load_checkpoint
from keras_bert.checkpoints import save_huggingface
from keras_bert.checkpoints.hub import resolve_checkpoint
from keras_bert.models.task import Task

FLAGS = flags.FLAGS

flags.DEFINE_string("input", None, "Checkpoint directory or Hub id to read.")
flags.DEFINE_string("output", None, "Directory to write.")
flags.DEFINE_enum("to", None, ["keras", "huggingface"], "Output format.")
# --model -> the model class built from the checkpoint: the checkpoint's
# own ("auto"), the backbone, or any task model by its TASK_NAME.
MODEL_CLASSES = {
    "auto": "auto",
    "backbone": keras_bert.BertBackbone,
    **Task.by_name(),
}
# Deprecated --model values, still accepted (with a warning).
MODEL_ALIASES = deprecations.RENAMED_FLAG_VALUES[
    ("convert_checkpoint", "model")
]
flags.DEFINE_enum(
    "model",
    "auto",
    list(MODEL_CLASSES) + list(MODEL_ALIASES),
    "Model to build from the checkpoint: auto (the head it holds), "
    f"backbone, or {', '.join(list(MODEL_CLASSES)[2:])}.",
)
flags.DEFINE_integer("num_classes", None, "Classes of --model=classifier.")
flags.mark_flags_as_required(["input", "output", "to"])

KERAS_FILE = "model.keras"


def _load(input_dir):
    """Returns `(model, input_format)`."""
    keras_path = files.join(input_dir, KERAS_FILE)
    if files.exists(keras_path):
        return keras.models.load_model(keras_path), "keras"
    # Only flags the user set: each model class takes its own arguments.
    options = {}
    if FLAGS.num_classes is not None:
        options["num_classes"] = FLAGS.num_classes
    name = deprecations.flag_value("convert_checkpoint", "model", FLAGS.model)
    model = load_checkpoint(input_dir, MODEL_CLASSES[name], **options)
    if files.exists(files.join(input_dir, "config.json")):
        return model, "huggingface"
    return model, "google"


def _tokenizer(input_dir):
    if not files.exists(files.join(input_dir, "vocab.txt")):
        logging.warning("%s has no vocab.txt; writing no tokenizer.", input_dir)
        return None
    return keras_bert.BertTokenizer.from_checkpoint(input_dir)


def _save_keras(model, tokenizer, output_dir):
    model.save(files.join(output_dir, KERAS_FILE))
    if tokenizer is None:
        return
    tokenizer.save_vocabulary(output_dir)
    files.write_json(
        files.join(output_dir, "tokenizer_config.json"),
        {
            "do_lower_case": tokenizer.lowercase,
            "strip_accents": tokenizer.strip_accents,
        },
    )


def main(argv):
    del argv
    configuration = {
        name: FLAGS[name].value
        for name in ("input", "output", "to", "model", "num_classes")
    }
    logging.info("Configuration: %s", configuration)
    # A Hub id becomes its snapshot directory in huggingface_hub's cache.
    input_dir = resolve_checkpoint(FLAGS.input)
    model, input_format = _load(input_dir)
    tokenizer = _tokenizer(input_dir)
    files.makedirs(FLAGS.output)
    if FLAGS.to == "keras":
        _save_keras(model, tokenizer, FLAGS.output)
    else:
        save_huggingface(model, tokenizer, FLAGS.output)
    results = {
        "configuration": configuration,
        "input_format": input_format,
        "model_class": type(model).__name__,
        "parameters": model.count_params(),
        "files": sorted(
            name.rstrip("/") for name in tf.io.gfile.listdir(FLAGS.output)
        ),
    }
    files.write_json(files.join(FLAGS.output, "conversion.json"), results)
    logging.info("Wrote %s: %s", FLAGS.output, results)


if __name__ == "__main__":
    app.run(main)
