"""Tabulates `recipes/glue.py` runs: mean, spread and each seed per task.

    python benchmarks/glue_scores.py RUNS_DIR

RUNS_DIR holds one `--model_dir` per run, named `<task>_seed<N>` (each with
its `results.json`). Prints a Markdown table: for each task and metric the
mean ± sample standard deviation over the seeds, the min–max range, each
seed's value, and the median wall time.
"""

import glob
import json
import os
import re
import statistics
import sys

ORDER = ["sst2", "stsb", "rte", "cola", "mrpc", "qqp", "mnli", "qnli", "wnli"]
NAMES = {
    "sst2": "SST-2",
    "stsb": "STS-B",
    "rte": "RTE",
    "cola": "CoLA",
    "mrpc": "MRPC",
    "qqp": "QQP",
    "mnli": "MNLI",
    "qnli": "QNLI",
    "wnli": "WNLI",
}


def load_runs(runs_dir):
    """{task: {seed: results}} from RUNS_DIR/<task>_seed<N>/results.json."""
    runs = {}
    for path in glob.glob(os.path.join(runs_dir, "*_seed*", "results.json")):
        name = os.path.basename(os.path.dirname(path))
        match = re.fullmatch(r"(\w+?)_seed(\d+)", name)
        if not match:
            continue
        with open(path) as f:
            runs.setdefault(match.group(1), {})[int(match.group(2))] = (
                json.load(f)
            )
    return runs


def table(runs):
    lines = [
        "| task | eval split | metric | mean ± std | range | seeds (0, 1, 2, …) | median wall time |",
        "|---|---|---|---|---|---|---|",
    ]
    for task in sorted(
        runs, key=lambda t: ORDER.index(t) if t in ORDER else 99
    ):
        seeds = sorted(runs[task])
        first = runs[task][seeds[0]]
        minutes = statistics.median(
            runs[task][s]["wall_time_seconds"] / 60 for s in seeds
        )
        for split, metrics in first["metrics"].items():
            for metric in metrics:
                values = [
                    100 * runs[task][s]["metrics"][split][metric] for s in seeds
                ]
                spread = statistics.stdev(values) if len(values) > 1 else 0.0
                lines.append(
                    f"| {NAMES.get(task, task)} | {split} | {metric} "
                    f"| {statistics.mean(values):.1f} ± {spread:.1f} "
                    f"| {min(values):.1f}–{max(values):.1f} "
                    f"| {', '.join(f'{v:.1f}' for v in values)} "
                    f"| {minutes:.0f} min |"
                )
    return "\n".join(lines)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    runs = load_runs(argv[1])
    if not runs:
        sys.exit(f"No <task>_seed<N>/results.json under {argv[1]!r}.")
    print(table(runs))


if __name__ == "__main__":
    main(sys.argv)
