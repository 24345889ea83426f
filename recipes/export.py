r"""Export a model and its tokenizer for TensorFlow Serving.

Writes `--export_dir/<version>/`, one SavedModel that takes raw text (the
WordPiece tokenizer and the packing run inside the graph) and needs only
TensorFlow and tensorflow-text at serving time.

    # A fine-tuned classifier saved by Keras (`model.save("clf.keras")`);
    # --vocab_file only if it was built without `preprocessor=`:
    python recipes/export.py --model=clf.keras \
        --labels=negative,positive --export_dir=saved_models/sst2

    # The same with int8 weights (about 4x smaller; see docs/serving.md):
    python recipes/export.py --model=clf.keras --quantize=int8 \
        --labels=negative,positive --export_dir=saved_models/sst2_int8

    # int8 with each layer's input range calibrated on a few hundred
    # sentences of your text, one per line (faster; a oneDNN-only kernel,
    # saved_models/README.md):
    python recipes/export.py --model=clf.keras --quantize=int8 \
        --calibration_file=calibration.txt \
        --labels=negative,positive --export_dir=saved_models/sst2_int8

    # bfloat16 matmuls in the encoder, for a CPU with AVX512-BF16 or AMX
    # (refused on another, unless --nocheck_cpu; saved_models/README.md):
    python recipes/export.py --model=clf.keras --precision=bfloat16 \
        --labels=negative,positive --export_dir=saved_models/sst2_bf16

    # For a CPU server of 2 cores: each block in 2 parallel streams (serve
    # with --tensorflow_intra_op_parallelism=1
    # --tensorflow_inter_op_parallelism=2; docs/serving.md):
    python recipes/export.py --model=clf.keras --streams=2 \
        --labels=negative,positive --export_dir=saved_models/sst2

    # Sentence embeddings from a pretrained checkpoint directory:
    python recipes/export.py --checkpoint=path/to/bert \
        --export_dir=saved_models/bert_embeddings

    # A sentence-transformers model: text -> its (normalised) embedding,
    # pooled as its modules.json says:
    python recipes/export.py --checkpoint=all_minilm_l6_v2_en \
        --task=text_embedder --export_dir=saved_models/minilm_embedder

    # A classifier fine-tuned by someone else, from the Hugging Face Hub
    # (labels from its config.json id2label, when it names them):
    python recipes/export.py --checkpoint=textattack/bert-base-uncased-SST-2 \
        --task=classifier --export_dir=saved_models/sst2

`--checkpoint` takes whatever `from_checkpoint` takes: a Hugging Face,
Google or keras-hub preset directory, a Hugging Face Hub id
(`org/name[@revision]`, `hf://...`), a trained preset name
(`bert_base_en_uncased`), a `kaggle://` handle, or a directory
`recipes/convert_checkpoint.py --to=keras` wrote (its `model.keras`).
`--task` chooses the head to load and serve: `embeddings` (the backbone:
pooled and mean-pooled vectors; also for masked-LM checkpoints), the
`TASK_NAME` of any task model with a serving signature (`classifier`,
`question_answering`, `token_classification`, `text_embedder`,
`masked_lm` (fill-mask: `--export_options='{"top_k": 5}'`), ...), or
`auto` (the head the checkpoint holds; a masked-LM head exports its
backbone's embeddings).

See saved_models/README.md for serving the result.
"""

