"""benchmarks/finetune_job.py --race=compile_auto: the SST-2 sample, the
one-line Keras worker and the table."""

import os
import random
import shutil
import time

from benchmarks import common
from benchmarks.finetune.jobs import FLAGS
from benchmarks.finetune.jobs import output_dir


def sst2_sample(glue_dir, examples, directory):
    """A GLUE directory in `directory` whose SST-2 train split is a seeded
    sample of `examples` sentences of `glue_dir`'s (the dev split whole)."""
    source = os.path.join(glue_dir, "SST-2")
    target = os.path.join(directory, "SST-2")
    os.makedirs(target)
    with open(os.path.join(source, "train.tsv")) as f:
        header, *rows = f.readlines()
    rows = random.Random(0).sample(rows, examples)
    with open(os.path.join(target, "train.tsv"), "w") as f:
        f.writelines([header, *rows])
    shutil.copy(os.path.join(source, "dev.tsv"), target)
    return directory


def run_compile_auto():
    """`from_checkpoint`, `fit` on strings, dev accuracy, learning rates."""
    import keras
    import numpy as np

    import keras_bert

    (texts, labels), (dev_texts, dev_labels) = (
        common.read_sst2(split, FLAGS.glue_dir) for split in ("train", "dev")
    )
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(), num_classes=2, sequence_length=128
    )
    rates = []

    class LearningRates(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            rates.append(float(self.model.optimizer.learning_rate))

    start = time.perf_counter()
    model.fit(
        texts, labels, seed=FLAGS.seed, batch_size=32, epochs=1,
        callbacks=[LearningRates()], verbose=2,
    )  # fmt: skip
    train_seconds = time.perf_counter() - start
    logits = model.predict(dev_texts, batch_size=64, verbose=0)
    correct = np.argmax(logits, -1) == np.asarray(dev_labels)
    return {
        "num_train_examples": len(labels),
        "train_seconds": train_seconds,
        "dev_accuracy": float(correct.mean()),
        "learning_rate": {
            "start": rates[0],
            "peak": max(rates),
            "peak_update": int(np.argmax(rates)) + 1,
            "end": rates[-1],
            "updates": len(rates),
        },
    }


def compile_auto_summary(records):
    rounds = common.paired_rounds(records, ["recipe", "compile_auto"])
    if not rounds:
        raise SystemExit(f"No complete round in {output_dir()}.")
    rows = []
    for r in rounds:
        ours, theirs = records[("compile_auto", r)], records[("recipe", r)]
        rate = ours["learning_rate"]
        difference = 100 * (ours["dev_accuracy"] - theirs["dev_accuracy"])
        rows.append(
            [r, f"{theirs['dev_accuracy']:.4f}", f"{ours['dev_accuracy']:.4f}"]
            + [
                f"{difference:+.2f}",
                f"{rate['start']:.3g}, {rate['peak']:.3g} (update "
                f"{rate['peak_update']}), {rate['end']:.3g}, {rate['updates']}",
            ]
        )
    ours, theirs = (
        [records[(c, r)]["dev_accuracy"] for r in rounds]
        for c in ("compile_auto", "recipe")
    )
    mean = sum(ours) / len(ours), sum(theirs) / len(theirs)
    difference = f"{100 * (mean[0] - mean[1]):+.2f}"
    rows.append(["mean", f"{mean[1]:.4f}", f"{mean[0]:.4f}", difference, ""])
    commands, *context = common.context_note(records)
    examples = records[("recipe", rounds[0])]["num_train_examples"]
    return [
        "`BertClassifier.from_checkpoint(<local all-MiniLM-L6-v2>, "
        'num_classes=2).fit(train_sentences, labels)` with `compile("auto")`'
        " against `recipes/glue.py --task=sst2` with the same settings "
        f"({commands}; see its docstring): {examples} SST-2 training "
        "sentences, sequence 128, batch 32, peak learning rate 2e-5 with 10% "
        "warmup and linear decay, 1 epoch, seed k in round k; each job a "
        "fresh process. Dev accuracy on the whole dev split (872 sentences). "
        "The learning rate is the one each update of `fit` used (the last "
        "update's is the end; 0 after it).",
        *context,
        "",
        *common.table(
            ["round (seed)", "recipe dev accuracy", "compile_auto dev accuracy"]
            + ["difference (points)"]
            + [
                "compile_auto learning rate: start, peak (at update), end, over updates"
            ],
            rows,
        ),
    ]
