"""LoRA against full fine-tuning: SST-2 with `recipes/glue.py`, one table.

Every configuration is the GLUE recipe on SST-2 (`../shared/glue`) from the
real all-MiniLM-L6-v2 weights with the same settings (sequence length 128,
batch 32, 1 epoch, 10% warmup, length-grouped batches); they differ only
in what trains and the learning rate:

  full         every weight trains at 2e-5 (BERT's fine-tuning rate).
  lora         `--lora_rank=8 --learning_rate=5e-4`: the backbone frozen,
               rank-8 LoRA on every block's q|k|v and the head train; 5e-4
               is the LoRA paper's SST-2 rate at rank 8 (Hu et al., 2021,
               table 9, RoBERTa-base).
  lora_lr1e-3  the same at 1e-3.

Each job is a fresh process, the configurations alternating (round k: seed
k). Reported: trainable parameters (from the run's `results.json`), dev
accuracy, training examples/s (over the epoch's training wall time).

    python benchmarks/lora_finetune.py --rounds=2   # runs and summarizes
    python benchmarks/lora_finetune.py --contestants=lora_lr1e-3
    python benchmarks/lora_finetune.py --summarize  # table from the JSONs

Writes `benchmarks/lora_finetune/<configuration>_round<k>.json` and the
"lora_finetune" section of benchmarks/RESULTS.md.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

# Only these differ between the configurations.
CONFIGURATIONS = {
    "full": {"lora_rank": 0, "learning_rate": 2e-5},
    "lora": {"lora_rank": 8, "learning_rate": 5e-4},
    "lora_lr1e-3": {"lora_rank": 8, "learning_rate": 1e-3},
}

flags.DEFINE_integer("rounds", 1, "Rounds; each runs every configuration.")
flags.DEFINE_list("contestants", list(CONFIGURATIONS), "Configurations to run.")
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_bool("summarize", False, "Only write the table from the JSONs.")
flags.DEFINE_string(
    "glue_dir", os.path.join(common.SHARED, "glue"), "GLUE data directory."
)
flags.DEFINE_string(
    "output_dir", os.path.join(os.path.dirname(__file__), "lora_finetune"),
    "Where the round records go.",
)  # fmt: skip
FLAGS = flags.FLAGS


def run_job(configuration, round_index):
    """Runs the recipe for one configuration in a fresh process."""
    context = common.job_context()
    with tempfile.TemporaryDirectory() as model_dir:
        command = recipe.command(
            "glue",
            task="sst2",
            data_dir=FLAGS.glue_dir,
            init_checkpoint=common.minilm_dir(),
            model_dir=model_dir,
            sequence_length=128,
            batch_size=32,
            epochs=1,
            seed=round_index,
            **CONFIGURATIONS[configuration],
        )
        total = common.run_process(command)[1]
        results = common.read_record(os.path.join(model_dir, "results.json"))
    train_seconds = results["epochs"][0]["train_seconds"]
    return {
        "contestant": configuration,
        "round": round_index,
        "seed": round_index,
        **CONFIGURATIONS[configuration],
        "trainable_parameters": results["trainable_parameters"],
        "num_train_examples": results["num_train_examples"],
        "train_seconds": train_seconds,
        "train_examples_per_second": round(
            results["num_train_examples"] / train_seconds, 2
        ),
        "dev_accuracy": results["metrics"]["validation"]["accuracy"],
        "total_seconds": round(total, 1),
        **context,
    }


def summarize():
    import numpy as np

    by_name = {}
    for record in common.read_records(FLAGS.output_dir):
        by_name.setdefault(record["contestant"], []).append(record)
    rows = [
        "| configuration | LoRA rank | learning rate | trainable parameters "
        "| SST-2 dev accuracy, mean (each seed) | training examples/s, "
        "median (each seed) |",
        "|---|---|---|---|---|---|",
    ]
    for name in [name for name in CONFIGURATIONS if name in by_name]:
        records = sorted(by_name[name], key=lambda record: record["round"])
        accuracies = [r["dev_accuracy"] for r in records]
        speeds = [r["train_examples_per_second"] for r in records]
        rows.append(
            f"| {name} | {records[0]['lora_rank'] or '-'} "
            f"| {records[0]['learning_rate']:g} "
            f"| {records[0]['trainable_parameters']:,} "
            f"| {np.mean(accuracies):.4f} (seeds "
            f"{common.listed(r['seed'] for r in records)}: "
            f"{common.listed(accuracies, '{:.4f}')}) "
            f"| {np.median(speeds):.1f} ({common.listed(speeds, '{:.1f}')}) |"
        )
    records = common.by_round(sum(by_name.values(), []))
    loads = common.loads_note(records)
    header = (
        "LoRA against full fine-tuning, SST-2 through `recipes/glue.py` "
        "(`python benchmarks/lora_finetune.py`): all-MiniLM-L6-v2, "
        f"{next(iter(records.values()))['num_train_examples']} training "
        "examples, sequence 128, batch 32, 1 epoch, 10% warmup; each job a "
        "fresh process, the configurations alternating (round k: seed k). "
        "Only `--lora_rank` and `--learning_rate` differ. Examples/s: "
        "training examples over the epoch's training wall time.\n"
        + (f"{loads}\n" if loads else "")
        + common.machines_note(records.values())
    )
    table = "\n".join(rows)
    print(f"{header}\n\n{table}")
    common.update_results("lora_finetune", f"{header}\n\n{table}\n")


def main(argv):
    del argv
    if set(FLAGS.contestants) - set(CONFIGURATIONS):
        raise app.UsageError(
            f"--contestants must be among {list(CONFIGURATIONS)}. "
            f"Received: {FLAGS.contestants}"
        )
    if not FLAGS.summarize:
        common.run_rounds(
            run_job,
            tuple(FLAGS.contestants),
            FLAGS.output_dir,
            FLAGS.first_round,
            FLAGS.rounds,
        )
    summarize()


if __name__ == "__main__":
    app.run(main)
