"""Multi-label: which entity types (LOC, MISC, ORG, PER; maybe none) a
CoNLL-2003 sentence mentions (`benchmarks/data_sets.py
--data_set=entity_types` builds the files into `--data_dir`). Both train
on a seeded sample of 4,000 train sentences and score the dev split after
every epoch (micro F1, macro F1, subset accuracy at threshold 0.5); the
epoch of best micro F1 is reported.

- keras_bert: `ClassificationFineTuning` run by `run_fine_tuning` (what
  `recipes/classify.py --multi_label` runs), like-length batches
  (`--nogroup_by_length`: the ablation, recorded apart); thresholds tuned
  on dev are reported apart (tuned and scored on one split: optimistic);
- torch: `BertForSequenceClassification(problem_type=
  "multi_label_classification")`, shuffled batches padded to their
  longest row, `contestants/torch_loop.py`.
"""

import json
import time

import numpy as np

from benchmarks import common
from benchmarks import data_sets
from benchmarks.tasks import FLAGS
from benchmarks.tasks import run_dir
from benchmarks.tasks import torch_fine_tune
from benchmarks.tasks import torch_model
from benchmarks.tasks import torch_predict

SETTINGS = dict(
    train_sentences=4000, sequence_length=64, batch_size=32,
    learning_rate=1e-4, epochs=3, warmup_fraction=0.1, weight_decay=0.01,
    adam_beta_1=0.9, adam_beta_2=0.999, adam_epsilon=1e-6, clipnorm=1.0,
    dropout=0.1, threshold=0.5,
)  # fmt: skip
SCORES = ("micro_f1", "macro_f1", "subset_accuracy")
CONTESTANTS = ("keras_bert", "torch")
RECORDS = "multi_label"
UNGROUPED = "keras_bert (--nogroup_by_length)"


def data_files():
    """`(train sample, dev)`: the splits built once into `--data_dir`
    and a seeded sample of `train_sentences` train sentences."""
    import tensorflow as tf

    directory = FLAGS.data_dir or "/tmp/entity_types"
    paths = {s: f"{directory}/{s}.jsonl" for s in data_sets.SPLITS}
    if not all(tf.io.gfile.exists(path) for path in paths.values()):
        paths = data_sets.build(directory)
    count = SETTINGS["train_sentences"]
    sample = f"{directory}/train_{count}_seed{FLAGS.seed}.jsonl"
    if not tf.io.gfile.exists(sample):
        with tf.io.gfile.GFile(paths["train"]) as file:
            lines = file.readlines()
        rows = np.random.default_rng(FLAGS.seed).permutation(len(lines))
        with tf.io.gfile.GFile(sample, "w") as file:
            file.write("".join(lines[i] for i in sorted(rows[:count])))
    return sample, paths["dev"]


def read_jsonl(path):
    with open(path, encoding="utf-8") as file:
        rows = [json.loads(line) for line in file]
    return [row["text"] for row in rows], [row["labels"] for row in rows]


def record_name(contestant):
    ungrouped = contestant == "keras_bert" and not FLAGS.group_by_length
    return f"{contestant}{'_ungrouped' * ungrouped}_seed{FLAGS.seed}"


def run_keras_bert(train_file, dev_file):
    import keras_bert
    from keras_bert.fine_tuning import load_task_model
    from keras_bert.fine_tuning import run_fine_tuning
    from keras_bert.fine_tuning.classify import ClassificationFineTuning

    def model_fn(job):
        model, tokenizer = load_task_model(
            keras_bert.BertClassifier, init_checkpoint=common.minilm_dir(),
            sequence_length=SETTINGS["sequence_length"],
            num_classes=len(job.label_names), label_names=job.label_names,
            multi_label=True, dropout=SETTINGS["dropout"],
        )  # fmt: skip
        return model, keras_bert.BertPreprocessor(
            tokenizer, SETTINGS["sequence_length"]
        )

    job = ClassificationFineTuning(
        train_file, dev_file, model_fn, multi_label=True,
        group_by_length=FLAGS.group_by_length,
    )  # fmt: skip
    start = time.perf_counter()
    result = run_fine_tuning(
        job, run_dir(record_name("keras_bert")), epochs=SETTINGS["epochs"],
        batch_size=SETTINGS["batch_size"],
        learning_rate=SETTINGS["learning_rate"],
        warmup_fraction=SETTINGS["warmup_fraction"], seed=FLAGS.seed,
        adam_epsilon_hat=False,  # AdamW's epsilon as PyTorch adds it
    ).results  # fmt: skip
    return dict(
        epochs=[
            dict(epoch=e["epoch"], **e["metrics"]["validation"])
            for e in result["epochs"]
        ],
        tuned=result["tuned_metrics"]["validation"],
        thresholds=result["thresholds"], label_names=result["label_names"],
        seconds=time.perf_counter() - start,
    )  # fmt: skip