import json

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert.serving import servable_task_names
from keras_bert.serving.plan import PRECISIONS

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "model", None, "A `.keras` file of a keras_bert model (any task)."
)
flags.DEFINE_string(
    "checkpoint",
    None,
    "A checkpoint: a Hugging Face, Google, keras-hub preset or keras-bert "
    "directory, a Hugging Face Hub id (org/name[@revision], hf://...), a "
    "trained preset name or a kaggle:// handle; exported with the head "
    "--task chooses. Also the default source of the vocabulary.",
)
# --task -> the model class loaded from --checkpoint: the backbone, every
# task model with a serving signature (by its TASK_NAME), or the checkpoint's.
TASKS = {
    "embeddings": keras_bert.BertBackbone,
    **servable_task_names(),
    "auto": "auto",
}
flags.DEFINE_enum(
    "task",
    None,
    list(TASKS),
    "The head to export from --checkpoint: embeddings (the backbone; the "
    f"default), {', '.join(list(TASKS)[1:-1])}, or auto (the head the "
    "checkpoint holds; a masked-LM head exports its backbone's "
    "embeddings). With --model, the model must be of this task.",
)
flags.DEFINE_integer(
    "num_classes",
    None,
    "Classes of a --task=classifier or token_classification head that the "
    "checkpoint does not hold (freshly initialised: a warning says so).",
)
flags.DEFINE_string(
    "vocab_file",
    None,
    "vocab.txt; defaults to the preprocessor a --model carries, else the "
    "--checkpoint's.",
)
flags.DEFINE_bool(
    "lowercase",
    None,
    "Lower-case and strip accents; defaults to the checkpoint's casing, "
    "else True.",
)
flags.DEFINE_integer(
    "sequence_length",
    128,
    "Tokens per example (a --model's own preprocessor keeps its length "
    "unless this is given; --task=text_embedder from --checkpoint defaults "
    "to the checkpoint's sentence-transformers max_seq_length).",
)
flags.DEFINE_string("export_dir", None, "Base directory of the export.")
flags.DEFINE_integer("version", None, "Version number; next free by default.")
flags.DEFINE_list("labels", None, "Label strings of the classes, in order.")
flags.DEFINE_bool("pair", False, "The model reads sentence pairs.")
flags.DEFINE_enum(
    "quantize",
    None,
    ["int8"],
    "Export int8 weights (keras_bert.models.quantized_copy; see "
    "keras_bert.serving.export_saved_model's `quantize`). Default: float.",
)
flags.DEFINE_enum(
    "precision",
    "float32",
    list(PRECISIONS),
    "bfloat16: the encoder's dense matmuls in bfloat16, for a CPU with "
    "AVX512-BF16 or AMX (see keras_bert.serving.export_saved_model's "
    "`precision`). Default: float32.",
)
flags.DEFINE_bool(
    "check_cpu",
    True,
    "With --precision=bfloat16, refuse on a CPU without AVX512-BF16 or "
    "AMX; --nocheck_cpu exports anyway, with a warning, for a server "
    "with another CPU.",
)
flags.DEFINE_string(
    "server_cpu",
    None,
    "The kind of CPU the export will serve on, if not this one: avx2, "
    "avx512, avx512_vnni, avx512_bf16 or amx, with +onednn or -onednn "
    "where the server sets TF_ENABLE_ONEDNN_OPTS against TensorFlow's "
    "default there (e.g. avx2+onednn). The export is planned and checked "
    "for it (keras_bert.serving.export_saved_model's `server_cpu`). "
    "Default: this CPU.",
)
flags.DEFINE_integer(
    "streams",
    None,
    "Serve each block as this many parallel streams, the cores TF Serving "
    "runs on with --tensorflow_intra_op_parallelism=1 and "
    "--tensorflow_inter_op_parallelism=<streams> (see "
    "keras_bert.serving.export_saved_model's `streams`). Default: none.",
)
flags.DEFINE_string(
    "calibration_file",
    None,
    "With --quantize=int8: a text file (any tf.io.gfile path), one text per "
    "line (for --pair, the two texts tab-separated), on which each encoder "
    "layer's input range is calibrated (see "
    "keras_bert.serving.export_saved_model's `calibration_texts`). "
    "Default: per-row ranges.",
)
flags.DEFINE_string(
    "export_options",
    None,
    "Other export options of the model, as JSON, e.g. "
    '\'{"doc_stride": 128, "max_query_length": 64}\' for a '
    "BertQuestionAnswerer (see keras_bert.decoding.answers).",
)
flags.mark_flag_as_required("export_dir")


