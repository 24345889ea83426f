"""Tabulates pre-trained vs random-init GLUE runs (mean ± std over seeds;
std is the population standard deviation, numpy's default).

Usage: python glue_table.py GLUE_RUNS_DIR   (runs named TASK-INIT-SEED)
"""

import collections
import glob
import json
import os
import sys

import numpy as np


def main(directory):
    scores = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(directory, "*", "results.json"))):
        task, init, seed = os.path.basename(os.path.dirname(path)).split("-")
        with open(path) as f:
            # The one eval split: "validation", or "holdout" (MRPC here).
            (metrics,) = json.load(f)["metrics"].values()
        for metric, value in metrics.items():
            scores[(task, metric, init)].append((int(seed), value))
    rows = sorted({(task, metric) for task, metric, _ in scores})
    print("| task | metric | pre-trained | random init |")
    print("|---|---|---|---|")
    summary = {}
    for task, metric in rows:
        cells = []
        for init in ("pretrained", "random"):
            values = [v for _, v in sorted(scores[(task, metric, init)])]
            summary[f"{task}/{metric}/{init}"] = values
            if values:
                cells.append(
                    f"{np.mean(values):.3f} ± {np.std(values):.3f} "
                    f"({', '.join(f'{v:.3f}' for v in values)})"
                )
            else:
                cells.append("not run")
        print(f"| {task} | {metric} | {cells[0]} | {cells[1]} |")
    with open(os.path.join(directory, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main(*sys.argv[1:])
