r"""Distils a fine-tuned classifier or a sentence embedder into a smaller
student of its own blocks.

    python recipes/distill.py --teacher=runs/sst2 \
        --train_file=train.jsonl --eval_file=dev.jsonl \
        --student_layers=0,2,4 --model_dir=runs/sst2_student \
        [--temperature=2 --student_loss_weight=0.5] \
        [--hidden_state_weight=1.0 --hidden_state_layers=1,3,5] \
        [--export_dir=saved_models/sst2_student]

`--teacher`: a finished `recipes/classify.py --model_dir` (rebuilt from
its `results.json` and `best.weights.h5`), a `.keras` file of a
`BertClassifier`, or a Hugging Face directory of one (read at
`--max_seq_length`). The student is `keras_bert.distillation.student_of`:
the teacher's embeddings, the blocks `--student_layers` (or
`--student_num_layers` spread evenly), its pooler and head, and its
preprocessor; or `--student_preset` (e.g. `bert_mini`) with fresh weights.
It trains with `keras_bert.distillation.BertDistiller`
(`keras.distillation`): `--student_loss_weight` times the student's loss
on the train file's labels plus `1 - --student_loss_weight` times the
logits distillation at `--temperature` (1.0 = labels only, 0.0 = the
teacher only: the train file's labels are then not read and may be
absent; `--augment_copies=4` then adds 4 edited variants of every text
for the teacher to label: `keras_bert.distillation.augment_texts`).
`--hidden_state_weight` (0: off) adds that times the mean
squared error between each student block's hidden states and its mapped
teacher block's (`--hidden_state_layers`, one teacher block per student
block; by default the uniform map, 6 to 3 blocks: 1,3,5). Data: the
formats of `recipes/classify.py` (JSONL, TSV or CSV
with `text`, or `text_a`/`text_b`, and `label`; other names:
`--text_column`, `--text_b_column`, `--label_column`).

The job is `keras_bert.fine_tuning.distill.DistillationJob`, trained by
the runner every fine-tuning recipe shares: `--strategy`,
`--mixed_precision`, `--early_stopping_patience`, resume after an
interruption and TensorBoard logs (`<model_dir>/logs`) work as in
`recipes/classify.py`. The student is scored on `--eval_file` (or a
seeded `--holdout_fraction` of a labelled train file) after every epoch,
and its best epoch kept. It reports the teacher's and the student's
metrics, and each one's serving speed (examples/s at each of
`--speed_batch_sizes`) from their SavedModels, loaded in this process and
timed in turn (`keras_bert.serving.speed.examples_per_second`).
Writes, under `--model_dir`: `student.keras`, `best.weights.h5` (the
student's), `results.json` (metrics, speeds, config), `teacher_export/`
and, unless `--export_dir` is given, `student_export/` (the SavedModels
timed, each in a version folder: `results.json` names them).

A sentence embedder (`keras_bert.fine_tuning.distill.teacher_task` tells:
a `recipes/embeddings.py` run, a `.keras` `BertTextEmbedder`, a directory
with sentence-transformers' `modules.json`; plain BERT stays a classifier)
runs `EmbeddingDistillationJob`: the student learns the teacher's
embeddings (cosine) on `--train_file`'s distinct sentences (`text`, or
`text_a` and `text_b`), scored by STS Spearman on `--eval_file` (an STS-B
style TSV). Refused there: `--student_loss_weight` above 0,
`--temperature`, hidden states, `--holdout_fraction`.
"""

import os

import cpu_backend  # before TensorFlow: chooses its CPU backend
from absl import app
from absl import flags

from keras_bert import files
from keras_bert.cli import recipe_flags
from keras_bert.fine_tuning import run_fine_tuning
from keras_bert.fine_tuning.distill import DistillationJob
from keras_bert.fine_tuning.distill import EmbeddingDistillationJob
from keras_bert.fine_tuning.distill import teacher_task
from keras_bert.fine_tuning.distill.teachers import EMBEDDER
from keras_bert.serving import export_saved_model
from keras_bert.serving.speed import examples_per_second

