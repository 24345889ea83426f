r"""Trains sentence embeddings on text pairs, scores them, exports them.

    python recipes/embeddings.py --train_file=pairs.jsonl \
        --retrieval_file=dev_pairs.jsonl [--sts_file=STS-B/dev.tsv] \
        --init_checkpoint=sentence-transformers/all-MiniLM-L6-v2 \
        --model_dir=runs/embeddings [--export_dir=saved_models/embedder] \
        --max_seq_length=256 --scale=20 --epochs=1 --batch_size=32

Data: `--train_file` holds `(anchor, positive)` pairs (e.g. a question and
the passage that answers it): a JSONL file with `anchor` and `positive`
fields, or a TSV or CSV whose header names those columns (other names:
`--text_column` for the anchors, `--text_b_column` for the positives,
in the train and retrieval files); UTF-8 with or without a byte-order
mark. The files are read first: a bad one stops the run with one
`error: ...` line before any model is built.
`recipes/squad_embedding_pairs.py` writes SQuAD's questions and their
paragraphs in that form.

What it does: builds `keras_bert.BertTextEmbedder` from `--init_checkpoint`
(pooling from its sentence-transformers files, mean without them; always
L2-normalised, since the loss compares cosines) and
trains it with in-batch negatives (sentence-transformers'
MultipleNegativesRankingLoss: cross-entropy over `--scale` x the cosine
similarity of each anchor with every positive of its batch) on batches
that never hold the same text twice, with AdamW and BERT's warmup +
linear decay (`keras_bert.fine_tuning.embeddings.EmbeddingFineTuning`, trained
by `keras_bert.fine_tuning.run_fine_tuning`). After every epoch it scores
retrieval (`--retrieval_file`: each anchor retrieves its positive among
the file's distinct positives; Recall@1, MRR@10) and STS (`--sts_file`,
an STS-B style TSV: Spearman of cosine), keeping the best epoch (by
MRR@10, else Spearman). Under `--strategy=mirrored` each replica's
negatives are its own share of the batch. Writes, under `--model_dir`:

    results.json        metrics per eval set (best epoch), every epoch's
                        metrics, config, wall time
    best.weights.h5     the best epoch's weights
    eval_history.json   per-epoch metrics, updated as training goes

and, with `--export_dir`, a SavedModel whose `serving_default` takes
`text` (string `[batch]`) and returns `embedding` (float32
`[batch, hidden]`, L2-normalised). A run that stopped resumes from its
last finished epoch when started again with the same `--model_dir`.
"""

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import app
from absl import flags

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.embeddings import EmbeddingFineTuning
from keras_bert.fine_tuning.embeddings.pairs import PAIR_COLUMNS
from keras_bert.models import PairEmbeddingModel

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string(
    "train_file",
    None,
    "Training pairs: JSONL with `anchor` and `positive` fields, or a TSV "
    "with those columns.",
)
flags.DEFINE_string(
    "retrieval_file",
    None,
    "Retrieval eval pairs (same format): each anchor retrieves its "
    "positive among the file's distinct positives.",
)
flags.DEFINE_string(
    "sts_file",
    None,
    "STS eval TSV with sentence1, sentence2 and score columns (GLUE's "
    "STS-B/dev.tsv).",
)
recipe_flags.define_column_flags(
    label=False, help_names={"text": "anchor", "text_b": "positive"}
)
recipe_flags.define_model_source_flags()
flags.DEFINE_integer("max_seq_length", 128, "Tokens per text, at most.")
flags.DEFINE_float(
    "scale", 20.0, "Multiplier of the cosine similarities (1/temperature)."
)
flags.DEFINE_enum(
    "pooling",
    None,
    ["cls", "mean", "max"],
    "Pooling of the embedder; default: the checkpoint's sentence-"
    "transformers files (mean without them).",
)
# Defaults: keras_bert.training.TRAINING_DEFAULTS["fine_tuning"].
recipe_flags.define_training_flags("fine_tuning", batch_unit="pairs")
flags.mark_flags_as_required(["train_file", "model_dir"])
# --help lists the shared flags too, as this recipe's own.
flags.adopt_module_key_flags(recipe_flags)
FLAGS = flags.FLAGS
# The recipe's flags, in definition order: logged and saved as the config.
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]


def main(argv):
    del argv
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    _check_flags(config)
    task = EmbeddingFineTuning(
        FLAGS.train_file,
        _build_model,
        retrieval_file=FLAGS.retrieval_file,
        sts_file=FLAGS.sts_file,
        eval_batch_size=FLAGS.eval_batch_size,
        columns=(
            FLAGS.text_column or PAIR_COLUMNS[0],
            FLAGS.text_b_column or PAIR_COLUMNS[1],
        ),
    )
    # The files first: a bad one stops here, before any model is built.
    recipe_flags.read_data_first(task)
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
        positive=("max_seq_length", "batch_size", "eval_batch_size", "epochs"),
    )
    if not config["scale"] > 0:
        raise app.UsageError(
            f"--scale must be positive (20 is sentence-transformers'). "
            f"Received: {config['scale']}"
        )
    if not config["retrieval_file"] and not config["sts_file"]:
        raise app.UsageError(
            "Pass --retrieval_file (query/passage pairs) or --sts_file (an "
            "STS-B style TSV), or both: they pick the best epoch."
        )
    if config["gradient_accumulation_steps"] != 1:
        raise app.UsageError(
            "--gradient_accumulation_steps must be 1: a micro-batch's "
            "in-batch negatives would not be the batch's. Received: "
            f"{config['gradient_accumulation_steps']}. Raise --batch_size."
        )


def _build_model():
    """The pair model around the embedder, and its preprocessor."""
    # Normalised whatever the checkpoint's files say: the loss compares
    # cosines, and the export serves L2-normalised embeddings.
    embedder_arguments = {"normalize": True}
    if FLAGS.pooling:
        embedder_arguments["pooling"] = FLAGS.pooling
    embedder, tokenizer = load_task_model(
        keras_bert.BertTextEmbedder,
        sequence_length=FLAGS.max_seq_length,
        **recipe_flags.model_source_arguments(FLAGS),
        **embedder_arguments,
    )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=FLAGS.max_seq_length
    )
    return PairEmbeddingModel(embedder, scale=FLAGS.scale), preprocessor


def _print_metrics(results):
    lines = [f"Embeddings: best epoch {results['best_epoch']}"]
    for split, metrics in results["metrics"].items():
        scores = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        lines.append(f"  {split}: {scores}")
    print("\n".join(lines))


if __name__ == "__main__":
    cpu_backend.run(main)
