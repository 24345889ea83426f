r"""Fine-tunes BERT for SQuAD question answering, scores it, exports it.

    python recipes/squad.py --train_file=/data/train-v1.1.json \
        --predict_file=/data/dev-v1.1.json \
        --init_checkpoint=/ckpt/bert-base-uncased --model_dir=runs/squad \
        [--export_dir=saved_models/squad] [--version_2_with_negative]

What it does: cuts every question + context into windows as the original
`run_squad.py` does (`--max_seq_length`, `--doc_stride`,
`--max_query_length`, with its meanings), fine-tunes
`keras_bert.BertQuestionAnswerer` with AdamW and BERT's warmup + linear
decay, and after every epoch answers every question of `--predict_file`
(`--n_best_size`, `--max_answer_length`, for v2.0
`--null_score_diff_threshold`) and scores the answers with the official
SQuAD rules, keeping the best epoch (by F1). Then writes, under
`--model_dir`:

    results.json             exact_match, f1 (v2.0: the official v2.0
                             breakdown under metrics), every epoch's
                             scores, config, wall time
    predictions.json         question id -> answer text (official format)
    nbest_predictions.json   the n best answers of each question
    null_odds.json           (v2.0) null score - best span score
    best.weights.h5, eval_history.json

and, with `--export_dir`, a SavedModel whose `serving_default` takes raw
`question` and `context` strings and returns `answer`, `start`, `end`
(code points in the context) and `score`. A run that stopped resumes from
its last finished epoch when started again with the same `--model_dir`.
"""

from absl import app
from absl import flags

import keras_bert
from keras_bert.tasks import load_task_model
from keras_bert.tasks import run_fine_tuning
from keras_bert.tasks.squad import SquadFineTuning
from keras_bert.training.strategies import STRATEGIES

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string("train_file", None, "SQuAD JSON to train on.")
flags.DEFINE_string(
    "predict_file", None, "SQuAD JSON to answer and score every epoch."
)
flags.DEFINE_string("model_dir", None, "Output directory; resumes from it.")
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
flags.DEFINE_bool(
    "version_2_with_negative",
    False,
    "SQuAD v2.0: some questions have no answer in their context.",
)
flags.DEFINE_integer("max_seq_length", 384, "Tokens per window.")
flags.DEFINE_integer(
    "doc_stride",
    128,
    "Context tokens between the starts of consecutive windows.",
)
flags.DEFINE_integer("max_query_length", 64, "Question tokens kept.")
flags.DEFINE_integer("n_best_size", 20, "Answers kept per question.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in tokens.")
flags.DEFINE_float(
    "null_score_diff_threshold",
    0.0,
    "v2.0: answer nothing when null score - best span score exceeds this.",
)
flags.DEFINE_integer("batch_size", 32, "Training batch size (windows).")
flags.DEFINE_integer("eval_batch_size", 64, "Batch size to predict.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_integer("epochs", 2, "Training epochs.")
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
flags.mark_flags_as_required(["train_file", "predict_file", "model_dir"])
FLAGS = flags.FLAGS
# The recipe's flags, in definition order: logged and saved as the config.
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]


def main(argv):
    del argv
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    if bool(FLAGS.init_checkpoint) == bool(FLAGS.preset):
        raise app.UsageError(
            "Pass exactly one of --init_checkpoint (pre-trained weights) and "
            f"--preset (random weights). Received: init_checkpoint="
            f"{FLAGS.init_checkpoint!r}, preset={FLAGS.preset!r}"
        )
    if FLAGS.preset and not FLAGS.vocabulary:
        raise app.UsageError(
            f"--preset={FLAGS.preset} has no vocabulary; pass "
            "--vocabulary=PATH/vocab.txt."
        )
    if FLAGS.init_checkpoint:
        tokenizer = keras_bert.BertTokenizer.from_checkpoint(
            FLAGS.init_checkpoint
        )
    else:
        tokenizer = keras_bert.BertTokenizer(
            FLAGS.vocabulary, lowercase=FLAGS.lowercase
        )
    task = SquadFineTuning(
        _build_model,
        tokenizer,
        FLAGS.train_file,
        FLAGS.predict_file,
        version_2_with_negative=FLAGS.version_2_with_negative,
        max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length,
        n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        eval_batch_size=FLAGS.eval_batch_size,
    )
    result = run_fine_tuning(
        task,
        FLAGS.model_dir,
        epochs=FLAGS.epochs,
        batch_size=FLAGS.batch_size,
        learning_rate=FLAGS.learning_rate,
        warmup_fraction=FLAGS.warmup_fraction,
        seed=FLAGS.seed,
        strategy=FLAGS.strategy,
        tpu=FLAGS.tpu,
        mixed_precision=FLAGS.mixed_precision,
        export_dir=FLAGS.export_dir,
        config=config,
    )
    if result.is_chief:
        results = result.results
        print(
            f"SQuAD: best epoch {results['best_epoch']}: exact match "
            f"{results['exact_match']:.2f}, F1 {results['f1']:.2f}"
        )


def _build_model():
    model, _ = load_task_model(
        keras_bert.BertQuestionAnswerer,
        init_checkpoint=FLAGS.init_checkpoint,
        preset=FLAGS.preset,
        vocabulary=FLAGS.vocabulary,
        lowercase=FLAGS.lowercase,
        sequence_length=FLAGS.max_seq_length,
    )
    return model


if __name__ == "__main__":
    app.run(main)
