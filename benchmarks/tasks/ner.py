"""NER: whole fine-tunes, step-by-step losses, the head's initialiser.

all-MiniLM-L6-v2 with a fresh (seeded) tagging head on the package's
windows of CoNLL sentences (`ner_features`: every word labelled on its
first sub-token and predicted from its max-context window, as Hugging
Face's `word_ids()` alignment labels it), the same length-grouped batches
in the same order for both sides (cut to the longest row rounded up to
8), BERT's optimisation (`SETTINGS`; AdamW's epsilon as PyTorch adds it).

A contestant is a whole fine-tune, dropout 0.1, of `--dataset`
(`DATASETS`: train file, validation file, epochs), the best epoch by
entity F1 on validation. torch: `BertForTokenClassification` trained by
`contestants/torch_loop.py`; keras_bert: `python recipes/ner.py`;
keras_bert_fit: `BertTokenClassifier.fit` on the words and tags in Python
(labels inferred from the tags), scored by its `evaluate`. A full
run also scores its predictions with `seqeval` and writes seed 0's tags
(checked by tests/fine_tuning/ner/test_metrics.py).

`--step_parity`: dropout off, transformers' head copied into ours, the
first `--steps` batches of CoNLL-2003; PyTorch's loss at every step and how
far each keras-bert variant's is from it: `ours` (`create_adamw(...,
epsilon_hat=False)`), `ours, default` (Keras' "epsilon hat") and `keras
clipping` (Keras' own global-norm clipping, which squares an embedding
gradient's slices before summing them).

`--head=copied|normal|truncated`: one CoNLL-2003 epoch of keras-bert in a
`train_on_batch` loop, dropout 0.1, only the head's initial kernel
differing (transformers' copied in, `BertTokenClassifier`'s normal of std
0.02, Google's truncated normal of std 0.02); the epoch's mean loss and
each quarter's.
"""

import os
import statistics
import time

import numpy as np

from benchmarks import common
from benchmarks.contestants import recipe
from benchmarks.contestants import torch_loop
from benchmarks.tasks import FLAGS
from benchmarks.tasks import run_dir
from benchmarks.tasks import run_recipe
from benchmarks.tasks import threads
from benchmarks.tasks import torch_model

DATASETS = {
    "conll2003": ("conll2003/train.txt", "conll2003/valid.txt", 1),
    "wnut17": ("wnut17/wnut17train.conll", "wnut17/emerging.dev.conll", 3),
}
SETTINGS = dict(
    sequence_length=128, stride=63, batch_size=32, learning_rate=5e-5,
    warmup_fraction=0.1, weight_decay=0.01, adam_beta_1=0.9,
    adam_beta_2=0.999, adam_epsilon=1e-6, clipnorm=1.0, dropout=0.1, seed=0,
    group_by_length=True, epochs=1,
)  # fmt: skip
CONTESTANTS = ("torch", "keras_bert", "keras_bert_fit")
RECORDS = "ner"
SMOKE = ("limit_train",)


def record_name(contestant):
    return f"{FLAGS.dataset}_{contestant}_seed{FLAGS.seed}"


def conll(directory):
    """The train and validation files, cut to the limits, and what the
    package reads from them: `(files, train, validation, labels)`."""
    from keras_bert.fine_tuning.ner import label_list
    from keras_bert.fine_tuning.ner import read_conll

    train, validation, _ = DATASETS[FLAGS.dataset]
    files = [
        common.first_sentences(f"{common.SHARED}/{path}", limit, directory + "_data")
        for path, limit in ((train, FLAGS.limit_train), (validation, FLAGS.limit_eval))
    ]  # fmt: skip
    train, validation = (read_conll(path) for path in files)
    labels = label_list(train["tags"])
    index = {label: i for i, label in enumerate(labels)}
    train["label_ids"] = [
        [index.get(t, -1) for t in tags] for tags in train["tags"]
    ]
    return files, train, validation, labels


def ner_windows(data, labels=True):
    import keras_bert
    from keras_bert.fine_tuning.ner import ner_features

    tokenizer = keras_bert.BertTokenizer.from_checkpoint(common.minilm_dir())
    return ner_features(
        tokenizer, data["words"], data["label_ids"] if labels else None,
        sequence_length=SETTINGS["sequence_length"], stride=SETTINGS["stride"],
    )  # fmt: skip


