"""The absl flags every fine-tuning recipe shares, defined once.

The recipes take the same model-source flags (`--init_checkpoint` or
`--preset` + `--vocabulary`) and training flags (`--batch_size`,
`--epochs`, ...); each recipe defines only its task's own.

Example (a recipe):
```python
from absl import flags
from keras_bert.cli import recipe_flags

recipe_flags.define_model_source_flags()
recipe_flags.define_training_flags("question_answering")  # its defaults
FLAGS = flags.FLAGS

def main(argv):
    recipe_flags.check_flags(FLAGS)
    result = run_fine_tuning(task, FLAGS.model_dir,
                             **recipe_flags.training_arguments(FLAGS))
```
"""

from absl import app
from absl import flags

from keras_bert.fine_tuning.run_files import check_finished_run
from keras_bert.layers.window_aggregation import AGGREGATIONS
from keras_bert.models.document_windowing import check_document_windows
from keras_bert.models.presets import BACKBONE_PRESETS
from keras_bert.models.presets import preset_hub_id
from keras_bert.models.presets import suggest_preset
from keras_bert.serving.cpu import server_cpu
from keras_bert.serving.plan import PRECISIONS
from keras_bert.serving.plan import check_options
from keras_bert.text.bert_tokenizer import BertTokenizer
from keras_bert.text.document_windows import check_doc_stride
from keras_bert.training.gradient_accumulation import (
    check_gradient_accumulation_steps,
)
from keras_bert.training.optimizers import training_defaults
from keras_bert.training.strategies import STRATEGIES


def define_model_source_flags():
    """`--init_checkpoint`, or `--preset` with `--vocabulary`/`--lowercase`."""
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "Pre-trained weights: a Hugging Face or Google BERT directory, a "
        "keras-bert pre-training output, a Hugging Face Hub id "
        "(google-bert/bert-base-uncased, hf://org/name@revision) or a "
        "trained preset name (bert_base_en_uncased). Its vocab.txt gives "
        "the tokenizer.",
    )
    flags.DEFINE_string(
        "preset",
        None,
        "Instead of --init_checkpoint: a BertBackbone architecture with "
        "random weights (bert_tiny ... bert_large); needs --vocabulary. "
        "Trained presets (bert_base_en_uncased, ...) go to "
        "--init_checkpoint.",
    )
    flags.DEFINE_string("vocabulary", None, "vocab.txt for --preset.")
    flags.DEFINE_bool("lowercase", True, "Lowercase text (with --preset).")


