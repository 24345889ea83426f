"""A real NER fine-tune, side by side: keras-bert vs transformers in PyTorch.

Both contestants fine-tune all-MiniLM-L6-v2 (6 layers, hidden 384,
uncased) with a freshly initialised (seeded) tagging head on a CoNLL file
and are scored on its validation file by the same entity-level metrics
(`keras_bert.fine_tuning.ner.entity_scores`, `seqeval`'s default mode):
`--dataset=conll2003` (train.txt → valid.txt) or `wnut17`
(wnut17train.conll → emerging.dev.conll), under `../shared`. Settings,
identical for both (`SETTINGS`): the package's windows
(`keras_bert.fine_tuning.ner.ner_features`, sequence 128, stride 63: every
sentence whole, each word labelled on its first sub-token and predicted
from its max-context window; the labels equal Hugging Face's `word_ids()`
alignment: tests/fine_tuning/ner/test_features.py); the same batches of
32 in the same order (grouped by length as Hugging Face's
`group_by_length`, cut to the longest row rounded up to 8); 1 epoch
(CoNLL) or 3 (WNUT-17) at 5e-5 with 10% warmup then linear decay; AdamW
(0.9/0.999, epsilon 1e-6, decay 0.01 except biases and LayerNorm);
clipping at 1.0; dropout 0.1; seed `--seed`; float32; the best epoch by
validation F1.

  torch       transformers' `BertForTokenClassification` trained by
              `contestants/torch_loop.py` (2 threads).
  keras_bert  `python recipes/ner.py` with the same settings, AdamW's
              epsilon added as PyTorch adds it (`--noadam_epsilon_hat`).

Every full run also scores its predictions with `seqeval` and writes the
seed-0 tags to `benchmarks/ner/<dataset>_<contestant>_predicted.txt.gz`
(tests/fine_tuning/ner/test_metrics.py checks the parity on them).

    python benchmarks/ner_finetune.py --dataset=conll2003 --contestant=torch
    python benchmarks/ner_finetune.py --summarize   # the Markdown tables

The record lands in benchmarks/ner/<dataset>_<contestant>_seed<S>.json;
a smoke run (`--limit_train=64 --limit_eval=30`) writes it to RUN_DIR
(/tmp/ner_runs/<dataset>/<contestant>_seed<S>) only.
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402
from benchmarks.contestants import torch_loop  # noqa: E402

DATASETS = {
    "conll2003": ("conll2003/train.txt", "conll2003/valid.txt", 1),
    "wnut17": ("wnut17/wnut17train.conll", "wnut17/emerging.dev.conll", 3),
}
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
flags.DEFINE_enum("contestant", None, ["torch", "keras_bert"], "Who runs.")
flags.DEFINE_integer("seed", 0, "Seed of the head, dropout and batch order.")
flags.DEFINE_integer("threads", 2, "torch threads.")
flags.DEFINE_integer("limit_train", None, "Smoke runs: first N sentences.")
flags.DEFINE_integer("limit_eval", None, "Smoke runs: first N sentences.")
flags.DEFINE_bool("summarize", False, "Print the tables of benchmarks/ner.")


def files(run_dir):
    """The train and validation files, cut to the smoke run's limits."""
    train, validation, _ = DATASETS[FLAGS.dataset]
    return (
        common.first_sentences(
            f"{common.SHARED}/{train}", FLAGS.limit_train, run_dir + "_data"
        ),
        common.first_sentences(
            f"{common.SHARED}/{validation}", FLAGS.limit_eval, run_dir + "_data"
        ),
    )


