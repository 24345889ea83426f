"""benchmarks/finetune_job.py --race=lora: its table."""

from benchmarks import common
from benchmarks.finetune.jobs import RACES


def lora_summary(records):
    import numpy as np

    rows = []
    for name in RACES["lora"][1].split():
        runs = [records[k] for k in sorted(records) if k[0] == name]
        if runs:
            first, seeds = runs[0], common.listed(r["seed"] for r in runs)
            accuracies = [r["dev_accuracy"] for r in runs]
            speeds = [r["train_examples_per_second"] for r in runs]
            rows.append(
                [name, first["lora_rank"] or "-", f"{first['learning_rate']:g}"]
                + [f"{first['trainable_parameters']:,}"]
                + [
                    f"{np.mean(accuracies):.4f} (seeds {seeds}: "
                    f"{common.listed(accuracies, '{:.4f}')})",
                    f"{np.median(speeds):.1f} "
                    f"({common.listed(speeds, '{:.1f}')})",
                ]
            )
    _, *context = common.context_note(records)
    examples = next(iter(records.values()))["num_train_examples"]
    return [
        "LoRA against full fine-tuning, SST-2 through `recipes/glue.py` "
        "(`python benchmarks/finetune_job.py --race=lora`): all-MiniLM-L6-v2, "
        f"{examples} training examples, sequence 128, batch 32, 1 epoch, 10% "
        "warmup; each job a fresh process, the configurations alternating "
        "(round k: seed k). Only `--lora_rank` and `--learning_rate` differ. "
        "Examples/s: training examples over the epoch's training wall time.",
        *context,
        "",
        *common.table(
            ["configuration", "LoRA rank", "learning rate"]
            + ["trainable parameters", "SST-2 dev accuracy, mean (each seed)"]
            + ["training examples/s, median (each seed)"],
            rows,
        ),
    ]
