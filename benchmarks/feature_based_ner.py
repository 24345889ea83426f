"""The BERT paper's Table 7 on our weights: feature-based NER vs fine-tuning.

Devlin et al. (2019), 5.3: CoNLL-2003 NER with BERT's hidden states as
frozen features for a two-layer BiLSTM tagger, next to fine-tuning the
whole model; here with all-MiniLM-L6-v2, every row (`ROWS`) a run of
`recipes/ner.py`: `fine_tuning` as it is, the others with
`--features=<row>` (the backbone frozen, `FrozenFeaturesTagger` trained on
features computed per batch). The same budget for every row
(`--limit_train` sentences of CoNLL-2003 train, `--epochs`); each row's
best epoch by entity F1 on CoNLL-2003 validation.

    python benchmarks/feature_based_ner.py --row=fine_tuning  # ... each row
    python benchmarks/feature_based_ner.py --all        # every row in turn
    python benchmarks/feature_based_ner.py --summarize

Each row's record lands in benchmarks/feature_based_ner/ (its run in
/tmp/feature_based_ner/<row>); `--summarize` writes the table into
docs/embeddings.md and benchmarks/RESULTS.md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

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
SETTINGS = dict(
    sequence_length=128, stride=63, batch_size=32, warmup_fraction=0.1,
    seed=0, group_by_length=True, fine_tuning_learning_rate=5e-5,
    features_learning_rate=1e-3,
)  # fmt: skip
RECIPE_FLAGS = "sequence_length stride group_by_length batch_size"
RECIPE_FLAGS = (RECIPE_FLAGS + " warmup_fraction seed").split()
SECTION = "Feature-based NER (BERT paper, Table 7)"
DOCS = os.path.join(common.REPO, "docs", "embeddings.md")

FLAGS = flags.FLAGS
flags.DEFINE_enum("row", None, list(ROWS), "One row to run.")
flags.DEFINE_bool("all", False, "Run every row, one after the other.")
flags.DEFINE_bool("summarize", False, "Write the table from the records.")
flags.DEFINE_integer("limit_train", 4000, "The budget: first N sentences.")
flags.DEFINE_integer("epochs", 2, "The budget: epochs (every row).")
flags.DEFINE_integer("limit_eval", None, "Smoke runs: first N sentences.")
flags.DEFINE_string("run_dir", "/tmp/feature_based_ner", "Runs go below.")
flags.DEFINE_string(
    "output_dir",
    os.path.join(common.REPO, "benchmarks", "feature_based_ner"),
    "Where each row's record goes.",
)
flags.DEFINE_string("docs_file", DOCS, "--summarize: the table goes here too.")


def run_row(row):
    """Runs `recipes/ner.py` for one row; writes and returns its record."""
    run_dir = os.path.join(FLAGS.run_dir, row)
    conll = os.path.join(common.SHARED, "conll2003")
    data = os.path.join(FLAGS.run_dir, "data")
    fine_tuning = row == "fine_tuning"
    learning_rate = SETTINGS[
        "fine_tuning_learning_rate" if fine_tuning else "features_learning_rate"
    ]
    train = common.first_sentences(
        f"{conll}/train.txt", FLAGS.limit_train, data
    )
    valid = common.first_sentences(f"{conll}/valid.txt", FLAGS.limit_eval, data)
    command = recipe.command(
        "ner", train_file=train, validation_file=valid,
        init_checkpoint=common.minilm_dir(), model_dir=run_dir,
        learning_rate=learning_rate, epochs=FLAGS.epochs,
        **{k: SETTINGS[k] for k in RECIPE_FLAGS},
        **({} if fine_tuning else {"features": row}),
    )  # fmt: skip
    load_before = os.getloadavg()
    wall_seconds, cpu_seconds = recipe.run(command)
    results = common.read_record(os.path.join(run_dir, "results.json"))
    record = {
        "row": row,
        "method": ROWS[row][0],
        "metrics": results["metrics"]["validation"],
        "best_epoch": results["best_epoch"],
        "epochs": results["epochs"],
        "num_train_windows": results["num_train_examples"],
        "num_sentences": results["num_sentences"],
        "trainable_parameters": results["trainable_parameters"],
        "learning_rate": learning_rate,
        "limit_train": FLAGS.limit_train,
        "limit_eval": FLAGS.limit_eval,
        "num_epochs": FLAGS.epochs,
        "settings": SETTINGS,
        "wall_seconds": wall_seconds,
        "process_cpu_seconds": cpu_seconds,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "machine": common.machine_description(),
        "commit": common.git_commit(),
        "command": command,
    }
    common.write_record(os.path.join(FLAGS.output_dir, f"{row}.json"), record)
    print(f"{row}: validation F1 {100 * record['metrics']['f1']:.2f}")
    return record


def table():
    """The Markdown section: the table and how it was made."""
    records = {r["row"]: r for r in common.read_records(FLAGS.output_dir)}
    if not records:
        raise SystemExit(f"No records in {FLAGS.output_dir}: run rows first.")
    budgets = {
        (r["limit_train"], r["num_epochs"], r["num_train_windows"])
        for r in records.values()
    }
    if len(budgets) != 1:
        raise SystemExit(
            f"The records in {FLAGS.output_dir} have different budgets "
            f"{budgets}: rerun the rows with the same --limit_train and "
            "--epochs."
        )
    ((limit_train, epochs, windows),) = budgets
    machine = next(iter(records.values()))["machine"]
    lines = [
        "| method | dev F1 | precision | recall | best epoch "
        "| trainable parameters | minutes | BERT-base dev F1 (paper) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row, (method, paper) in ROWS.items():
        if row not in records:
            lines.append(f"| {method} | not run | | | | | | |")
            continue
        r, m = records[row], records[row]["metrics"]
        lines.append(
            f"| {method} | **{100 * m['f1']:.1f}** "
            f"| {100 * m['precision']:.1f} | {100 * m['recall']:.1f} "
            f"| {r['best_epoch']} | {r['trainable_parameters']:,} "
            f"| {r['wall_seconds'] / 60:.1f} | {paper} |"
        )
    ran = [row for row in ROWS if row in records]
    loads = {
        row: (
            records[row]["load_average_before"][0],
            records[row]["load_average_after"][0],
        )
        for row in ran
    }
    steps = epochs * -(-windows // SETTINGS["batch_size"])
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
            "seed 0 (one seed: the spread between seeds is not measured "
            "here); entity F1 (`conlleval`) on all "
            f"{records[ran[0]]['num_sentences']['validation']:,} validation "
            "sentences, best epoch. Features are computed on the fly every "
            "batch by the frozen backbone (no cache). Printed by `python "
            "benchmarks/feature_based_ner.py --summarize` from the records "
            "`--row=ROW` writes (benchmarks/feature_based_ner/); the "
            "paper's column is BERT-base with the whole training set, for "
            "the shape, not a like-for-like comparison.",
            "",
            *lines,
            "",
            *comparison(records),
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


def comparison(records):
    """Sentences computed from the records: the gaps to fine-tuning."""
    features = [row for row in ROWS if row in records and row != "fine_tuning"]
    if "fine_tuning" not in records or not features:
        return []

    def f1(row):
        return 100 * records[row]["metrics"]["f1"]

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


def main(argv):
    del argv
    if not (FLAGS.row or FLAGS.all or FLAGS.summarize):
        raise app.UsageError("Pass --row=ROW, --all or --summarize.")
    for row in list(ROWS) if FLAGS.all else [FLAGS.row] * bool(FLAGS.row):
        run_row(row)
    if FLAGS.summarize:
        common.update_results(SECTION, table(), path=FLAGS.docs_file)
        common.publish(SECTION, table())


if __name__ == "__main__":
    app.run(main)