_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string(
    "teacher",
    None,
    "A recipes/classify.py or embeddings.py --model_dir, a .keras file or "
    "a Hugging Face directory of a classifier or sentence embedder.",
)
flags.DEFINE_string(
    "train_file", None, "JSONL, TSV or CSV texts (labels) to distil on."
)
flags.DEFINE_string(
    "eval_file",
    None,
    "Texts and labels to score; else held-out rows. Embedder: STS-B TSV.",
)
flags.DEFINE_list(
    "student_layers", None, "Teacher blocks the student keeps, e.g. 0,2,4."
)
flags.DEFINE_integer(
    "student_num_layers", None, "Instead: this many blocks, spread evenly."
)
flags.DEFINE_string(
    "student_preset", None, "Instead: a fresh preset student (bert_mini)."
)
flags.DEFINE_float("temperature", 2.0, "Softens both models' logits.")
flags.DEFINE_float(
    "student_loss_weight",
    0.5,
    "Weight of the loss on labels: 1.0 labels only, 0.0 the teacher only.",
)
flags.DEFINE_float(
    "hidden_state_weight",
    0.0,
    "Adds this times the MSE of mapped blocks' hidden states; 0: off.",
)
flags.DEFINE_list(
    "hidden_state_layers",
    None,
    "Teacher block per student block, e.g. 1,3,5; default: uniform map.",
)
flags.DEFINE_integer(
    "augment_copies",
    0,
    "With --student_loss_weight=0: adds N edited variants of each text.",
)
flags.DEFINE_integer(
    "max_seq_length", 128, "Tokens per text (a Hugging Face --teacher)."
)
flags.DEFINE_list(
    "speed_batch_sizes",
    ["1", "32"],
    "Batch sizes timed from SavedModels; empty: no timing.",
)
flags.DEFINE_float(
    "speed_seconds", 3.0, "Seconds each model is timed per batch size."
)
recipe_flags.define_column_flags()
recipe_flags.define_holdout_flag()
recipe_flags.define_training_flags("classifier")
flags.mark_flags_as_required(["teacher", "train_file", "model_dir"])
# --help lists the shared flags too, as this recipe's own.
flags.adopt_module_key_flags(recipe_flags)
FLAGS = flags.FLAGS
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]
# Shared training flags a distillation does not take: refused if set.
_UNSUPPORTED = {"lora_rank": 0}  # a student is trained whole


def main(argv):
    del argv
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    _check_flags(config)
    embedder = recipe_flags.read_first(teacher_task, FLAGS.teacher) == EMBEDDER
    job = _embedding_job() if embedder else _classifier_job()
    if embedder:  # the teacher is the only signal
        config["student_loss_weight"] = 0.0
    # The files first: a bad one stops here, before any model is built.
    recipe_flags.read_data_first(job)
    config["holdout"] = getattr(job, "holdout", None)
    arguments = recipe_flags.training_arguments(FLAGS)
    sizes = [int(size) for size in FLAGS.speed_batch_sizes]
    if sizes and not FLAGS.export_dir:  # the student's export is timed
        arguments["export_dir"] = os.path.join(
            FLAGS.model_dir, "student_export"
        )
    result = run_fine_tuning(job, FLAGS.model_dir, config=config, **arguments)
    if not result.is_chief:
        return
    results = result.results
    if sizes:
        results["teacher_export_dir"] = str(
            export_saved_model(
                job.teacher,
                export_dir=os.path.join(FLAGS.model_dir, "teacher_export"),
                precision=FLAGS.export_precision,
                check_cpu=FLAGS.export_check_cpu,
                server_cpu=FLAGS.export_server_cpu,
            )
        )
        results["examples_per_second"] = examples_per_second(
            {
                "teacher": results["teacher_export_dir"],
                "student": results["export_dir"],
            },
            job.serving_texts
            if embedder
            else job.eval_sets["validation"].texts,
            sizes,
            FLAGS.speed_seconds,
        )
        files.write_json(os.path.join(FLAGS.model_dir, "results.json"), results)
    _print_summary(results)


def _classifier_job():
    return DistillationJob(
        FLAGS.teacher,
        FLAGS.train_file,
        FLAGS.eval_file,
        _student_choice(),
        student_loss_weight=FLAGS.student_loss_weight,
        temperature=FLAGS.temperature,
        sequence_length=FLAGS.max_seq_length,
        eval_batch_size=FLAGS.eval_batch_size,
        columns=recipe_flags.column_arguments(FLAGS),
        holdout_fraction=FLAGS.holdout_fraction,
        seed=FLAGS.seed,
        augment_copies=FLAGS.augment_copies,
        distiller_options={
            "hidden_state_weight": FLAGS.hidden_state_weight,
            "hidden_state_layers": _hidden_state_layers(),
        },
    )