def batches_of(features):
    """The rows of each length-grouped batch of an epoch (seed, epoch 0)."""
    from keras_bert.data.length_grouped_epochs import length_grouped_order

    size = SETTINGS["batch_size"]
    lengths = features["padding_mask"].sum(axis=1)
    order = length_grouped_order(lengths, size, FLAGS.seed, 0)
    return [order[i : i + size] for i in range(0, len(order), size)]


def torch_tagger(labels, dropout):
    """transformers' tagger and the loss of a batch of rows of `features`."""
    import torch
    import transformers

    model = torch_model(
        transformers.BertForTokenClassification, dict(dropout=dropout),
        num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )  # fmt: skip

    def run(features, rows, **cut):
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

    return model, run


def train_torch(directory):
    """Fine-tunes with transformers on the shared batches; scores each epoch."""
    from keras_bert.data.length_grouped_epochs import length_grouped_order
    from keras_bert.fine_tuning.ner import entity_scores
    from keras_bert.training.ner_features import word_predictions

    _, train, validation, labels = conll(directory)
    start = time.perf_counter()
    train_features = ner_windows(train)
    eval_features = ner_windows(validation, labels=False)
    feature_seconds = time.perf_counter() - start
    model, run_model = torch_tagger(labels, SETTINGS["dropout"])
    best = {}

    def evaluate(epoch):
        mask = eval_features["padding_mask"]
        logits = np.zeros(mask.shape + (len(labels),), np.float32)
        outputs = torch_loop.predict(
            model,
            lambda rows: run_model(
                eval_features, rows, multiple=1, names=common.INPUTS
            ).logits.numpy(),  # fmt: skip
            len(mask),
            order=np.argsort(-mask.sum(axis=1), kind="stable"),
        )
        for rows, output in outputs:
            logits[rows, : output.shape[1]] = output
        lengths = [len(words) for words in validation["words"]]
        outside = labels.index("O")
        predicted, _ = word_predictions(eval_features, logits, lengths, outside)
        tags = [[labels[i] for i in ids] for ids in predicted]
        scores = entity_scores(validation["tags"], tags)
        if not best or scores["f1"] > best["f1"]:
            best.update(f1=scores["f1"], tags=tags)
        return {"metrics": scores}

    lengths = train_features["padding_mask"].sum(axis=1)
    run = torch_loop.fine_tune(
        model, SETTINGS, len(lengths),
        lambda epoch: length_grouped_order(lengths, 32, FLAGS.seed, epoch),
        lambda rows: run_model(train_features, rows).loss,
        evaluate=evaluate, log_every=100, max_steps=FLAGS.max_steps,
    )  # fmt: skip
    best_epoch = max(run["epochs"], key=lambda e: e["metrics"]["f1"])
    return dict(
        epochs=run["epochs"], best_epoch=best_epoch["epoch"],
        metrics=best_epoch["metrics"], feature_seconds=feature_seconds,
        train_seconds=run["train_seconds"],
        train_cpu_seconds=run["train_cpu_seconds"],
        num_train_windows=len(lengths), steps=run["step"], labels=labels,
    ), (validation["tags"], best["tags"])  # fmt: skip


def train_keras_bert(directory):
    """Runs `recipes/ner.py` with the shared settings; reads its results."""
    (train_file, validation_file), *_ = conll(directory)
    results, command, wall_seconds, cpu_seconds = run_recipe(
        "ner", directory, train_file=train_file,
        validation_file=validation_file, init_checkpoint=common.minilm_dir(),
        sequence_length=SETTINGS["sequence_length"], stride=SETTINGS["stride"],
        group_by_length=True, **recipe.training_flags(SETTINGS, directory),
    )  # fmt: skip
    # `token gold predicted` lines, a blank line after each sentence.
    gold, predicted, sentence = [], [], []
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
    }, (gold, predicted)