def train_torch(run_dir):
    """Fine-tunes with transformers on the shared batches; scores each epoch."""
    import numpy as np
    import torch
    import transformers

    import keras_bert
    from keras_bert.data.length_grouped_epochs import length_grouped_order
    from keras_bert.fine_tuning.ner import entity_scores
    from keras_bert.fine_tuning.ner import label_list
    from keras_bert.fine_tuning.ner import ner_features
    from keras_bert.fine_tuning.ner import read_conll
    from keras_bert.fine_tuning.ner.features import word_predictions

    torch.set_num_threads(FLAGS.threads)
    train, validation = (read_conll(path) for path in files(run_dir))
    labels = label_list(train["tags"])
    index = {label: i for i, label in enumerate(labels)}
    label_ids = [[index.get(t, -1) for t in tags] for tags in train["tags"]]
    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    windows = {k: SETTINGS[k] for k in ("sequence_length", "stride")}
    start = time.perf_counter()
    train_features = ner_features(
        tokenizer, train["words"], label_ids, **windows
    )
    eval_features = ner_features(tokenizer, validation["words"], **windows)
    feature_seconds = time.perf_counter() - start
    model = torch_loop.from_pretrained(
        transformers.BertForTokenClassification,
        common.minilm_dir(),
        dropout=SETTINGS["dropout"],
        seed=SETTINGS["seed"],
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id=index,
    )

    def run_model(features, rows, **cut):
        """The model on a `common.cut_batch` (the loss with its labels)."""
        batch = common.cut_batch(
            features, rows, SETTINGS["sequence_length"], **cut
        )
        tensors = {k: torch.from_numpy(v).long() for k, v in batch.items()}
        return model(
            input_ids=tensors["token_ids"],
            token_type_ids=tensors["segment_ids"],
            attention_mask=tensors["padding_mask"],
            labels=tensors.get("labels"),
        )

    best = {}

    def evaluate(epoch):
        mask = eval_features["padding_mask"]
        logits = np.zeros(mask.shape + (len(labels),), np.float32)
        inputs = ("token_ids", "segment_ids", "padding_mask")
        outputs = torch_loop.predict(
            model,
            lambda rows: run_model(
                eval_features, rows, multiple=1, names=inputs
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
        tags = [[labels[i] for i in ids] for ids in predicted]
        scores = entity_scores(validation["tags"], tags)
        if not best or scores["f1"] > best["f1"]:
            best.update(f1=scores["f1"], tags=tags)
        return {"metrics": scores}

    lengths = train_features["padding_mask"].sum(axis=1)
    run = torch_loop.fine_tune(
        model,
        SETTINGS,
        len(lengths),
        epoch_order=lambda epoch: length_grouped_order(
            lengths, SETTINGS["batch_size"], SETTINGS["seed"], epoch
        ),
        step_loss=lambda rows: run_model(train_features, rows).loss,
        evaluate=evaluate,
        log_every=100,
    )
    best_epoch = max(run["epochs"], key=lambda e: e["metrics"]["f1"])
    return {
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
    train_file, validation_file = files(run_dir)
    command = recipe.command(
        "ner",
        train_file=train_file,
        validation_file=validation_file,
        init_checkpoint=common.minilm_dir(),
        **{
            k: SETTINGS[k]
            for k in ("sequence_length", "stride", "group_by_length")
        },
        **recipe.training_flags(SETTINGS, run_dir),
    )
    wall_seconds, cpu_seconds = recipe.run(command)
    results = common.read_record(os.path.join(run_dir, "results.json"))
    gold, predicted, sentence = [], [], []
    # The recipe's predictions: `token gold predicted` lines, a blank line
    # after each sentence.
    with open(results["predictions"]["validation"], encoding="utf-8") as file:
        for line in [*file, "\n"]:
            if line.split():
                sentence.append(line.split()[-2:])
            elif sentence:
                gold.append([g for g, _ in sentence])
                predicted.append([p for _, p in sentence])
                sentence = []
    return {
        "epochs": results["epochs"],
        "best_epoch": results["best_epoch"],
        "metrics": results["metrics"]["validation"],
        "per_type": results["per_type"]["validation"],
        "train_seconds": sum(e["train_seconds"] for e in results["epochs"]),
        "wall_seconds": wall_seconds,
        "process_cpu_seconds": cpu_seconds,
        "num_train_windows": results["num_train_examples"],
        "labels": results["labels"],
        "command": command,
        "predicted_tags": predicted,
        "gold_tags": gold,
    }


def seqeval_check(gold, predicted, f1):
    """`seqeval`'s scores of a run's own predictions (validation, best
    epoch) beside ours; seed 0's predicted tags are written, one sentence a
    line, for tests/fine_tuning/ner/test_metrics.py."""
    import gzip

    from seqeval import metrics

    from keras_bert.fine_tuning.ner import entity_scores

    ours = entity_scores(gold, predicted)
    theirs = {
        name: getattr(metrics, f"{name}_score")(
            gold, predicted, zero_division=0
        )
        for name in ("precision", "recall", "f1")
    }
    theirs["accuracy"] = metrics.accuracy_score(gold, predicted)
    report = metrics.classification_report(
        gold, predicted, output_dict=True, zero_division=0
    )
    differences = [abs(ours[name] - theirs[name]) for name in list(theirs)]
    for entity_type, scores in ours["per_type"].items():
        theirs[f"{entity_type}_f1"] = report[entity_type]["f1-score"]
        differences.append(abs(scores["f1"] - theirs[f"{entity_type}_f1"]))
    if abs(ours["f1"] - f1) > 1e-12:
        raise AssertionError(
            f"the predictions score F1 {ours['f1']}, the run reported {f1}"
        )
    check = {
        "seqeval": theirs,
        "max_abs_difference": max(differences),
        "num_sentences": len(gold),
    }
    if FLAGS.seed == 0:
        path = os.path.join(
            OUTPUT_DIR,
            f"{FLAGS.dataset}_{FLAGS.contestant}_seed0_predicted.txt.gz",
        )
        with gzip.GzipFile(path, "wb", mtime=0) as file:  # the same bytes
            file.write(
                "".join(" ".join(tags) + "\n" for tags in predicted).encode()
            )
        check["predicted_tags_file"] = os.path.relpath(path, common.REPO)
    return check


def summarize():
    """Markdown tables of benchmarks/ner: scores over seeds, the paired
    differences, and seed 0's times."""
    runs = {}
    for result in common.read_records(OUTPUT_DIR):
        key = (result["dataset"], result["contestant"])
        runs.setdefault(key, {})[result["settings"]["seed"]] = result

    def f1(result):
        return 100 * result["metrics"]["f1"]

    def spread(values):
        if len(values) < 2:
            return f"{values[0]:.2f}"
        return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"

    print(
        "| data (validation) | contestant | F1, mean ± std | F1 of seeds "
        "| precision | recall | first epoch's training loss "
        "| seqeval F1 = ours |\n|---|---|---|---|---|---|---|---|"
    )
    for (dataset, contestant), seeds in sorted(runs.items()):
        results = [seeds[seed] for seed in sorted(seeds)]
        agree = all(
            r.get("seqeval_check", {}).get("max_abs_difference") == 0.0
            for r in results
        )
        print(
            f"| {dataset} | {contestant} | **{spread([f1(r) for r in results])}** "
            f"| {common.listed([f1(r) for r in results], '{:.2f}')} (seeds "
            f"{common.listed(sorted(seeds))}) "
            f"| {spread([100 * r['metrics']['precision'] for r in results])} "
            f"| {spread([100 * r['metrics']['recall'] for r in results])} "
            f"| {common.listed([r['epochs'][0]['loss'] for r in results], '{:.4f}')} "
            f"| {'yes, all' if agree else 'NO'} |"
        )
    print("\nPaired by seed (the same batches, in the same order):\n")
    print("| data | keras-bert − torch, F1 points | mean |\n|---|---|---|")
    for dataset in sorted({d for d, _ in runs}):
        ours, theirs = (
            runs.get((dataset, "keras_bert"), {}),
            runs.get((dataset, "torch"), {}),
        )
        seeds = sorted(set(ours) & set(theirs))
        deltas = [f1(ours[s]) - f1(theirs[s]) for s in seeds]
        if seeds:
            print(
                f"| {dataset} | "
                + ", ".join(
                    f"{d:+.2f} (seed {s})" for d, s in zip(deltas, seeds)
                )
                + f" | {statistics.mean(deltas):+.2f} |"
            )
    print("\nSeed 0's times:\n")
    print(
        "| data | contestant | train minutes | train windows/s "
        "| whole job minutes | machine |\n|---|---|---|---|---|---|"
    )
    for (dataset, contestant), seeds in sorted(runs.items()):
        if 0 in seeds:
            r = seeds[0]
            windows = r["num_train_windows"] * r["settings"]["epochs"]
            print(
                f"| {dataset} | {contestant} | {r['train_seconds'] / 60:.1f} "
                f"| {windows / r['train_seconds']:.1f} "
                f"| {r['total_seconds'] / 60:.1f} | {r['machine'].split(';')[0]} |"
            )
    versions = {
        r["machine"].split("; ", 1)[-1]
        for s in runs.values()
        for r in s.values()
    }
    loads = [
        r["load_average"]
        for s in runs.values()
        for r in s.values()
        if "load_average" in r
    ]
    print(f"\nVersions: {'; '.join(sorted(versions))}.")
    if loads:
        machine = next(iter(next(iter(runs.values())).values()))["machine"]
        print(
            f"Load average (1 min) as the jobs started: {common.listed(loads)}; {common.load_note(loads, common.cores(machine), paired=False)}"
        )


def main(argv):
    del argv
    if FLAGS.summarize:
        return summarize()
    if not FLAGS.contestant:
        raise app.UsageError(
            "Pass --contestant=torch|keras_bert, or --summarize."
        )
    SETTINGS.update(seed=FLAGS.seed, epochs=DATASETS[FLAGS.dataset][2])
    name = f"{FLAGS.dataset}_{FLAGS.contestant}_seed{FLAGS.seed}"
    run_dir = os.path.join(
        "/tmp/ner_runs", FLAGS.dataset, name.split("_", 1)[1]
    )
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    load_average, start = round(os.getloadavg()[0], 1), time.perf_counter()
    train = train_torch if FLAGS.contestant == "torch" else train_keras_bert
    result = train(run_dir)
    gold, predicted = result.pop("gold_tags"), result.pop("predicted_tags")
    result.update(
        contestant=FLAGS.contestant,
        dataset=FLAGS.dataset,
        settings=SETTINGS,
        total_seconds=time.perf_counter() - start,
        load_average=load_average,
        machine=common.machine_description(),
        limit_train=FLAGS.limit_train,
        limit_eval=FLAGS.limit_eval,
    )
    smoke = FLAGS.limit_train or FLAGS.limit_eval
    if not smoke:
        result["seqeval_check"] = seqeval_check(
            gold, predicted, result["metrics"]["f1"]
        )
    path = os.path.join(run_dir if smoke else OUTPUT_DIR, f"{name}.json")
    common.write_record(path, result)
    print(f"{name}: F1 {100 * result['metrics']['f1']:.2f} ({path})")


if __name__ == "__main__":
    app.run(main)