def _embedding_job():
    """An embedder's job, after refusing the flags it does not take."""
    names = ("temperature", "hidden_state_weight", "hidden_state_layers")
    names = (*names, "holdout_fraction", "augment_copies")
    refused = [n for n in names if FLAGS[n].present]
    if FLAGS["student_loss_weight"].present and FLAGS.student_loss_weight > 0:
        refused.insert(0, "student_loss_weight")
    if refused or not FLAGS.eval_file:
        raise app.UsageError(
            f"--teacher={FLAGS.teacher} is a sentence embedder, taught by the "
            "cosine of its embeddings on unlabelled sentences: "
            + (f"drop --{refused[0]}." if refused else "pass --eval_file, "
               "an STS-B style TSV (sentence1, sentence2, score).")
        )  # fmt: skip
    return EmbeddingDistillationJob(
        FLAGS.teacher,
        FLAGS.train_file,
        FLAGS.eval_file,
        _student_choice(),
        sequence_length=FLAGS.max_seq_length,
        eval_batch_size=FLAGS.eval_batch_size,
        columns=recipe_flags.column_arguments(FLAGS),
    )


def _check_flags(config):
    for name, default in _UNSUPPORTED.items():
        if config[name] != default:
            raise app.UsageError(
                f"recipes/distill.py does not implement --{name} (received "
                f"{config[name]!r}); leave it at {default!r}."
            )
    for name in ("batch_size", "eval_batch_size", "epochs", "max_seq_length"):
        if config[name] <= 0:
            raise app.UsageError(
                f"--{name} must be positive. Received: {config[name]}"
            )
    recipe_flags.check_holdout(config)
    choices = ("student_layers", "student_num_layers", "student_preset")
    if sum(config[name] is not None for name in choices) != 1:
        raise app.UsageError(
            "Pass exactly one of --student_layers (e.g. 0,2,4), "
            "--student_num_layers or --student_preset."
        )
    _hidden_state_layers()  # block indices, or a UsageError
    if config["hidden_state_weight"] < 0:
        raise app.UsageError(
            "--hidden_state_weight is >= 0 (0: off). Received: "
            f"{config['hidden_state_weight']}"
        )
    if not 0.0 <= config["student_loss_weight"] <= 1.0:
        raise app.UsageError(
            "--student_loss_weight is from 0.0 (the teacher only) to 1.0 "
            f"(labels only). Received: {config['student_loss_weight']}"
        )


def _student_choice():
    if FLAGS.student_layers is not None:
        try:
            return {"layers": tuple(int(i) for i in FLAGS.student_layers)}
        except ValueError:
            raise app.UsageError(
                "--student_layers takes block indices, e.g. 0,2,4. "
                f"Received: {','.join(FLAGS.student_layers)}"
            ) from None
    if FLAGS.student_num_layers is not None:
        return {"num_layers": FLAGS.student_num_layers}
    return {"preset": FLAGS.student_preset}


def _hidden_state_layers():
    if FLAGS.hidden_state_layers is None:
        return None
    try:
        return tuple(int(i) for i in FLAGS.hidden_state_layers)
    except ValueError:
        raise app.UsageError(
            "--hidden_state_layers takes teacher block indices, e.g. 1,3,5. "
            f"Received: {','.join(FLAGS.hidden_state_layers)}"
        ) from None


def _print_summary(results):
    speeds = results.get("examples_per_second", {"teacher": {}, "student": {}})
    print(f"student blocks: {results['student_layers']}")
    print(f"run: {results['wall_time_seconds']:.1f} s")
    metrics = {
        "teacher": results["teacher_metrics"],
        "student": results["metrics"],
    }
    for name in ("teacher", "student"):
        scores = ", ".join(
            f"{key} {value:.4f}"
            for split in metrics[name].values()
            for key, value in split.items()
        )
        rates = ", ".join(
            f"batch {size}: {rate:.1f}" for size, rate in speeds[name].items()
        )
        print(f"{name}: {scores}; examples/s {rates}")
    for size in speeds["teacher"]:
        ratio = speeds["student"][size] / speeds["teacher"][size]
        print(f"student/teacher speed at batch {size}: {ratio:.2f}x")


if __name__ == "__main__":
    cpu_backend.run(main)
