r"""Distils a fine-tuned classifier into a smaller student of its own blocks.

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
absent). `--hidden_state_weight` (0: off) adds that times the mean
squared error between each student block's hidden states and its mapped
teacher block's (`--hidden_state_layers`, one teacher block per student
block; by default the uniform map, 6 to 3 blocks: 1,3,5). Data: the
formats of `recipes/classify.py` (JSONL or TSV with `text`, or
`text_a`/`text_b`, and `label`).

It reports the teacher's and the student's metrics on `--eval_file`, and
each one's serving speed (examples/s at each of `--speed_batch_sizes`)
from their SavedModels, loaded in this process and timed in alternation.
Writes, under `--model_dir`: `student.keras`, `results.json` (metrics,
speeds, distillation seconds, config), `teacher_export/` and, unless
`--export_dir` is given, `student_export/` (the SavedModels timed, each
in a version folder: `results.json` names them).
"""

import dataclasses
import json
import os
import time

import cpu_backend  # before TensorFlow: chooses its CPU backend
import keras
import numpy as np
import tensorflow as tf
from absl import app
from absl import flags
from absl import logging

import keras_bert
from keras_bert.cli import recipe_flags
from keras_bert.distillation import BertDistiller
from keras_bert.distillation import student_of
from keras_bert.fine_tuning import load_task_model
from keras_bert.fine_tuning.classify import read_classification_examples
from keras_bert.fine_tuning.classify.predictions import load_finished_run
from keras_bert.training.optimizers import training_defaults