def define_training_flags(task_name, batch_unit="examples"):
    """`--model_dir`, the optimisation flags, strategy, precision, export.

    Args:
        task_name: str. The task model's `TASK_NAME` (e.g. `"classifier"`):
            `--batch_size`, `--learning_rate`, `--epochs` and
            `--warmup_fraction` default to its
            `keras_bert.training.TRAINING_DEFAULTS`.
        batch_unit: str. What a batch counts, for the help text.
    """
    defaults = training_defaults(task_name)
    flags.DEFINE_string("model_dir", None, "Output directory; resumes from it.")
    flags.DEFINE_bool(
        "overwrite",
        False,
        "Retrain a --model_dir whose run finished from scratch, removing "
        "its files (without it such a --model_dir is refused).",
    )
    flags.DEFINE_integer(
        "early_stopping_patience",
        None,
        "Stop once the metric that picks the best epoch has not improved "
        "for this many epochs (the best epoch's weights are kept).",
    )
    flags.DEFINE_integer(
        "batch_size",
        defaults.batch_size,
        f"Training batch size ({batch_unit}); per micro-batch with "
        "--gradient_accumulation_steps.",
    )
    flags.DEFINE_integer("eval_batch_size", 64, "Batch size to predict.")
    flags.DEFINE_float(
        "learning_rate", defaults.learning_rate, "Peak learning rate."
    )
    flags.DEFINE_integer("epochs", defaults.epochs, "Training epochs.")
    flags.DEFINE_float(
        "warmup_fraction",
        defaults.warmup_fraction,
        "Share of the update steps of warmup.",
    )
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
    flags.DEFINE_enum(
        "export_precision",
        "float32",
        list(PRECISIONS),
        "With --export_dir: bfloat16 runs the encoder's dense matmuls in "
        "bfloat16 (a CPU with AVX512-BF16 or AMX; see "
        "keras_bert.serving.export_saved_model's `precision`).",
    )
    flags.DEFINE_bool(
        "export_check_cpu",
        True,
        "With --export_precision=bfloat16: refuse, before training, on a "
        "CPU without AVX512-BF16 or AMX; --noexport_check_cpu exports "
        "anyway with a warning (for a server with another CPU).",
    )
    flags.DEFINE_string(
        "export_server_cpu",
        None,
        "With --export_dir: the servers' kind of CPU if not this one, e.g. "
        "avx2 or avx512_vnni+onednn (export_saved_model's `server_cpu`).",
    )
    flags.DEFINE_bool(
        "adam_epsilon_hat",
        True,
        "AdamW's epsilon as Keras adds it (before the bias correction, "
        "'epsilon hat'); --noadam_epsilon_hat adds it as PyTorch and "
        "Hugging Face do, which trains like them step for step.",
    )
    # --- Gradient accumulation ---
    flags.DEFINE_integer(
        "gradient_accumulation_steps",
        1,
        "Run each update's batch as this many micro-batches of "
        "--batch_size, one after the other: the batches and updates of "
        "--batch_size times this (the same weights, to float rounding) in "
        "the activation memory of --batch_size.",
    )
    # --- LoRA (BertBackbone.enable_lora) ---
    flags.DEFINE_integer(
        "lora_rank",
        0,
        "If > 0, fine-tune with LoRA of this rank: the backbone is frozen "
        "and rank-r updates of its blocks' q|k|v projections train, with "
        "the head. LoRA usually wants a higher --learning_rate than full "
        "fine-tuning (e.g. 1e-3; docs/fine_tuning.md). 0 = off.",
    )


def define_document_window_flags():
    """`--doc_stride`, `--max_windows`, `--aggregation`: long texts read
    whole in overlapping windows (`keras_bert.BertClassifier`'s
    arguments; docs/long_documents.md). Unset, texts are truncated."""
    flags.DEFINE_integer(
        "doc_stride",
        None,
        "Read each text whole, in windows of max_seq_length - 2 tokens "
        "that start every N tokens (N at most max_seq_length - 2), the "
        "windows' logits combined per text (--aggregation). Unset or 0: "
        "texts longer than --max_seq_length are truncated.",
    )
    flags.DEFINE_integer(
        "max_windows",
        None,
        "With --doc_stride: read at most this many windows of each text, "
        "the first ones (bounds the cost of the longest). Unset: all.",
    )
    flags.DEFINE_enum(
        "aggregation",
        "mean",
        list(AGGREGATIONS),
        "With --doc_stride: how a text's window logits combine.",
    )


def document_window_arguments(values, sequence_length):
    """`BertClassifier`'s window arguments from the window flags, checked.

    Args:
        values: `flags.FLAGS`, or a dict of flag values.
        sequence_length: int. Tokens per window (`--max_seq_length`).

    Returns:
        A dict `doc_stride` (`None` for an unset or 0 `--doc_stride`:
        truncation), `max_windows`, `aggregation`.

    Raises:
        app.UsageError: a bad value, or `--max_windows` or
            `--aggregation=max` without `--doc_stride`, named with the
            library's reason (`check_document_windows`,
            `check_doc_stride`).
    """
    get = values.get if isinstance(values, dict) else values.__getattr__
    arguments = {
        "doc_stride": get("doc_stride") or None,
        "max_windows": get("max_windows"),
        "aggregation": get("aggregation"),
    }
    try:
        check_document_windows(**arguments, pair=None)
        if arguments["doc_stride"] is None:
            if arguments["aggregation"] != "mean":
                raise ValueError(
                    f"Received aggregation={arguments['aggregation']!r} "
                    "without doc_stride: `aggregation` combines the logits "
                    "of a text's windows. Pass --doc_stride=N too, or leave "
                    "out --aggregation."
                )
        else:
            check_doc_stride(arguments["doc_stride"], sequence_length)
    except ValueError as error:
        raise app.UsageError(
            f"{error} (flags --doc_stride={get('doc_stride')}, "
            f"--max_windows={get('max_windows')}, "
            f"--aggregation={get('aggregation')}, "
            f"--max_seq_length={sequence_length})"
        ) from None
    return arguments