def main(argv):
    del argv
    import keras

    from keras_bert.checkpoints.hub import resolve_checkpoint
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
                "task",
                "num_classes",
                "vocab_file",
                "lowercase",
                "sequence_length",
                "export_dir",
                "version",
                "labels",
                "pair",
                "quantize",
                "precision",
                "streams",
                "calibration_file",
                "export_options",
            )
        },
    )
    checkpoint = FLAGS.checkpoint
    if checkpoint and not (FLAGS.model and FLAGS.vocab_file):
        # A Hub id once, so that the model and its vocabulary are one
        # commit, and only what is read from it.
        checkpoint = resolve_checkpoint(
            checkpoint, weights=not FLAGS.model, tokenizer=not FLAGS.vocab_file
        )
    keras_file = FLAGS.model or _keras_file_in(checkpoint)
    if keras_file:
        if not keras_bert.files.exists(keras_file):
            raise app.UsageError(f"--model={keras_file} does not exist.")
        model = keras.models.load_model(keras_file)
        _check_task(model, keras_file)
    else:
        model = _load_checkpoint(checkpoint)
    preprocessor = _preprocessor(model, checkpoint)
    options = _export_options()
    labels = FLAGS.labels
    if not labels and not keras_file:
        labels = _checkpoint_labels(model, checkpoint)
    if labels:
        options["labels"] = labels
    if FLAGS.pair:
        options["pair"] = True
    path = export_saved_model(
        model,
        preprocessor,
        FLAGS.export_dir,
        version=FLAGS.version,
        quantize=FLAGS.quantize,
        streams=FLAGS.streams,
        precision=FLAGS.precision,
        check_cpu=FLAGS.check_cpu,
        calibration_texts=_calibration_texts(),
        server_cpu=FLAGS.server_cpu,
        **options,
    )
    logging.info("Ops in the SavedModel: %s", saved_model_op_types(path))
    logging.info("Exported %s", path)
    _log_plan(model)


def _log_plan(model):
    """One line: what the export serves and the CPU and oneDNN setting it
    was planned for, which the server should run with (docs/serving.md)."""
    from keras_bert.serving.cpu import server_cpu
    from keras_bert.serving.cpu import this_cpu
    from keras_bert.serving.export import served_implementation

    cpu = server_cpu(FLAGS.server_cpu) if FLAGS.server_cpu else this_cpu()
    implementation = served_implementation(
        model,
        FLAGS.quantize,
        FLAGS.streams,
        FLAGS.precision,
        calibrated=bool(FLAGS.calibration_file),
        server_cpu=FLAGS.server_cpu,
    )
    logging.info(
        "Its encoder blocks run %s, planned for %s: serve it with "
        "TF_ENABLE_ONEDNN_OPTS=%d on a CPU of this kind.",
        implementation,
        cpu.description,
        int(cpu.onednn),
    )


def _preprocessor(model, checkpoint):
    """The preprocessor to export with: from --vocab_file, else the one a
    `.keras` model carries (at --sequence_length when that is given),
    else the --checkpoint's tokenizer."""
    attached = getattr(model, "preprocessor", None)
    if FLAGS.vocab_file:
        lowercase = True if FLAGS.lowercase is None else FLAGS.lowercase
        tokenizer = keras_bert.BertTokenizer(
            FLAGS.vocab_file, lowercase=lowercase
        )
    elif attached is not None and not FLAGS.checkpoint:
        if not FLAGS["sequence_length"].present:
            return attached
        tokenizer = attached.tokenizer
    elif checkpoint:
        tokenizer = keras_bert.BertTokenizer.from_checkpoint(
            checkpoint, lowercase=FLAGS.lowercase
        )
    else:
        raise app.UsageError(
            f"--model={FLAGS.model} carries no preprocessor (it was built "
            "without `preprocessor=`): pass --vocab_file=vocab.txt or "
            "--checkpoint=DIR (the checkpoint it was fine-tuned from) for "
            "its vocabulary."
        )
    return keras_bert.BertPreprocessor(
        tokenizer, sequence_length=_sequence_length(model)
    )


def _sequence_length(model):
    """--sequence_length; for a text embedder from --checkpoint without
    it, the length its checkpoint declares (sentence-transformers'
    max_seq_length, which `BertTextEmbedder.from_checkpoint` read)."""
    attached = getattr(model, "preprocessor", None)
    if (
        isinstance(model, keras_bert.BertTextEmbedder)
        and attached is not None
        and not FLAGS["sequence_length"].present
    ):
        return attached.sequence_length
    return FLAGS.sequence_length


def _load_checkpoint(checkpoint):
    """The --task model of `checkpoint`, with the head it holds."""
    from keras_bert.checkpoints import load_checkpoint

    model_class = TASKS[FLAGS.task or "embeddings"]
    options = {}
    if FLAGS.num_classes is not None:
        options["num_classes"] = FLAGS.num_classes
    model = load_checkpoint(checkpoint, model_class, **options)
    if isinstance(model, keras_bert.BertMaskedLM) and FLAGS.task == "auto":
        logging.info(
            "%s holds a masked-LM model; exporting its backbone's "
            "embeddings (--task=masked_lm exports fill-mask).",
            FLAGS.checkpoint,
        )
        model = model.backbone
    logging.info("Loaded a %s from %s.", type(model).__name__, checkpoint)
    return model


