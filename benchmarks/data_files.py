"""What `recipes/classify.py` does with each kind of user file, and how soon.

Writes, in a temporary directory, `--rows` SST-2 training rows (read from
GLUE's `SST-2/train.tsv` at run time, never stored in the repository) as
JSONL, TSV, CSV (SST-2's sentences hold commas, so cells are quoted), TSV
with a UTF-8 byte-order mark, a TSV saved as Latin-1 (not UTF-8), and
uses GLUE's own `SST-2/dev.tsv` with `--text_column=sentence` and without
it (a wrong column). Each runs the recipe (bert_tiny, random weights, a
word vocabulary of the rows, no eval file: 10% held out) until training
starts (Keras' `Epoch 1/2` line, once the model is built and compiled:
then it is stopped) or exits: what happened, seconds from the start.

    python benchmarks/data_files.py [--glue_dir=/work/shared/glue] [--rows=300]
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# The shared data beside the repository (../shared/glue).
SHARED_GLUE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "..",
    "shared",
    "glue",
)


def sst2_rows(glue_dir, count):
    with open(os.path.join(glue_dir, "SST-2", "train.tsv"), newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        return [(text, label) for text, label in list(reader)[:count]]


def write_files(directory, rows):
    def path(name):
        return os.path.join(directory, name)

    tsv = "text\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in rows)
    quoted = io.StringIO()
    csv.writer(quoted, lineterminator="\n").writerows(
        [("text", "label")] + rows
    )
    contents = {
        "train.jsonl": "".join(
            json.dumps({"text": t, "label": label}) + "\n" for t, label in rows
        ).encode(),
        "train.tsv": tsv.encode(),
        "train.csv": quoted.getvalue().encode(),
        "bom.tsv": b"\xef\xbb\xbf" + tsv.encode(),
        "latin1.tsv": tsv.encode("latin-1"),  # SST-2 has a few "é"
    }
    for name, data in contents.items():
        with open(path(name), "wb") as file:
            file.write(data)
    words = sorted({w for t, _ in rows for w in t.lower().split()})
    with open(path("vocab.txt"), "w") as file:
        file.write("\n".join(SPECIAL + words) + "\n")
    return path


def run(flags, model_dir):
    command = [
        sys.executable, os.path.join(ROOT, "recipes", "classify.py"),
        "--preset=bert_tiny", "--max_seq_length=64", "--epochs=2",
        f"--model_dir={model_dir}", *flags,
    ]  # fmt: skip
    start = time.monotonic()
    process = subprocess.Popen(
        command, cwd=ROOT, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("Epoch 1/"):
            seconds = time.monotonic() - start
            process.kill()
            process.wait()
            return "trains", seconds
    process.wait()
    seconds = time.monotonic() - start
    errors = [line for line in lines if line.startswith("error: ")]
    return (errors[-1] if errors else f"exit {process.returncode}"), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--glue_dir", default=SHARED_GLUE)
    parser.add_argument("--rows", type=int, default=300)
    args = parser.parse_args()
    dev = os.path.join(args.glue_dir, "SST-2", "dev.tsv")
    with tempfile.TemporaryDirectory() as directory:
        path = write_files(directory, sst2_rows(args.glue_dir, args.rows))
        vocabulary = f"--vocabulary={path('vocab.txt')}"
        cases = [
            ("JSONL", [f"--train_file={path('train.jsonl')}"]),
            ("TSV", [f"--train_file={path('train.tsv')}"]),
            ("CSV, quoted cells", [f"--train_file={path('train.csv')}"]),
            ("TSV with a UTF-8 BOM", [f"--train_file={path('bom.tsv')}"]),
            ("SST-2/dev.tsv --text_column=sentence",
             [f"--train_file={dev}", "--text_column=sentence"]),
            ("TSV saved as Latin-1", [f"--train_file={path('latin1.tsv')}"]),
            ("SST-2/dev.tsv, no --text_column", [f"--train_file={dev}"]),
            ("(no run: --helpshort, the imports alone)", ["--helpshort"]),
        ]  # fmt: skip
        print("| file | what `recipes/classify.py` does | seconds |")
        print("|---|---|---|")
        for number, (name, flags) in enumerate(cases):
            model_dir = os.path.join(directory, f"run{number}")
            outcome, seconds = run([vocabulary, *flags], model_dir)
            outcome = outcome.replace(directory, "$TMP").replace("|", "\\|")
            print(f"| {name} | {outcome} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
