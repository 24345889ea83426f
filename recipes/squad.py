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

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import flags

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.squad import SquadFineTuning

# === Flags ===
_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string("train_file", None, "SQuAD JSON to train on.")
flags.DEFINE_string(
    "predict_file", None, "SQuAD JSON to answer and score every epoch."
)
recipe_flags.define_model_source_flags()
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
# Defaults: keras_bert.training.TRAINING_DEFAULTS["question_answering"].
recipe_flags.define_training_flags("question_answering", batch_unit="windows")
flags.mark_flags_as_required(["train_file", "predict_file", "model_dir"])
# --help lists the shared flags too, as this recipe's own.
flags.adopt_module_key_flags(recipe_flags)
FLAGS = flags.FLAGS
# The recipe's flags, in definition order: logged and saved as the config.
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]


def main(argv):
    del argv
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    recipe_flags.check_flags(FLAGS, positive=_POSITIVE)
    tokenizer = recipe_flags.tokenizer_from_flags(FLAGS)
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
        config=config,
        **recipe_flags.training_arguments(FLAGS),
    )
    if result.is_chief:
        results = result.results
        print(
            f"SQuAD: best epoch {results['best_epoch']}: exact match "
            f"{results['exact_match']:.2f}, F1 {results['f1']:.2f}"
        )


_POSITIVE = (
    "max_seq_length",
    "doc_stride",
    "max_query_length",
    "n_best_size",
    "max_answer_length",
    "batch_size",
    "eval_batch_size",
    "epochs",
)


def _build_model():
    model, _ = load_task_model(
        keras_bert.BertQuestionAnswerer,
        sequence_length=FLAGS.max_seq_length,
        **recipe_flags.model_source_arguments(FLAGS),
    )
    return model


if __name__ == "__main__":
    cpu_backend.run(main)