_FLAGS_BEFORE = set(flags.FLAGS)
flags.DEFINE_string(
    "teacher",
    None,
    "A recipes/classify.py --model_dir, a .keras file or a Hugging Face "
    "directory of a fine-tuned classifier.",
)
flags.DEFINE_string(
    "train_file", None, "JSONL or TSV texts (labels) to distil on."
)
flags.DEFINE_string(
    "eval_file", None, "JSONL or TSV texts and labels to score."
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
recipe_flags.define_training_flags("classifier")
flags.mark_flags_as_required(
    ["teacher", "train_file", "eval_file", "model_dir"]
)
# --help lists the shared flags too, as this recipe's own.
flags.adopt_module_key_flags(recipe_flags)
FLAGS = flags.FLAGS
RECIPE_FLAGS = [name for name in FLAGS if name not in _FLAGS_BEFORE]
# Shared training flags this recipe does not implement: refused if set.
_UNSUPPORTED = {
    "strategy": "one_device",
    "tpu": None,
    "mixed_precision": "none",
    "gradient_accumulation_steps": 1,
    "lora_rank": 0,
    "adam_epsilon_hat": True,
}


def main(argv):
    del argv
    config = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    _check_flags(config)
    keras.utils.set_random_seed(FLAGS.seed)
    tf.io.gfile.makedirs(FLAGS.model_dir)
    teacher = load_teacher(FLAGS.teacher, FLAGS.max_seq_length)
    multi_label = teacher.label_mode.multi_label
    use_labels = FLAGS.student_loss_weight > 0
    train = read_classification_examples(
        FLAGS.train_file, multi_label, labels=use_labels
    )
    dev = read_classification_examples(FLAGS.eval_file, multi_label)
    student = student_of(teacher, **_student_choice())
    logging.info(
        "Student: %d blocks, hidden %d",
        student.backbone.num_layers,
        student.backbone.hidden_dim,
    )
    distiller = BertDistiller(
        teacher,
        student,
        student_loss_weight=FLAGS.student_loss_weight,
        temperature=FLAGS.temperature,
        hidden_state_weight=FLAGS.hidden_state_weight,
        hidden_state_layers=_hidden_state_layers(),
    )
    defaults = dataclasses.replace(
        training_defaults("classifier"),
        learning_rate=FLAGS.learning_rate,
        warmup_fraction=FLAGS.warmup_fraction,
    )
    distiller.compile(optimizer=defaults.create_auto_optimizer())
    start = time.perf_counter()
    history = distiller.fit(
        _inputs(train.texts),
        _labels(teacher, train.labels) if use_labels else None,
        batch_size=FLAGS.batch_size,
        epochs=FLAGS.epochs,
        seed=FLAGS.seed,
        verbose=2,
    )
    seconds = time.perf_counter() - start
    student.save(os.path.join(FLAGS.model_dir, "student.keras"))
    results = {
        "student_layers": _student_layers(teacher, student),
        "distillation_seconds": seconds,
        "history": history.history,
        "config": config,
    }
    for name, model in (("teacher", teacher), ("student", student)):
        results[f"{name}_metrics"] = model.evaluate(
            _inputs(dev.texts),
            _labels(teacher, dev.labels),
            batch_size=FLAGS.eval_batch_size,
            return_dict=True,
            verbose=0,
        )
    if FLAGS.export_dir or FLAGS.speed_batch_sizes:
        results["export_dir"] = _export(
            student, "student_export", FLAGS.export_dir
        )
    if FLAGS.speed_batch_sizes:
        results["teacher_export_dir"] = _export(teacher, "teacher_export")
        results["examples_per_second"] = serving_speeds(
            {
                "teacher": results["teacher_export_dir"],
                "student": results["export_dir"],
            },
            dev.texts,
            [int(size) for size in FLAGS.speed_batch_sizes],
            FLAGS.speed_seconds,
        )
    path = os.path.join(FLAGS.model_dir, "results.json")
    with tf.io.gfile.GFile(path, "w") as f:
        json.dump(results, f, indent=2, default=float)
    _print_summary(results)


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


def load_teacher(path, max_seq_length):
    """The classifier at `path`, its preprocessor attached: a finished
    `recipes/classify.py` run, a `.keras` file or a Hugging Face
    directory (read at `max_seq_length` tokens)."""
    if path.endswith(".keras"):
        return keras.models.load_model(path)
    if tf.io.gfile.exists(os.path.join(path, "results.json")):
        model, preprocessor, _ = load_finished_run(path, _model_of_run)
        model.preprocessor = preprocessor
        return model
    if tf.io.gfile.exists(os.path.join(path, "config.json")):
        return keras_bert.BertClassifier.from_checkpoint(
            path, sequence_length=max_seq_length
        )
    raise app.UsageError(
        f"--teacher={path} is neither a recipes/classify.py --model_dir "
        "(results.json), a .keras file nor a Hugging Face directory "
        "(config.json)."
    )


def _model_of_run(results):
    """The classifier a `recipes/classify.py` run trained, and its
    preprocessor, from the run's `results.json`."""
    config = results["config"]
    sequence_length = config["max_seq_length"]
    windows = recipe_flags.document_window_arguments(config, sequence_length)
    model, tokenizer = load_task_model(
        keras_bert.BertClassifier,
        sequence_length=sequence_length,
        num_classes=len(results["label_names"]),
        label_names=results["label_names"],
        multi_label=results["multi_label"],
        **windows,
        **{
            name: config[name]
            for name in ("init_checkpoint", "preset", "vocabulary", "lowercase")
        },
    )
    preprocessor = keras_bert.BertPreprocessor(
        tokenizer, sequence_length=sequence_length
    )
    return model, preprocessor


def _inputs(texts):
    return texts[0] if len(texts) == 1 else tuple(texts)


def _labels(teacher, names):
    """Label names; class ids where the teacher has no names."""
    if teacher.label_names is None and teacher.label_mode.multi_label is False:
        return np.array([int(name) for name in names])
    return names


def _student_layers(teacher, student):
    if FLAGS.student_preset:
        return FLAGS.student_preset
    chosen = _student_choice()
    if "layers" in chosen:
        return list(chosen["layers"])
    return list(
        keras_bert.distillation.every_other_layer(
            teacher.backbone.num_layers, student.backbone.num_layers
        )
    )


def _export(model, name, export_dir=None):
    return keras_bert.serving.export_saved_model(
        model,
        export_dir=export_dir or os.path.join(FLAGS.model_dir, name),
        precision=FLAGS.export_precision,
        check_cpu=FLAGS.export_check_cpu,
    )


def serving_speeds(export_dirs, texts, batch_sizes, seconds):
    """`{name: {batch_size: examples/s}}` of each SavedModel's
    `serving_default` on batches of `texts`, the models timed in turn
    (three rounds of `seconds / 3` each; the best round counts)."""
    served = {
        name: tf.saved_model.load(path).signatures["serving_default"]
        for name, path in export_dirs.items()
    }
    keys = ("text",) if len(texts) == 1 else ("text_a", "text_b")
    speeds = {name: {} for name in served}
    for size in batch_sizes:
        batch = {
            key: tf.constant(np.resize(side, size).tolist())
            for key, side in zip(keys, texts)
        }
        for function in served.values():
            function(**batch)  # traced and warm
        for _ in range(3):
            for name, function in served.items():
                calls, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds / 3:
                    function(**batch)
                    calls += 1
                rate = calls * size / (time.perf_counter() - start)
                speeds[name][str(size)] = max(
                    speeds[name].get(str(size), 0.0), rate
                )
    return speeds


def _print_summary(results):
    speeds = results.get("examples_per_second", {"teacher": {}, "student": {}})
    print(f"student blocks: {results['student_layers']}")
    print(f"distillation: {results['distillation_seconds']:.1f} s")
    for name in ("teacher", "student"):
        metrics = ", ".join(
            f"{key} {value:.4f}"
            for key, value in results[f"{name}_metrics"].items()
        )
        rates = ", ".join(
            f"batch {size}: {rate:.1f}" for size, rate in speeds[name].items()
        )
        print(f"{name}: {metrics}; examples/s {rates}")
    for size in speeds["teacher"]:
        ratio = speeds["student"][size] / speeds["teacher"][size]
        print(f"student/teacher speed at batch {size}: {ratio:.2f}x")


if __name__ == "__main__":
    cpu_backend.run(main)
