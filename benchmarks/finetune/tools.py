"""benchmarks/finetune_job.py --race=tools: its table."""

from benchmarks import common
from benchmarks.finetune.jobs import RACES

# Who each contestant is paired with in the ratios: the recipe at its
# precision.
PAIRED_WITH = {"torch_grouped_bf16": "recipe_bf16"}


def tools_summary(records):
    import numpy as np

    keys = "train_examples_per_second train_seconds eval_seconds total_seconds"
    keys = keys.split()
    rows, ratios = [], []
    paired = []
    for name in RACES["tools"][1].split():
        reference = PAIRED_WITH.get(name, "recipe")
        paired += [
            (reference, *p)
            for p in common.paired_values(records, reference, [name])
        ]
    for reference, contestant, rounds, values in paired:
        accuracy = values(contestant, "dev_accuracy")
        spread = np.std(accuracy, ddof=1) if len(accuracy) > 1 else 0.0
        medians = [f"{np.median(values(contestant, k)):.1f}" for k in keys]
        rows.append(
            [contestant, common.listed(rounds), *medians]
            + [f"{np.mean(accuracy):.4f} ± {spread:.4f}"]
            + [common.listed(accuracy, "{:.4f}")]
        )
        if contestant != reference:
            train = values(reference, keys[0]) / values(contestant, keys[0])
            total = values(contestant, keys[3]) / values(reference, keys[3])
            each = "; ".join(f"{a:.2f}, {b:.2f}" for a, b in zip(train, total))
            ratios.append(
                [contestant, reference, common.listed(rounds)]
                + [f"{np.median(train):.2f}", f"{np.median(total):.2f}", each]
            )
    commands, *context = common.context_note(records)
    first = records[("recipe", min(r for _, r in records))]
    ran = [name for _, name, *_ in paired]
    notes = {
        "keras_hub": "The goal's peers are keras_hub and hf_trainer (each "
        "tool's defaults); hf_trainer_grouped changes only the Trainer's "
        "batching.",
        "keras_hub_xla": "keras_hub_xla changes only keras-hub's "
        "`jit_compile` (True).",
        "torch_grouped": "torch_grouped is a plain PyTorch loop on the "
        "Trainer's length-grouped batches with the recipe's settings (issue "
        "38's peer: goal ≥1.3× in total job time).",
        "recipe_eigen": "recipe_eigen is the recipe on Eigen's kernels "
        "(TF_ENABLE_ONEDNN_OPTS=0, TensorFlow's default on an AVX2-only CPU, "
        "where the recipe's own default is oneDNN).",
        "torch_grouped_bf16": "recipe_bf16 and torch_grouped_bf16 are the "
        "two with bfloat16 compute (Keras' mixed_bfloat16; torch.autocast), "
        "compared with each other.",
    }
    if "hf_trainer" in ran:
        ran.append("keras_hub")
    return [
        "The whole SST-2 fine-tuning job, TSV files to dev accuracy "
        f"({commands}; see the script's docstring for what each contestant "
        f"runs): MiniLM-L6-H384, {first['num_train_examples']} training "
        "examples, sequence 128, batch 32, lr 2e-5, 1 epoch; medians over the "
        "rounds each row names, each round alternating its contestants "
        "(round k: seed k for every contestant), each job a fresh process; "
        "each peer is paired with the recipe's job of the same round. "
        + " ".join(note for name, note in notes.items() if name in ran),
        *context,
        "",
        *common.table(
            ["contestant", "rounds", "training examples/s", "training (s)"]
            + ["evaluation (s)", "total job (s)", "dev accuracy, mean ± std"]
            + ["dev accuracy (each round's seed)"],
            rows,
        ),
        "\nPaired ratios to the recipe (per round, the same seed; >1: the "
        "recipe is faster; a bfloat16 peer is paired with recipe_bf16):\n",
        *common.table(
            ["contestant", "paired with", "rounds"]
            + ["training examples/s (ours / peer)"]
            + ["total job time (peer / ours)", "per round (training; total)"],
            ratios,
        ),
    ]
