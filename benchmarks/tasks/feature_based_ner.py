"""The BERT paper's Table 7 on our weights: feature-based NER vs fine-tuning.

Devlin et al. (2019), 5.3: CoNLL-2003 NER with BERT's hidden states as
frozen features for a two-layer BiLSTM tagger, next to fine-tuning the
whole model; here all-MiniLM-L6-v2, each row (`ROWS`, the contestants) a
run of `recipes/ner.py`: `fine_tuning` as it is, the others with
`--features=<row>` (the backbone frozen, `FrozenFeaturesTagger` trained on
features computed per batch). The same budget for every row
(`--limit_train` sentences of CoNLL-2003 train, default 4,000;
`--epochs`, default 2); each row's best epoch by entity F1 on CoNLL-2003
validation. The summary goes to RESULTS.md and docs/embeddings.md.
"""

import os
import statistics

from benchmarks import common
from benchmarks.contestants import recipe
from benchmarks.tasks import FLAGS
from benchmarks.tasks import run_dir

# Table 7's rows, in its order: how each is named, and BERT-base's
# CoNLL-2003 dev F1 in the paper.
ROWS = {
    "fine_tuning": ("Fine-tuning (every weight; BertTokenClassifier)", 96.4),
    "embeddings": ("Feature-based: embeddings only", 91.0),
    "second_to_last": ("Feature-based: second-to-last hidden", 95.6),
    "last": ("Feature-based: last hidden", 94.9),
    "weighted_sum_all": (
        "Feature-based: weighted sum of all 7 (embeddings + 6 blocks; "
        "learned softmax weights)",
        95.5,
    ),
    "sum_last_four": (
        "Feature-based: sum of last four hidden (the paper's row weights them)",
        95.9,
    ),
    "concat_last_four": ("Feature-based: concat last four hidden", 96.1),
}
CONTESTANTS = tuple(ROWS)
RECORDS = "feature_based_ner"
SETTINGS = dict(
    sequence_length=128, stride=63, batch_size=32, warmup_fraction=0.1,
    seed=0, group_by_length=True, fine_tuning_learning_rate=5e-5,
    features_learning_rate=1e-3,
)  # fmt: skip
RECIPE_FLAGS = "sequence_length stride group_by_length batch_size"
RECIPE_FLAGS = (RECIPE_FLAGS + " warmup_fraction seed").split()
SECTION = "Feature-based NER (BERT paper, Table 7)"
DOCS = os.path.join(common.REPO, "docs", "embeddings.md")


def record_name(row):
    return f"{row}_seed{FLAGS.seed}"


def run(row):
    """Runs `recipes/ner.py` for one row; returns its record."""
    settings = dict(SETTINGS, seed=FLAGS.seed)
    directory = run_dir(record_name(row))
    conll, data = os.path.join(common.SHARED, "conll2003"), run_dir("data")
    fine_tuning = row == "fine_tuning"
    learning_rate = settings[
        "fine_tuning_learning_rate" if fine_tuning else "features_learning_rate"
    ]
    limit_train, epochs = FLAGS.limit_train or 4000, FLAGS.epochs or 2
    train = common.first_sentences(f"{conll}/train.txt", limit_train, data)
    valid = common.first_sentences(f"{conll}/valid.txt", FLAGS.limit_eval, data)
    command = recipe.command(
        "ner", train_file=train, validation_file=valid,
        init_checkpoint=common.minilm_dir(), model_dir=directory,
        learning_rate=learning_rate, epochs=epochs,
        **{k: settings[k] for k in RECIPE_FLAGS},
        **({} if fine_tuning else {"features": row}),
    )  # fmt: skip
    load_before = os.getloadavg()
    wall_seconds, cpu_seconds = recipe.run(command)
    results = common.read_record(os.path.join(directory, "results.json"))
    print(
        f"{row}: validation F1 {100 * results['metrics']['validation']['f1']:.2f}"
    )
    return {
        "row": row,
        "method": ROWS[row][0],
        "metrics": results["metrics"]["validation"],
        "best_epoch": results["best_epoch"],
        "epochs": results["epochs"],
        "num_train_windows": results["num_train_examples"],
        "num_sentences": results["num_sentences"],
        "trainable_parameters": results["trainable_parameters"],
        "learning_rate": learning_rate,
        "limit_train": limit_train,
        "limit_eval": FLAGS.limit_eval,
        "num_epochs": epochs,
        "settings": settings,
        "wall_seconds": wall_seconds,
        "process_cpu_seconds": cpu_seconds,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "command": command,
    }