def check_architecture_preset(name):
    """Raises `app.UsageError` unless `--preset=name` is an architecture.

    `--preset` builds random weights (`bert_tiny` ... `bert_large`); a
    trained preset name is a checkpoint, for `--init_checkpoint`. Every
    recipe with `--preset` (the fine-tuning ones and `pretrain.py`) checks
    it here.

    Example:
    ```python
    check_architecture_preset("bert_tiny")  # fine
    check_architecture_preset("bert_base_en_uncased")  # app.UsageError
    ```
    """
    architectures = ", ".join(BACKBONE_PRESETS)
    if preset_hub_id(name):
        raise app.UsageError(
            f"--preset={name} names trained weights; --preset builds random "
            f"ones. Pass --init_checkpoint={name} to start from its weights "
            "(its vocabulary comes with it), or an architecture for random "
            f"weights: --preset={{{architectures}}}."
        )
    if name not in BACKBONE_PRESETS:
        raise app.UsageError(
            f"Unknown --preset={name}.{suggest_preset(name)} --preset takes "
            f"an architecture (random weights): {architectures}; pass "
            "trained weights (a preset name, Hub id or directory) as "
            "--init_checkpoint."
        )


def check_flags(values, positive=("batch_size", "eval_batch_size", "epochs")):
    """Raises `app.UsageError` naming a bad model-source or training flag.

    Args:
        values: `flags.FLAGS`, or a dict of flag values.
        positive: names of integer flags that must be > 0.
    """
    get = values.get if isinstance(values, dict) else values.__getattr__
    if bool(get("init_checkpoint")) == bool(get("preset")):
        raise app.UsageError(
            "Pass exactly one of --init_checkpoint (pre-trained weights) and "
            f"--preset (random weights). Received: init_checkpoint="
            f"{get('init_checkpoint')!r}, preset={get('preset')!r}"
        )
    if get("preset"):
        check_architecture_preset(get("preset"))
    if get("preset") and not get("vocabulary"):
        raise app.UsageError(
            f"--preset={get('preset')} has no vocabulary; pass "
            "--vocabulary=PATH/vocab.txt."
        )
    for name in positive:
        if get(name) <= 0:
            raise app.UsageError(
                f"--{name} must be positive. Received: {get(name)}"
            )
    patience = get("early_stopping_patience")
    if patience is not None and patience <= 0:
        raise app.UsageError(
            "--early_stopping_patience must be positive (epochs). "
            f"Received: {patience}"
        )
    if get("model_dir") and not get("overwrite"):
        try:
            check_finished_run(get("model_dir"))
        except ValueError as error:
            raise app.UsageError(str(error)) from None
    if (get("lora_rank") or 0) < 0:
        raise app.UsageError(
            "--lora_rank must be 0 (off) or a positive LoRA rank. Received: "
            f"{get('lora_rank')}"
        )
    if not 0 <= get("warmup_fraction") <= 1:
        raise app.UsageError(
            "--warmup_fraction must be in [0, 1]. Received: "
            f"{get('warmup_fraction')}"
        )
    if get("gradient_accumulation_steps") is not None:
        check_gradient_accumulation_steps(
            get("gradient_accumulation_steps"),
            name="--gradient_accumulation_steps",
            error=app.UsageError,
        )
    server = get("export_dir") and get("export_server_cpu")
    try:
        server = server and server_cpu(server)
    except ValueError as error:
        raise app.UsageError(f"--export_server_cpu: {error}") from None
    if get("export_dir") and get("export_precision") == "bfloat16":
        try:
            check_options(
                precision="bfloat16",
                check_cpu=get("export_check_cpu") is not False,
                cpu=server,
            )
        except ValueError as error:
            raise app.UsageError(
                f"--export_precision=bfloat16: {error} (Flags: "
                "--export_precision=float32, --export_server_cpu, "
                "--noexport_check_cpu.)"
            ) from None


def tokenizer_from_flags(values):
    """The tokenizer of `--init_checkpoint`, or of `--vocabulary`."""
    if values.init_checkpoint:
        return BertTokenizer.from_checkpoint(values.init_checkpoint)
    return BertTokenizer(values.vocabulary, lowercase=values.lowercase)


