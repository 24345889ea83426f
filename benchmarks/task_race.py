"""The task-shape races: keras-bert against its peer on a real task.

Each task (a module of `benchmarks/tasks/`) fine-tunes all-MiniLM-L6-v2
both ways with the same settings and scores both by the same code; the
module holds only what is the task's own: its data, its contestants, its
metric and its summary. This harness holds what they share: the flags,
the seed, a worker process per contestant, the records (one JSON per
contestant and seed, with the command, the commit, the machine and the
load average; a seed never overwrites another's) and the summary, which
shows one row per seed and, for a contestant with two seeds or more, the
mean ± sd.

    python benchmarks/task_race.py --task=TASK --contestant=NAME --seed=1
    python benchmarks/task_race.py --task=TASK [--contestants=A,B]  # each
        # in its own process, then the summary
    python benchmarks/task_race.py --task=TASK --summarize

Tasks (their docstrings say what runs):

- `multiple_choice`: answer-sentence selection built from SQuAD;
- `multi_label`: the entity types of a CoNLL-2003 sentence;
- `long_documents`: windows against truncation on kernel documentation.

Retired tasks (`ner`, `squad`, `embeddings`, `feature_based_ner`): their
records and documented tables stay, each naming commit 193fb03, the last
with their modules (`git show 193fb03:benchmarks/tasks/ner.py`).

Records go to `--records_dir`; by default to `benchmarks/<the task's
folder>`, a smoke run's (`--limit_eval`, `--max_steps`) to its runs
directory.
"""

import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks import tasks  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

TASKS = ("multiple_choice", "multi_label", "long_documents")

FLAGS = flags.FLAGS
# === Every task ===
flags.DEFINE_enum("task", None, list(TASKS), "Which race.")
flags.DEFINE_string("contestant", None, "Run one contestant here (a worker).")
flags.DEFINE_list("contestants", None, "The driver runs these (default all).")
flags.DEFINE_integer("seed", 0, "Seed of the sample, head, dropout, order.")
flags.DEFINE_bool("summarize", False, "Print (and write) the summary.")
flags.DEFINE_integer("threads", None, "Threads of each side (task default).")
flags.DEFINE_integer("limit_train", None, "Train on the first N (a budget).")
flags.DEFINE_integer("limit_eval", None, "Smoke runs: score the first N.")
flags.DEFINE_integer("max_steps", None, "Smoke runs: stop after N steps.")
flags.DEFINE_integer("epochs", None, "Epochs (default: the task's).")
flags.DEFINE_float("learning_rate", None, "Peak rate (default: the task's).")
flags.DEFINE_string("data_dir", None, "Built data (default under runs_dir).")
flags.DEFINE_string("runs_dir", None, "Runs; default /tmp/task_race/TASK.")
flags.DEFINE_string("records_dir", None, "Default benchmarks/<task folder>.")
# === One task's ===
flags.DEFINE_integer("train_questions", 1000, "multiple_choice: train.")
flags.DEFINE_integer("dev_questions", 600, "multiple_choice: dev (0: all).")
flags.DEFINE_bool(
    "group_by_length",
    True,
    "multi_label keras_bert: like-length batches (the recipe's default).",
)
flags.DEFINE_integer("max_windows", None, "long_documents: windows a page.")
flags.DEFINE_integer(
    "window_batch_pages", None, "long_documents: pages a windows batch."
)
# Not passed on to the workers.
DRIVER_FLAGS = ("task", "contestant", "contestants", "summarize")


def records_dir(task):
    """`--records_dir`, else the task's folder, or for a smoke run (a
    limit on the scoring or the steps) its runs directory."""
    if FLAGS.records_dir or not (FLAGS.limit_eval or FLAGS.max_steps):
        return FLAGS.records_dir or os.path.join(
            common.REPO, "benchmarks", task.RECORDS
        )
    return tasks.run_dir("")


def passed_flags():
    """`--name=value` of every flag the command line set, but the
    driver's own: what each worker gets."""
    return common.flag_values(
        *(n for n in FLAGS if FLAGS[n].present and n not in DRIVER_FLAGS)
    )


def run_one(task, contestant):
    """Runs one contestant here; writes its record."""
    context = common.job_context()
    record = task.run(contestant)
    record = dict(
        context, race_command=context["command"], task=FLAGS.task,
        contestant=contestant, seed=FLAGS.seed, **record,
    )  # fmt: skip
    directory = records_dir(task)
    path = os.path.join(directory, f"{task.record_name(contestant)}.json")
    common.write_record(path, record)
    print(f"{contestant}: record {path}")


def drive(task):
    """Every contestant in its own process, then the summary."""
    commands = {
        contestant: common.script_command(
            __file__,
            f"--task={FLAGS.task}",
            f"--contestant={contestant}",
            *passed_flags(),
        )  # fmt: skip
        for contestant in FLAGS.contestants or task.CONTESTANTS
    }
    for command in commands.values():
        recipe.run(command)
    summarize(task)


def summarize(task):
    records = [  # of this task (records before the harness: one a folder)
        r
        for r in common.read_records(records_dir(task))
        if r.get("task", FLAGS.task) == FLAGS.task
    ]
    if not records:
        raise SystemExit(f"No records in {records_dir(task)}.")
    text = task.summarize(records)
    section = FLAGS.results_section or getattr(task, "SECTION", None)
    common.publish(section, text)


def main(argv):
    del argv
    task = importlib.import_module(f"benchmarks.tasks.{FLAGS.task}")
    if FLAGS.summarize:
        return summarize(task)
    if FLAGS.contestant:
        if FLAGS.contestant not in task.CONTESTANTS:
            raise app.UsageError(
                f"--task={FLAGS.task} has contestants {task.CONTESTANTS}; "
                f"received --contestant={FLAGS.contestant}."
            )
        return run_one(task, FLAGS.contestant)
    return drive(task)


if __name__ == "__main__":
    flags.mark_flag_as_required("task")
    app.run(main)