def summarize(records):
    """The Markdown section: the table and how it was made."""
    runs = common.by_seed(records, lambda r: r["row"])
    records = [r for seeded in runs.values() for r in seeded.values()]
    budgets = {
        (r["limit_train"], r["num_epochs"], r["num_train_windows"])
        for r in records
    }
    if len(budgets) != 1:
        raise SystemExit(
            f"The records have different budgets {budgets}: rerun the rows "
            "with the same --limit_train and --epochs."
        )
    ((limit_train, epochs, windows),) = budgets
    seeds = sorted({s for seeded in runs.values() for s in seeded})
    machine = records[0]["machine"]
    lines = [
        "| method | dev F1 | precision | recall | best epoch "
        "| trainable parameters | minutes | BERT-base dev F1 (paper) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row, (method, paper) in ROWS.items():
        if row not in runs:
            lines.append(f"| {method} | not run | | | | | | |")
            continue
        lines += common.seed_rows(
            method, runs[row],
            lambda r: [
                (100 * r["metrics"]["f1"], "**{:.1f}**"),
                (100 * r["metrics"]["precision"], "{:.1f}"),
                (100 * r["metrics"]["recall"], "{:.1f}"),
                (r["best_epoch"], "{:g}"), (r["trainable_parameters"], "{:,.0f}"),
                (r["wall_seconds"] / 60, "{:.1f}"), (paper, None),
            ],
        )  # fmt: skip
    loads = {
        f"{row}{f' seed {s}' * (len(seeds) > 1)}": (
            r["load_average_before"][0], r["load_average_after"][0],
        )
        for row in ROWS if row in runs for s, r in sorted(runs[row].items())
    }  # fmt: skip
    steps = epochs * -(-windows // SETTINGS["batch_size"])
    seed_text = (
        "seed 0 (one seed: the spread between seeds is not measured here)"
        if seeds == [0]
        else f"seeds {common.listed(seeds)} (a row each, then their mean ± sd)"
    )
    printer = "benchmarks/task_race.py --task=feature_based_ner --summarize"
    writer = "--task=feature_based_ner --contestant=ROW"
    if "race_command" not in records[0]:  # records from before the harness
        printer, writer = (
            "benchmarks/feature_based_ner.py --summarize",
            "--row=ROW",
        )
    return "\n".join(
        [
            f"## {SECTION}",
            "",
            "The feature-based approach of the BERT paper (section 5.3, "
            'Table 7) on all-MiniLM-L6-v2 (6 layers, hidden 384; "all" is '
            "the embedding output and the 6 blocks). Feature-based rows: "
            "the backbone frozen, `recipes/ner.py --features=ROW` trains "
            "`keras_bert.models.FrozenFeaturesTagger` (two BiLSTM "
            "layers of 192 units per direction, dropout 0.1, learning rate "
            f"{SETTINGS['features_learning_rate']:g}); fine-tuning: "
            "`recipes/ner.py` as it is (learning rate "
            f"{SETTINGS['fine_tuning_learning_rate']:g}). The same budget "
            f"for every row: the first {limit_train:,} sentences of "
            f"CoNLL-2003 train ({windows:,} windows), {epochs} epochs "
            f"({steps} updates), batch 32, warmup 10% then linear decay, "
            f"{seed_text}; entity F1 (`conlleval`) on all "
            f"{records[0]['num_sentences']['validation']:,} validation "
            "sentences, best epoch. Features are computed on the fly every "
            "batch by the frozen backbone (no cache). Printed by `python "
            f"{printer}` from the records `{writer}` writes "
            "(benchmarks/feature_based_ner/); the "
            "paper's column is BERT-base with the whole training set, for "
            "the shape, not a like-for-like comparison.",
            "",
            *lines,
            "",
            *comparison(runs),
            "",
            f"Minutes: each row's whole recipe run on {machine.split(';')[0]}"
            " (1-minute load average before-after each run: "
            + ", ".join(
                f"{row} {a:.1f}-{b:.1f}" for row, (a, b) in loads.items()
            )
            + "): "
            + common.load_note(
                sum(loads.values(), ()), common.cores(machine), paired=False
            ),
        ]
    )


def comparison(runs):
    """Sentences computed from the records (means over seeds): the gaps
    to fine-tuning."""
    features = [row for row in ROWS if row in runs and row != "fine_tuning"]
    if "fine_tuning" not in runs or not features:
        return []

    def f1(row):
        return statistics.mean(
            100 * r["metrics"]["f1"] for r in runs[row].values()
        )

    best = max(features, key=f1)
    gap = f1("fine_tuning") - f1(best)
    paper_gap = ROWS["fine_tuning"][1] - ROWS[best][1]
    sentences = [
        f"Best feature-based row: {ROWS[best][0]}, {f1(best):.1f}; fine-tuning "
        f"minus it: {gap:+.1f} points (the paper's: {paper_gap:+.1f}, with "
        "the whole training set)."
    ]
    if "last" in features:
        others = ", ".join(
            f"{row} {f1(row) - f1('last'):+.1f}"
            for row in features
            if row != "last"
        )
        sentences.append(f"Against the last hidden layer alone: {others}.")
    return sentences