def training_arguments(values):
    """`run_fine_tuning` keyword arguments from the training flags."""
    return {
        name: getattr(values, name)
        for name in (
            "epochs",
            "batch_size",
            "learning_rate",
            "warmup_fraction",
            "seed",
            "strategy",
            "tpu",
            "mixed_precision",
            "export_dir",
            "export_precision",
            "export_check_cpu",
            "export_server_cpu",
            "adam_epsilon_hat",
            "lora_rank",
            "gradient_accumulation_steps",
            "early_stopping_patience",
            "overwrite",
        )
    }


def model_source_arguments(values):
    """`load_task_model` keyword arguments from the model-source flags."""
    return {
        name: getattr(values, name)
        for name in ("init_checkpoint", "preset", "vocabulary", "lowercase")
    }


def define_column_flags(text_b=True, label=True, help_names=None):
    """`--text_column` (and `--text_b_column`, `--label_column`): the
    columns of a user's JSONL, TSV or CSV files (`keras_bert.data.
    text_tables`) when they are not named as the recipe expects.

    Args:
        text_b: bool. Define `--text_b_column`.
        label: bool. Define `--label_column`.
        help_names: dict or `None`. The default column each flag stands
            for, for its help (e.g. `{"text": "anchor"}`).
    """
    names = {"text": "text", "text_b": "text_b", "label": "label"}
    names.update(help_names or {})
    flags.DEFINE_string(
        "text_column",
        None,
        f"The column (JSONL: field) of the texts, if not `{names['text']}`; "
        "e.g. sentence for GLUE's SST-2 TSVs.",
    )
    if text_b:
        flags.DEFINE_string(
            "text_b_column",
            None,
            f"The column of the pairs' second texts, if not "
            f"`{names['text_b']}`.",
        )
    if label:
        flags.DEFINE_string(
            "label_column",
            None,
            f"The column of the labels, if not `{names['label']}`.",
        )


def column_arguments(values):
    """The column flags a recipe defined, as `text_column=...` keyword
    arguments (unset ones left out); `values`: `FLAGS` or a dict."""
    arguments = {}
    for name in ("text_column", "text_b_column", "label_column"):
        value = values[name] if name in values else None
        value = getattr(value, "value", value)
        if value:
            arguments[name] = value
    return arguments


def define_holdout_flag():
    """`--holdout_fraction`: what is scored when `--eval_file` is absent."""
    flags.DEFINE_float(
        "holdout_fraction",
        0.1,
        "Without --eval_file: the share of --train_file's rows held out of "
        "training and scored every epoch (a split seeded by --seed).",
    )


def check_holdout(values):
    """Raises `app.UsageError` for a `--holdout_fraction` outside (0, 1)
    when there is no `--eval_file` to score."""
    fraction = values["holdout_fraction"]
    if not values["eval_file"] and not 0 < fraction < 1:
        raise app.UsageError(
            "--holdout_fraction must be in (0, 1) without --eval_file (the "
            f"share of the train file held out to score). Received: "
            f"{fraction}. Pass --eval_file, or e.g. --holdout_fraction=0.1."
        )


def read_data_first(job):
    """Reads and checks a job's data files before anything is built.

    A recipe calls it first thing in `main`, so that a bad file (a missing
    column, bytes that are not UTF-8, a CSV's stray comma) stops the run
    in the time of the imports, not after the strategy and the model: the
    message is printed as one line (`error: ...`, exit status 1), without
    a traceback. The runner then finds the data read.

    Args:
        job: a `keras_bert.fine_tuning.FineTuningJob` whose `load_data`
            keeps what it read.

    Raises:
        SystemExit: carrying the data error's message.
    """
    read_first(job.load_data)


def read_first(function, *args, **kwargs):
    """`function(*args, **kwargs)`, a `ValueError` of it as one line.

    For what a recipe reads or checks before it builds anything (a file
    to predict, a finished `--model_dir`): the error is printed as
    `error: <message>` (exit status 1), without a traceback.

    Returns:
        What `function` returns.

    Raises:
        SystemExit: carrying the `ValueError`'s message.

    Example:
    ```python
    results = read_first(finished_run, FLAGS.model_dir)
    ```
    """
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