def train_keras_bert_fit(directory):
    """`BertTokenClassifier.fit(words, tags)` with the recipe's settings."""
    import keras

    import keras_bert
    from keras_bert.fine_tuning.ner import entity_scores
    from keras_bert.training import FitWarmupLinearDecay
    from keras_bert.training import training_defaults

    _, train, validation, labels = conll(directory)
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertTokenClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=len(labels),
        sequence_length=SETTINGS["sequence_length"],
    )  # fmt: skip
    schedule = FitWarmupLinearDecay(
        SETTINGS["learning_rate"], SETTINGS["warmup_fraction"]
    )
    model.compile(
        optimizer=training_defaults("token_classification").create_optimizer(
            schedule, epsilon_hat=False
        )
    )
    start = time.perf_counter()
    history = model.fit(
        train["words"], train["tags"], epochs=SETTINGS["epochs"],
        batch_size=SETTINGS["batch_size"], seed=FLAGS.seed, verbose=2,
    )  # fmt: skip
    train_seconds = time.perf_counter() - start
    if model.labels != labels:
        raise AssertionError(f"inferred {model.labels}, not {labels}")
    metrics = model.evaluate(
        validation["words"], validation["tags"], batch_size=64,
        return_dict=True, verbose=0,
    )  # fmt: skip
    scores = {k: metrics[f"entity_{k}"] for k in ("precision", "recall", "f1")}
    predicted = None  # the tags, for the seqeval check of a full run only
    if not (FLAGS.limit_train or FLAGS.limit_eval or FLAGS.max_steps):
        predicted = model.predict(validation["words"], batch_size=64)
        scores = entity_scores(validation["tags"], predicted)
        if scores["f1"] != metrics["entity_f1"]:
            raise AssertionError(f"{scores['f1']} != {metrics['entity_f1']}")
    return {
        "epochs": [{"loss": loss} for loss in history.history["loss"]],
        "best_epoch": SETTINGS["epochs"] - 1,
        "metrics": scores,
        "train_seconds": train_seconds,
        "num_train_windows": len(ner_windows(train)["token_ids"]),
        "labels": labels,
    }, (validation["tags"], predicted)


def seqeval_check(gold, predicted, f1, directory):
    """`seqeval`'s scores of a run's own predictions (validation, best
    epoch) beside ours; seed 0's tags are written, one sentence a line."""
    import gzip

    from seqeval import metrics

    from keras_bert.fine_tuning.ner import entity_scores

    ours = entity_scores(gold, predicted)
    theirs = {
        name: getattr(metrics, f"{name}_score")(gold, predicted, zero_division=0)
        for name in ("precision", "recall", "f1")
    }  # fmt: skip
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
            f"The predictions score F1 {ours['f1']}, not {f1}."
        )
    check = dict(
        seqeval=theirs, max_abs_difference=max(differences),
        num_sentences=len(gold),
    )  # fmt: skip
    if FLAGS.seed == 0:
        name = f"{FLAGS.dataset}_{FLAGS.contestant}_seed0_predicted.txt.gz"
        path = os.path.join(directory, name)
        with gzip.GzipFile(path, "wb", mtime=0) as file:  # the same bytes
            file.write("".join(" ".join(t) + "\n" for t in predicted).encode())
        check["predicted_tags_file"] = os.path.relpath(path, common.REPO)
    return check


def run(contestant):
    SETTINGS.update(seed=FLAGS.seed, epochs=DATASETS[FLAGS.dataset][2])
    directory, start = run_dir(record_name(contestant)), time.perf_counter()
    train = {
        "torch": train_torch,
        "keras_bert": train_keras_bert,
        "keras_bert_fit": train_keras_bert_fit,
    }[contestant]
    result, (gold, predicted) = train(directory)
    result.update(
        dataset=FLAGS.dataset, settings=SETTINGS,
        total_seconds=time.perf_counter() - start,
        limit_train=FLAGS.limit_train, limit_eval=FLAGS.limit_eval,
    )  # fmt: skip
    if not (FLAGS.limit_train or FLAGS.limit_eval or FLAGS.max_steps):
        records = FLAGS.records_dir or os.path.join(
            common.REPO, "benchmarks", RECORDS
        )
        result["seqeval_check"] = seqeval_check(
            gold, predicted, result["metrics"]["f1"], records
        )
    print(f"{contestant}: F1 {100 * result['metrics']['f1']:.2f}")
    return result


