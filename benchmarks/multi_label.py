"""Multi-label classification side by side with transformers in PyTorch.

Which entity types (LOC, MISC, ORG, PER; possibly none) a CoNLL-2003
sentence mentions (`benchmarks/data_sets.py --data_set=entity_types` builds the JSONL
files outside the repository), fine-tuned from all-MiniLM-L6-v2 with a
fresh head by both contestants with the same settings (`SETTINGS`):

- keras_bert: the classify recipe's library path,
  `keras_bert.fine_tuning.classify.ClassificationFineTuning` run by
  `keras_bert.fine_tuning.run_fine_tuning` (what `recipes/classify.py
  --multi_label` runs), batches of like-length sentences;
- torch: `transformers.BertForSequenceClassification(problem_type=
  "multi_label_classification")` (its own `BCEWithLogitsLoss`), the
  texts tokenized by `transformers`' fast tokenizer, shuffled batches
  padded to their longest row, trained by the benchmarks' PyTorch loop
  (`contestants/torch_loop.py`: AdamW without decay on biases and
  LayerNorm, linear warmup and decay, clipping, as Hugging Face's
  examples train).

Both train on the same `--train_sentences` sentences (a seeded sample of
the train split), score the whole dev split after every epoch (micro F1,
macro F1, subset accuracy, threshold 0.5 on every label), and report the
epoch of best micro F1 (and the last). keras-bert's thresholds tuned on
the dev split are reported apart (optimistic: tuned and scored on the
same split).

    python benchmarks/multi_label.py                  # both, then the table
    python benchmarks/multi_label.py --contestant=torch
    python benchmarks/multi_label.py --summarize      # the table from records
    python benchmarks/multi_label.py --contestant=keras_bert --nogroup_by_length

The last is the ablation of the recipe's length-grouped batches (rows of
like length, the batches in a shuffled order: see
`keras_bert.data.length_grouped_epochs.length_grouped_order`).

Records: one JSON per contestant and seed in `--records_dir` (default
benchmarks/multi_label/).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks import data_sets  # noqa: E402
from benchmarks.contestants import torch_loop  # noqa: E402

SETTINGS = dict(
    train_sentences=4000, sequence_length=64, batch_size=32,
    learning_rate=1e-4, epochs=3, warmup_fraction=0.1, weight_decay=0.01,
    adam_beta_1=0.9, adam_beta_2=0.999, adam_epsilon=1e-6, clipnorm=1.0,
    dropout=0.1, threshold=0.5,
)  # fmt: skip
CONTESTANTS = ("keras_bert", "torch")
RECORDS = os.path.join(common.REPO, "benchmarks", "multi_label")

FLAGS = flags.FLAGS
flags.DEFINE_enum(
    "contestant", None, list(CONTESTANTS), "Run one; default: both, apart."
)
flags.DEFINE_integer("seed", 0, "Seed of the sample, head, dropout, order.")
flags.DEFINE_integer("threads", 2, "torch threads.")
flags.DEFINE_string("data_dir", "/tmp/entity_types", "Built data goes here.")
flags.DEFINE_string("runs_dir", "/tmp/multi_label_runs", "Run outputs.")
flags.DEFINE_string("records_dir", RECORDS, "One JSON per contestant.")
flags.DEFINE_bool("summarize", False, "Print the table from the records.")
flags.DEFINE_bool(
    "group_by_length",
    True,
    "keras_bert: batches of like-length sentences (the recipe's default); "
    "--nogroup_by_length records `keras_bert_ungrouped_seed<N>.json`.",
)


def data_files():
    """`(train_sample.jsonl, dev.jsonl)`: the split files built (once) and
    the seeded sample of `SETTINGS["train_sentences"]` train sentences."""
    paths = {
        split: os.path.join(FLAGS.data_dir, f"{split}.jsonl")
        for split in data_sets.SPLITS
    }
    if not all(tf.io.gfile.exists(path) for path in paths.values()):
        paths = data_sets.build(FLAGS.data_dir)
    count = SETTINGS["train_sentences"]
    sample = os.path.join(
        FLAGS.data_dir, f"train_{count}_seed{FLAGS.seed}.jsonl"
    )
    if not tf.io.gfile.exists(sample):
        with tf.io.gfile.GFile(paths["train"]) as file:
            lines = file.readlines()
        rows = np.random.default_rng(FLAGS.seed).permutation(len(lines))
        with tf.io.gfile.GFile(sample, "w") as file:
            file.write("".join(lines[i] for i in sorted(rows[:count])))
    return sample, paths["dev"]


def read_jsonl(path):
    with tf.io.gfile.GFile(path) as file:
        rows = [json.loads(line) for line in file]
    return [row["text"] for row in rows], [row["labels"] for row in rows]


def record_name(contestant):
    """`<contestant>[_ungrouped]_seed<N>`: the record's and run's name."""
    ungrouped = contestant == "keras_bert" and not FLAGS.group_by_length
    return f"{contestant}{'_ungrouped' * ungrouped}_seed{FLAGS.seed}"


def run_keras_bert(train_file, dev_file):
    import keras_bert
    from keras_bert.fine_tuning import load_task_model
    from keras_bert.fine_tuning import run_fine_tuning
    from keras_bert.fine_tuning.classify import ClassificationFineTuning

    def model_fn(job):
        model, tokenizer = load_task_model(
            keras_bert.BertClassifier,
            init_checkpoint=common.minilm_dir(),
            sequence_length=SETTINGS["sequence_length"],
            num_classes=len(job.label_names),
            label_names=job.label_names,
            multi_label=True,
            dropout=SETTINGS["dropout"],
        )
        return model, keras_bert.BertPreprocessor(
            tokenizer, SETTINGS["sequence_length"]
        )

    job = ClassificationFineTuning(
        train_file, dev_file, model_fn, multi_label=True,
        group_by_length=FLAGS.group_by_length,
    )  # fmt: skip
    start = time.perf_counter()
    result = run_fine_tuning(
        job,
        os.path.join(FLAGS.runs_dir, f"{record_name('keras_bert')}"),
        epochs=SETTINGS["epochs"],
        batch_size=SETTINGS["batch_size"],
        learning_rate=SETTINGS["learning_rate"],
        warmup_fraction=SETTINGS["warmup_fraction"],
        seed=FLAGS.seed,
        # AdamW's epsilon added after the bias correction, as PyTorch does.
        adam_epsilon_hat=False,
    ).results
    return dict(
        epochs=[
            dict(epoch=e["epoch"], **e["metrics"]["validation"])
            for e in result["epochs"]
        ],
        tuned=result["tuned_metrics"]["validation"],
        thresholds=result["thresholds"],
        label_names=result["label_names"],
        seconds=time.perf_counter() - start,
    )


def run_torch(train_file, dev_file):
    import torch
    import transformers

    from keras_bert.training.multi_label_metrics import multi_label_scores

    torch.set_num_threads(FLAGS.threads)
    train_texts, train_labels = read_jsonl(train_file)
    dev_texts, dev_labels = read_jsonl(dev_file)
    names = sorted({name for labels in train_labels for name in labels})

    def multi_hot(rows):
        return np.array(
            [[float(name in labels) for name in names] for labels in rows],
            "float32",
        )

    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    model = torch_loop.from_pretrained(
        transformers.BertForSequenceClassification, common.minilm_dir(),
        dropout=SETTINGS["dropout"], seed=FLAGS.seed, num_labels=len(names),
        problem_type="multi_label_classification",
        id2label=dict(enumerate(names)),
        label2id={name: i for i, name in enumerate(names)},
    )  # fmt: skip
    train_y, dev_y = multi_hot(train_labels), multi_hot(dev_labels)

    def batch(texts, rows):
        return tokenizer(
            [texts[i] for i in rows],
            truncation=True,
            max_length=SETTINGS["sequence_length"],
            padding="longest",
            return_tensors="pt",
        )

    def step_loss(rows):
        inputs = batch(train_texts, rows)
        return model(**inputs, labels=torch.from_numpy(train_y[rows])).loss

    def evaluate(epoch):
        outputs = torch_loop.predict(
            model,
            lambda rows: torch.sigmoid(
                model(**batch(dev_texts, rows)).logits
            ).numpy(),
            len(dev_texts),
        )
        probabilities = np.concatenate([output for _, output in outputs])
        return multi_label_scores(dev_y, probabilities, SETTINGS["threshold"])

    start = time.perf_counter()
    run = torch_loop.fine_tune(
        model, dict(SETTINGS, seed=FLAGS.seed), len(train_texts),
        lambda epoch: np.random.default_rng(
            [FLAGS.seed, epoch]
        ).permutation(len(train_texts)),
        step_loss, evaluate=evaluate, log_every=50,
    )  # fmt: skip
    keys = ("micro_f1", "macro_f1", "subset_accuracy")
    return dict(
        epochs=[
            dict(epoch=e["epoch"], **{k: e[k] for k in keys})
            for e in run["epochs"]
        ],
        label_names=names,
        seconds=time.perf_counter() - start,
    )


def run_contestant(contestant):
    train_file, dev_file = data_files()
    runner = run_keras_bert if contestant == "keras_bert" else run_torch
    record = runner(train_file, dev_file)
    best = max(record["epochs"], key=lambda e: e["micro_f1"])
    record.update(
        contestant=contestant, seed=FLAGS.seed, settings=SETTINGS,
        group_by_length=FLAGS.group_by_length,
        best_epoch=best, last_epoch=record["epochs"][-1],
        train_file=train_file, dev_file=dev_file, **common.job_context(),
    )  # fmt: skip
    path = os.path.join(FLAGS.records_dir, f"{record_name(contestant)}.json")
    common.write_record(path, record)
    print(f"{contestant}: best epoch {best}; record {path}")


def summarize():
    records = {
        c: common.read_record(
            os.path.join(FLAGS.records_dir, f"{c}_seed{FLAGS.seed}.json")
        )
        for c in CONTESTANTS
    }
    # The ablation of the recipe's length-grouped batches, when recorded.
    ungrouped = os.path.join(
        FLAGS.records_dir, f"keras_bert_ungrouped_seed{FLAGS.seed}.json"
    )
    if tf.io.gfile.exists(ungrouped):
        records["keras_bert (--nogroup_by_length)"] = common.read_record(
            ungrouped
        )
    print(
        f"Settings: {SETTINGS}, seed {FLAGS.seed}; dev: the whole CoNLL-2003 "
        "valid split.\n"
    )
    print("| contestant | epoch | micro F1 | macro F1 | subset accuracy |")
    print("|---|---|---|---|---|")
    for contestant, record in records.items():
        for which in ("best_epoch", "last_epoch"):
            e = record[which]
            print(
                f"| {contestant} ({which.replace('_', ' ')}) | {e['epoch']} "
                f"| {100 * e['micro_f1']:.2f} | {100 * e['macro_f1']:.2f} "
                f"| {100 * e['subset_accuracy']:.2f} |"
            )
    tuned = records["keras_bert"]["tuned"]
    print(
        f"| keras_bert, thresholds tuned on dev "
        f"{records['keras_bert']['thresholds']} | best "
        f"| {100 * tuned['micro_f1']:.2f} | {100 * tuned['macro_f1']:.2f} "
        f"| {100 * tuned['subset_accuracy']:.2f} |"
    )
    gap = 100 * (
        records["keras_bert"]["best_epoch"]["micro_f1"]
        - records["torch"]["best_epoch"]["micro_f1"]
    )
    print(f"\nkeras-bert − torch, micro F1 (best epochs, threshold 0.5): "
          f"{gap:+.2f} points")  # fmt: skip
    print("\nMicro F1 after each epoch (%):")
    for contestant, record in records.items():
        by_epoch = ", ".join(
            f"{100 * e['micro_f1']:.2f}" for e in record["epochs"]
        )
        print(f"  {contestant}: {by_epoch}")
    for contestant, record in records.items():
        print(f"{contestant}: {record['seconds']:.0f} s, load average "
              f"{record['load_average']} at start, {record['machine']}")  # fmt: skip


def main(argv):
    del argv
    if FLAGS.summarize:
        summarize()
        return
    if FLAGS.contestant:
        run_contestant(FLAGS.contestant)
        return
    for contestant in CONTESTANTS:
        common.run_process(
            common.script_command(
                __file__,
                f"--contestant={contestant}",
                *common.flag_values(
                    "seed", "threads", "data_dir", "runs_dir", "records_dir"
                ),
            )  # fmt: skip
        )
    summarize()


if __name__ == "__main__":
    app.run(main)