def run_torch(train_file, dev_file):
    import torch
    import transformers

    from keras_bert.training.multi_label_metrics import multi_label_scores

    (train_texts, train_labels), (dev_texts, dev_labels) = map(
        read_jsonl, (train_file, dev_file)
    )
    names = sorted({name for labels in train_labels for name in labels})
    train_y, dev_y = (
        np.array([[float(n in row) for n in names] for row in y], "float32")
        for y in (train_labels, dev_labels)
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    model = torch_model(
        transformers.BertForSequenceClassification, SETTINGS,
        num_labels=len(names), problem_type="multi_label_classification",
        id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)},
    )  # fmt: skip

    def batch(texts, rows):
        return tokenizer(
            [texts[i] for i in rows], truncation=True, padding="longest",
            max_length=SETTINGS["sequence_length"], return_tensors="pt",
        )  # fmt: skip

    def step_loss(rows):
        labels = torch.from_numpy(train_y[rows])
        return model(**batch(train_texts, rows), labels=labels).loss

    def evaluate(epoch):
        probabilities = torch_predict(
            model,
            lambda rows: torch.sigmoid(model(**batch(dev_texts, rows)).logits).numpy(),
            len(dev_texts),
        )  # fmt: skip
        return multi_label_scores(dev_y, probabilities, SETTINGS["threshold"])

    start = time.perf_counter()
    run = torch_fine_tune(
        model, SETTINGS, len(train_texts), step_loss, evaluate=evaluate,
        log_every=50,
    )  # fmt: skip
    return dict(
        epochs=[
            dict(epoch=e["epoch"], **{k: e[k] for k in SCORES})
            for e in run["epochs"]
        ],
        label_names=names,
        seconds=time.perf_counter() - start,
    )


def run(contestant):
    train_file, dev_file = data_files()
    runner = run_keras_bert if contestant == "keras_bert" else run_torch
    record = runner(train_file, dev_file)
    best = max(record["epochs"], key=lambda e: e["micro_f1"])
    return dict(
        record, settings=SETTINGS, group_by_length=FLAGS.group_by_length,
        best_epoch=best, last_epoch=record["epochs"][-1],
        train_file=train_file, dev_file=dev_file,
    )  # fmt: skip


def summarize(records):
    runs = common.by_seed(
        records,
        lambda r: (
            r["contestant"]
            + "_ungrouped" * (not r.get("group_by_length", True))
        ),
    )
    runs = {
        UNGROUPED if name.endswith("_ungrouped") else name: runs[name]
        for name in ("keras_bert", "torch", "keras_bert_ungrouped")
        if name in runs
    }
    seeds = sorted({s for seeded in runs.values() for s in seeded})
    lines = [
        f"Settings: {SETTINGS}, seed {common.listed(seeds)}; dev: the whole "
        "CoNLL-2003 valid split.\n",
        "| contestant | epoch | micro F1 | macro F1 | subset accuracy |",
        "|---|---|---|---|---|",
    ]

    def scores(e):
        return [(100 * e[k], "{:.2f}") for k in SCORES]

    for contestant, seeded in runs.items():
        for which in ("best_epoch", "last_epoch"):
            lines += common.seed_rows(
                f"{contestant} ({which.replace('_', ' ')})", seeded,
                lambda r: [(r[which]["epoch"], "{:g}"), *scores(r[which])],
            )  # fmt: skip
    ours = runs.get("keras_bert", {})
    for seed, record in sorted(ours.items()):
        at = f", seed {seed}" * (len(ours) > 1)
        lines.append(
            f"| keras_bert{at}, thresholds tuned on dev "
            f"{record['thresholds']} | best | "
            + " | ".join(f"{v:.2f}" for v, _ in scores(record["tuned"]))
            + " |"
        )
    gap = common.paired_difference(
        ours, runs.get("torch", {}),
        lambda r: 100 * r["best_epoch"]["micro_f1"],
    )  # fmt: skip
    if gap:
        lines.append(
            "\nkeras-bert − torch, micro F1 (best epochs, threshold 0.5): "
            f"{gap} points"
        )
    lines.append("\nMicro F1 after each epoch (%):")
    each = [(c, s, r) for c, seeded in runs.items() for s, r in seeded.items()]
    for contestant, seed, record in each:
        at = f", seed {seed}" * (len(runs[contestant]) > 1)
        by_epoch = common.listed(
            [100 * e["micro_f1"] for e in record["epochs"]], "{:.2f}"
        )
        lines.append(f"  {contestant}{at}: {by_epoch}")
    for contestant, seed, record in each:
        at = f", seed {seed}" * (len(runs[contestant]) > 1)
        lines.append(
            f"{contestant}{at}: {record['seconds']:.0f} s, load average "
            f"{record['load_average']} at start, {record['machine']}"
        )
    return "\n".join(lines)