def summarize(records):
    """Markdown tables: scores over seeds, the paired differences, and
    seed 0's times."""
    runs = common.by_seed(records, lambda r: (r["dataset"], r["contestant"]))

    def f1(result):
        return 100 * result["metrics"]["f1"]

    lines = [
        "| data (validation) | contestant | F1, mean ± std | F1 of seeds "
        "| precision | recall | first epoch's training loss "
        "| seqeval F1 = ours |\n|---|---|---|---|---|---|---|---|"
    ]
    for (dataset, contestant), seeds in sorted(runs.items()):
        results = [seeds[seed] for seed in sorted(seeds)]
        checks = [r.get("seqeval_check", {}) for r in results]
        agree = all(c.get("max_abs_difference") == 0.0 for c in checks)
        metric = {
            name: [100 * r["metrics"][name] for r in results]
            for name in ("f1", "precision", "recall")
        }
        losses = [r["epochs"][0]["loss"] for r in results]
        lines.append(
            f"| {dataset} | {contestant} | **{common.spread(metric['f1'])}** "
            f"| {common.listed(metric['f1'], '{:.2f}')} (seeds "
            f"{common.listed(sorted(seeds))}) "
            f"| {common.spread(metric['precision'])} "
            f"| {common.spread(metric['recall'])} "
            f"| {common.listed(losses, '{:.4f}')} "
            f"| {'yes, all' if agree else 'NO'} |"
        )
    lines.append("\nPaired by seed (the same batches, in the same order):\n")
    lines.append(
        "| data | keras-bert − torch, F1 points | mean |\n|---|---|---|"
    )
    for dataset in sorted({d for d, _ in runs}):
        ours, theirs = (
            runs.get((dataset, c), {}) for c in ("keras_bert", "torch")
        )
        seeds = sorted(set(ours) & set(theirs))
        deltas = [f1(ours[s]) - f1(theirs[s]) for s in seeds]
        if seeds:
            each = ", ".join(
                f"{d:+.2f} (seed {s})" for d, s in zip(deltas, seeds)
            )
            lines.append(
                f"| {dataset} | {each} | {statistics.mean(deltas):+.2f} |"
            )
    lines.append("\nSeed 0's times:\n")
    lines.append(
        "| data | contestant | train minutes | train windows/s "
        "| whole job minutes | machine |\n|---|---|---|---|---|---|"
    )
    for (dataset, contestant), seeds in sorted(runs.items()):
        if 0 in seeds:
            r = seeds[0]
            windows = r["num_train_windows"] * r["settings"]["epochs"]
            lines.append(
                f"| {dataset} | {contestant} | {r['train_seconds'] / 60:.1f} "
                f"| {windows / r['train_seconds']:.1f} "
                f"| {r['total_seconds'] / 60:.1f} | {r['machine'].split(';')[0]} |"
            )
    records = [r for seeds in runs.values() for r in seeds.values()]
    versions = {r["machine"].split("; ", 1)[-1] for r in records}
    loads = [r["load_average"] for r in records if "load_average" in r]
    lines.append(f"\nVersions: {'; '.join(sorted(versions))}.")
    if loads:
        note = common.load_note(
            loads, common.cores(records[0]["machine"]), False
        )
        lines.append(
            f"Load average (1 min) as the jobs started: {common.listed(loads)}; {note}"
        )
    return "\n".join(lines)


def keras_losses(batches, labels, head=None, dropout=0.0, **adamw):
    """keras-bert's loss at each of `batches`, trained on exactly the
    batches the PyTorch loop gets (`train_on_batch`; `create_adamw(**adamw)`
    on the same warmup and decay); dropout off, or as the checkpoint has
    it; `head`: a kernel and bias to start from, or a function of the model
    that sets them."""
    import keras

    import keras_bert
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw

    keras.utils.clear_session()
    keras.utils.set_random_seed(FLAGS.seed)
    if dropout:
        model = keras_bert.BertTokenClassifier.from_checkpoint(
            common.minilm_dir(), num_classes=len(labels)
        )
    else:
        backbone = keras_bert.BertBackbone.from_checkpoint(
            common.minilm_dir(), dropout=0.0, attention_dropout=0.0
        )
        model = keras_bert.BertTokenClassifier(
            backbone, len(labels), dropout=0.0
        )
    if callable(head):
        head(model)
    elif head is not None:
        model.output_dense.kernel.assign(head[0])
        model.output_dense.bias.assign(head[1])
    steps = len(batches)
    warmup = int(SETTINGS["warmup_fraction"] * steps)
    schedule = WarmupLinearDecay(SETTINGS["learning_rate"], steps, warmup)
    model.compile(optimizer=create_adamw(schedule, **adamw))
    losses = []
    for batch in batches:
        inputs = {name: batch[name] for name in common.INPUTS}
        model.reset_metrics()
        result = model.train_on_batch(inputs, batch["labels"], return_dict=True)
        losses.append(float(result["loss"]))
    return losses


