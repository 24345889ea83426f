"""Tabulates `recipes/glue.py` runs: the scores table of docs/glue.md.

    python benchmarks/glue_scores.py RUNS_DIR

RUNS_DIR holds one `--model_dir` per run, named `<task>_seed<N>` (each with
its `results.json`). Prints, as docs/glue.md and README.md show them:

- a Markdown table, one row per task: its metrics (the eval split named
  when it is not GLUE's validation split), mean ± sample standard deviation
  over the seeds (best epoch of each run, in percent), each seed's value,
  MiniLM-L6-H384's published dev score (`REPORTED`) and the median wall
  time of a run;
- the monitored metric's dev score after each epoch of every run.
"""

import json
import os
import re
import statistics
import sys

import tensorflow as tf

NAMES = dict(
    sst2="SST-2", stsb="STS-B", rte="RTE", cola="CoLA", mrpc="MRPC",
    qqp="QQP", mnli="MNLI", qnli="QNLI", wnli="WNLI",
)  # fmt: skip
ORDER = list(NAMES)
METRIC_NAMES = dict(
    accuracy="accuracy", f1="F1", matthews_corrcoef="Matthews corr.",
    pearson="Pearson", spearman="Spearman",
)  # fmt: skip
# MiniLM-L6xH384's GLUE dev scores as its authors publish them (fine-tuned
# on the full GLUE training sets): microsoft/unilm, minilm/README.md,
# "Fine-tuning on NLU tasks". MRPC is F1.
REPORTED = dict(
    sst2="91.5", rte="68.8", cola="47.5", mrpc="88.9 (F1, GLUE dev)",
    mnli="83.3", qnli="90.5", qqp="90.6",
)  # fmt: skip


def load_runs(runs_dir):
    """{task: {seed: results}} from RUNS_DIR/<task>_seed<N>/results.json."""
    runs = {}
    pattern = os.path.join(runs_dir, "*_seed*", "results.json")
    for path in tf.io.gfile.glob(pattern):
        name = os.path.basename(os.path.dirname(path))
        match = re.fullmatch(r"(\w+?)_seed(\d+)", name)
        if not match:
            continue
        with tf.io.gfile.GFile(path) as f:
            runs.setdefault(match.group(1), {})[int(match.group(2))] = (
                json.load(f)
            )
    return runs


def _tasks(runs):
    return sorted(runs, key=lambda t: ORDER.index(t) if t in ORDER else 99)


def _label(split, metrics):
    label = " / ".join(METRIC_NAMES.get(m, m) for m in metrics)
    return label if split == "validation" else f"{label} ({split})"


def _percent(value):
    # None: not a number (results.json holds no NaN), e.g. the Pearson
    # correlation of constant predictions.
    return "–" if value is None else f"{100 * value:.1f}"


def table(runs):
    """The scores table: one row per task and eval split."""
    counts = {len(runs[task]) for task in runs}
    seeds_run = sorted({seed for task in runs for seed in runs[task]})
    lines = [
        f"| task | metric | mean ± std ({'/'.join(map(str, sorted(counts)))}"
        f" seeds) | seeds {', '.join(map(str, seeds_run))} | MiniLM-L6-H384 "
        "reported (full GLUE train) | wall time per run (median) |",
        "|---|---|---|---|---|---|",
    ]
    for task in _tasks(runs):
        seeds = sorted(runs[task])
        minutes = statistics.median(
            runs[task][s]["wall_time_seconds"] / 60 for s in seeds
        )
        for split, metrics in runs[task][seeds[0]]["metrics"].items():
            summaries, per_seed = [], []
            for metric in metrics:
                values = [
                    runs[task][s]["metrics"][split][metric] for s in seeds
                ]
                numbers = [100 * v for v in values if v is not None]
                spread = statistics.stdev(numbers) if len(numbers) > 1 else 0.0
                summaries.append(
                    f"{statistics.mean(numbers):.1f} ± {spread:.1f}"
                    if numbers
                    else "–"
                )
                per_seed.append(", ".join(map(_percent, values)))
            lines.append(
                f"| {NAMES.get(task, task)} | {_label(split, metrics)} "
                f"| {' / '.join(summaries)} | {' / '.join(per_seed)} "
                f"| {REPORTED.get(task, '–')} | {minutes:.0f} min |"
            )
    return "\n".join(lines)


def epoch_scores(runs):
    """The monitored metric after each epoch, every run, on one line."""
    parts = []
    for task in _tasks(runs):
        seeds = sorted(runs[task])
        split, metric = runs[task][seeds[0]]["monitor"].split("/", 1)
        label = NAMES.get(task, task)
        if metric != "accuracy" or split != "validation":
            label += f" {_label(split, [metric])}"
        runs_text = []
        for seed in seeds:
            scores = [
                _percent(epoch["metrics"][split][metric])
                for epoch in runs[task][seed]["epochs"]
            ]
            runs_text.append("/".join(scores))
        parts.append(f"{label} {'; '.join(runs_text)}")
    seeds_run = sorted({seed for task in runs for seed in runs[task]})
    epochs = max(len(r["epochs"]) for t in runs for r in runs[t].values())
    return (
        f"Dev score after each epoch (seeds {'/'.join(map(str, seeds_run))}, "
        f"epochs {'/'.join(str(e) for e in range(1, epochs + 1))}): "
        + "; ".join(parts)
        + "."
    )


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    runs = load_runs(argv[1])
    if not runs:
        sys.exit(f"No <task>_seed<N>/results.json under {argv[1]!r}.")
    print(table(runs))
    print()
    print(epoch_scores(runs))


if __name__ == "__main__":
    main(sys.argv)
