"""benchmarks/glue_scores.py prints the scores table docs/glue.md shows."""

import json
import os

from benchmarks import glue_scores


def _write_run(runs_dir, name, monitor, epochs, best, wall_seconds):
    os.makedirs(os.path.join(runs_dir, name))
    results = {
        "monitor": monitor,
        "metrics": epochs[best]["metrics"],
        "epochs": epochs,
        "wall_time_seconds": wall_seconds,
    }
    with open(os.path.join(runs_dir, name, "results.json"), "w") as f:
        json.dump(results, f)


def _epoch(split, **metrics):
    return {"metrics": {split: metrics}}


def test_table_and_epoch_scores(tmp_path, capsys):
    runs = str(tmp_path)
    for seed, accuracies in enumerate([(0.80, 0.85), (0.82, 0.81)]):
        epochs = [_epoch("validation", accuracy=a) for a in accuracies]
        best = accuracies.index(max(accuracies))
        _write_run(
            runs, f"sst2_seed{seed}", "validation/accuracy", epochs, best, 600
        )
    for seed, f1 in enumerate([0.9, 0.8]):
        epochs = [_epoch("holdout", f1=f1, accuracy=None)]
        _write_run(runs, f"mrpc_seed{seed}", "holdout/f1", epochs, 0, 120)
    os.makedirs(os.path.join(runs, "sst2_seed_old"))  # not a run: ignored
    with open(os.path.join(runs, "sst2_seed_old", "results.json"), "w") as f:
        f.write("{}")

    glue_scores.main(["glue_scores.py", runs])
    table, epochs = capsys.readouterr().out.strip().split("\n\n")
    assert table.splitlines() == [
        "| task | metric | mean ± std (2 seeds) | seeds 0, 1 | MiniLM-L6-H384"
        " reported (full GLUE train) | wall time per run (median) |",
        "|---|---|---|---|---|---|",
        "| SST-2 | accuracy | 83.5 ± 2.1 | 85.0, 82.0 | 91.5 | 10 min |",
        "| MRPC | F1 / accuracy (holdout) | 85.0 ± 7.1 / – | 90.0, 80.0 / –, –"
        " | 88.9 (F1, GLUE dev) | 2 min |",
    ]
    assert epochs == (
        "Dev score after each epoch (seeds 0/1, epochs 1/2): "
        "SST-2 80.0/85.0; 82.0/81.0; MRPC F1 (holdout) 90.0; 80.0."
    )