def torch_head(model):
    """transformers' head as a Keras kernel and bias."""
    weight, bias = model.classifier.weight, model.classifier.bias
    return weight.detach().numpy().T.copy(), bias.detach().numpy().copy()


def step_parity():
    import keras

    import keras_bert

    FLAGS.limit_train = FLAGS.limit_train or 2 * FLAGS.steps * 32
    _, train, _, labels = conll(run_dir("step_parity"))
    features = ner_windows(train)
    rows = batches_of(features)[: FLAGS.steps]
    batches = [common.cut_batch(features, r, 128) for r in rows]
    model, run_model = torch_tagger(labels, dropout=0.0)
    head, flat = torch_head(model), np.concatenate(rows)
    reference = torch_loop.fine_tune(
        model, SETTINGS, len(flat), lambda epoch: flat,
        lambda rows: run_model(features, rows).loss,
    )["losses"]  # fmt: skip
    variants = {
        "ours": keras_losses(batches, labels, head, epsilon_hat=False),
        "ours, default": keras_losses(batches, labels, head),
    }
    # Keras' own `_clip_gradients` on our AdamW, for one run.
    adamw = keras_bert.training.AdamW
    ours = adamw._clip_gradients
    adamw._clip_gradients = keras.optimizers.AdamW._clip_gradients
    try:
        variants["keras clipping"] = keras_losses(batches, labels, head, epsilon_hat=False)  # fmt: skip
    finally:
        adamw._clip_gradients = ours
    print("| step | torch loss | " + " | ".join(variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for step, loss in enumerate(reference):
        each = " | ".join(f"{v[step] - loss:+.1e}" for v in variants.values())
        print(f"| {step} | {loss:.6f} | {each} |")
    largest = {n: max(abs(a - b) for a, b in zip(v, reference)) for n, v in variants.items()}  # fmt: skip
    print("max |difference|: " + common.listed(f"{n} {d:.1e}" for n, d in largest.items()))  # fmt: skip


def head_init():
    import keras

    _, train, _, labels = conll(run_dir("head_init"))
    features = ner_windows(train)
    batches = [common.cut_batch(features, r, 128) for r in batches_of(features)]
    head = None  # "normal": the model's own
    if FLAGS.head == "copied":
        head = torch_head(torch_tagger(labels, dropout=0.1)[0])
    elif FLAGS.head == "truncated":

        def head(model):
            kernel = model.output_dense.kernel
            truncated = keras.initializers.TruncatedNormal(
                0.0, 0.02, FLAGS.seed
            )
            kernel.assign(truncated(kernel.shape))

    losses = keras_losses(batches, labels, head, dropout=0.1, epsilon_hat=False)
    quarter = max(1, len(losses) // 4)  # the last len % 4 steps left out
    ends = range(0, min(4 * quarter, len(losses)), quarter)
    quarters = [np.mean(losses[i : i + quarter]) for i in ends]
    print(
        f"head={FLAGS.head} seed={FLAGS.seed}: mean loss {np.mean(losses):.4f} "
        f"over {len(losses)} steps; quarters {common.listed(quarters, '{:.4f}')}"
    )


def other_mode():
    """`--step_parity` or `--head`, run here; False otherwise."""
    if not (FLAGS.step_parity or FLAGS.head):
        return False
    import torch

    torch.set_num_threads(threads(2))
    step_parity() if FLAGS.step_parity else head_init()
    return True