def _keras_file_in(checkpoint):
    """`model.keras` of a directory convert_checkpoint.py --to=keras wrote."""
    import tensorflow as tf

    from keras_bert import files

    try:
        if not (checkpoint and files.isdir(checkpoint)):
            return None
    except tf.errors.UnimplementedError:  # kaggle://: keras-hub's to read
        return None
    path = files.join(checkpoint, "model.keras")
    return path if files.exists(path) else None


def _check_task(model, keras_file):
    if FLAGS.task in (None, "auto"):
        return
    expected = TASKS[FLAGS.task]
    if not isinstance(model, expected):
        raise app.UsageError(
            f"--task={FLAGS.task} expects a {expected.__name__}, but "
            f"{keras_file} holds a {type(model).__name__}. Drop --task (the "
            "model's own head is exported) or pass the matching one."
        )


def _checkpoint_labels(model, checkpoint):
    """A classifier's class names from the checkpoint's `id2label`."""
    from keras_bert import files
    from keras_bert.checkpoints.checkpoint_config import labels_from_config

    if not checkpoint or not isinstance(model, keras_bert.BertClassifier):
        return None
    config_path = files.join(checkpoint, "config.json")
    if model.num_classes == 1 or not files.exists(config_path):
        return None
    return labels_from_config(files.read_json(config_path), model.num_classes)


def _check_flags():
    """Raises `app.UsageError` naming what is missing, before any work."""
    if not FLAGS.model and not FLAGS.checkpoint:
        raise app.UsageError(
            "Nothing to export: pass --model=FILE.keras (a trained keras_bert "
            "model; with --vocab_file or --checkpoint for its vocabulary "
            "unless it carries its preprocessor), or "
            "--checkpoint=DIR to export that checkpoint's backbone."
        )
    if FLAGS.model and FLAGS.num_classes is not None:
        raise app.UsageError(
            f"--num_classes applies to heads built from --checkpoint; the "
            f"head of --model={FLAGS.model} is saved with it."
        )
    _check_serving_flags()
    if FLAGS.sequence_length < 3:
        raise app.UsageError(
            "--sequence_length must be at least 3 ([CLS], a token, [SEP]). "
            f"Received: {FLAGS.sequence_length}"
        )
    _export_options()


def _check_serving_flags():
    """--quantize, --streams and --precision together, and the CPU (this
    one or --server_cpu) for them: before the model is loaded."""
    from keras_bert.serving.cpu import server_cpu
    from keras_bert.serving.plan import check_options

    if FLAGS.calibration_file and FLAGS.quantize != "int8":
        raise app.UsageError(
            "--calibration_file calibrates int8 layers: pass --quantize=int8 "
            "too, or no --calibration_file."
        )
    try:
        check_options(
            FLAGS.quantize,
            FLAGS.streams,
            FLAGS.precision,
            calibrated=bool(FLAGS.calibration_file),
            check_cpu=FLAGS.check_cpu,
            cpu=FLAGS.server_cpu and server_cpu(FLAGS.server_cpu),
        )
    except ValueError as error:
        raise app.UsageError(
            f"{error} (The arguments named are this recipe's flags: "
            "--quantize, --streams, --precision, --server_cpu, "
            "--nocheck_cpu.)"
        ) from None


def _calibration_texts():
    """--calibration_file's texts: a list of lines, or with --pair a tuple
    of two lists (each line's two tab-separated texts); `None` without."""
    if FLAGS.calibration_file is None:
        return None
    if not keras_bert.files.exists(FLAGS.calibration_file):
        raise app.UsageError(
            f"--calibration_file={FLAGS.calibration_file} does not exist."
        )
    text = keras_bert.files.read_text(FLAGS.calibration_file)
    lines = [line for line in text.splitlines() if line.strip()]
    if not FLAGS.pair:
        return lines
    pairs = [line.split("\t") for line in lines]
    bad = [i + 1 for i, pair in enumerate(pairs) if len(pair) != 2]
    if bad:
        raise app.UsageError(
            f"--calibration_file={FLAGS.calibration_file}: with --pair each "
            f"line holds two tab-separated texts; lines {bad[:5]} do not."
        )
    return tuple(list(texts) for texts in zip(*pairs))


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
    cpu_backend.run(main)
