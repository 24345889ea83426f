"""The whole GLUE fine-tuning job, TSV files to dev scores: the recipe against
other ways to run it.

Every contestant fine-tunes all-MiniLM-L6-v2 on `../shared/glue`, sequence
length 128, batch 32, 1 epoch; each job a fresh process, the contestants
alternating, the order rotated each round, round k with seed k. Four
races, each with its records and its section of RESULTS.md:

`--race=tools` (SST-2, learning rate 2e-5, each tool as it runs by
default; benchmarks/finetune_job/):
  recipe         `python recipes/glue.py --task=sst2 ...`: its tokenizer in
                 `tf.data`, like-length batches each cut to its longest row,
                 AdamW with 10% warmup then linear decay.
  keras_hub      keras-hub's `BertTextClassifier` and preprocessor (rows
                 padded to 128), loaded by keras-hub's own converter;
                 `keras.optimizers.AdamW(2e-5)` decayed linearly to 0.
  hf_trainer     `transformers.Trainer`, its fast tokenizer (truncation to
                 128), its dynamic padding, AdamW and linear decay.
  hf_trainer_grouped  the Trainer with `train_sampling_strategy=
                 "group_by_length"`: the recipe's batching, nothing else.
  keras_hub_xla  keras_hub with `jit_compile=True` (keras-hub's "auto"
                 leaves XLA off on a CPU), nothing else.
  torch_grouped  a plain PyTorch loop (`contestants/torch_loop.py`) on the
                 Trainer's length-grouped batches (transformers'
                 `get_length_grouped_indices`, what its
                 `LengthGroupedSampler` yields: shuffled, sorted by length
                 within groups of 50 batches, the longest batch first),
                 each padded to its longest row as the Trainer's collator
                 does, with the recipe's settings (`TORCH_SETTINGS`: AdamW
                 without decay on biases and LayerNorm weights, 10%
                 warmup then linear decay, clipping to norm 1.0, dropout
                 0.1); the dev sentences predicted in batches of 64
                 sorted by length.
  recipe_bf16    the recipe with `--mixed_precision=mixed_bfloat16`
                 (Keras' policy: bfloat16 compute, float32 weights).
  torch_grouped_bf16  torch_grouped with its forward passes (training and
                 prediction) under `torch.autocast("cpu", bfloat16)`, what
                 the Trainer's `bf16=True` does on a CPU. The issue allows
                 bfloat16 as an option on a CPU with AMX, compared bfloat16
                 to bfloat16: the table pairs it with recipe_bf16.
`--race=lora` (SST-2 through the recipe; benchmarks/lora_finetune/): full
  (every weight, 2e-5), lora (`--lora_rank=8 --learning_rate=5e-4`: the
  backbone frozen, rank-8 LoRA on q|k|v and the head; the LoRA paper's
  SST-2 rate at rank 8, Hu et al. 2021, table 9), lora_lr1e-3 (at 1e-3).
`--race=raw_text` (`--tasks`; benchmarks/raw_text_fit/<task>/): the recipe
  against `raw_text`, a `BertClassifier` with its preprocessor, `fit` on
  the raw train strings, `evaluate` and `predict` on the dev strings (2e-5,
  10% warmup, the recipe's batching); both load `all_minilm_l6_v2_en` from
  a Hugging Face cache made of the local files, as the tests make one.
`--race=compile_auto` (SST-2; benchmarks/compile_auto/): does the one-line
  Keras path train as the recipe does? The recipe against compile_auto,
  `BertClassifier.from_checkpoint(<MiniLM>, num_classes=2)` (compiled by
  its constructor: `compile("auto")`), then `fit(train_sentences,
  labels)` with Keras' defaults (batch 32, 1 epoch; `seed=k`, the data
  order of the recipe's seed) and the dev sentences' `predict`, recording
  the learning rate at every update. `--train_examples=N` trains both on
  the same N sentences (a seeded sample, in a temporary GLUE directory;
  the dev split whole).

    python benchmarks/finetune_job.py --race=tools --rounds=3
    python benchmarks/finetune_job.py --race=lora --summarize

transformers' `Trainer` needs `accelerate` (the `dev` extra).
"""

import math
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import recipe  # noqa: E402

# race -> its records' directory (and section), its contestants.
RACES = {
    "tools": (
        "finetune_job",
        "recipe keras_hub hf_trainer hf_trainer_grouped keras_hub_xla "
        "torch_grouped recipe_bf16 torch_grouped_bf16",
    ),
    "lora": ("lora_finetune", "full lora lora_lr1e-3"),
    "raw_text": ("raw_text_fit", "recipe raw_text"),
    "compile_auto": ("compile_auto", "recipe compile_auto"),
}
# The recipe flags of each contestant that runs the recipe.
RECIPES = {
    "recipe": {},
    "recipe_bf16": {"mixed_precision": "mixed_bfloat16"},
    "full": {"lora_rank": 0, "learning_rate": 2e-5},
    "lora": {"lora_rank": 8, "learning_rate": 5e-4},
    "lora_lr1e-3": {"lora_rank": 8, "learning_rate": 1e-3},
}
PRESET = "all_minilm_l6_v2_en"
# The recipe's SST-2 settings for the PyTorch loop: `recipes/glue.py`'s
# flags in `run_job` and `keras_bert.training.TRAINING_DEFAULTS[
# "classifier"]` (a test checks they agree; not imported, so that the
# PyTorch job does not pay for importing TensorFlow).
TORCH_SETTINGS = dict(
    batch_size=32,
    epochs=1,
    learning_rate=2e-5,
    warmup_fraction=0.1,
    weight_decay=0.01,
    adam_beta_1=0.9,
    adam_beta_2=0.999,
    adam_epsilon=1e-6,
    clipnorm=1.0,
    sequence_length=128,
    dropout=0.1,
    eval_batch_size=64,
)
METRICS = {
    "sst2": ["accuracy"],
    "rte": ["accuracy"],
    "stsb": ["pearson", "spearman"],
}

FLAGS = flags.FLAGS


def define_flags():
    """The script's flags (defined when it runs: tests import its helpers)."""
    flags.DEFINE_enum("race", "tools", list(RACES), "Which race (docstring).")
    flags.DEFINE_integer(
        "rounds", 3, "Rounds; each runs every contestant once."
    )
    flags.DEFINE_integer("first_round", 0, "Number of the first round to run.")
    flags.DEFINE_list("contestants", None, "Contestants; default: the race's.")
    flags.DEFINE_list("tasks", list(METRICS), "--race=raw_text: GLUE tasks.")
    flags.DEFINE_bool(
        "summarize", False, "Only write the table from the records."
    )
    flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
    flags.DEFINE_integer(
        "train_examples", 0, "--race=compile_auto: train on this many "
        "SST-2 sentences (0: the whole split).",
    )  # fmt: skip
    flags.DEFINE_string("output_dir", None, "Records; default: the race's.")
    flags.DEFINE_string("worker", None, "Internal: run one job.")
    flags.DEFINE_string("task", "sst2", "Internal: the worker's task.")
    flags.DEFINE_integer("seed", 0, "Internal: the worker's seed.")


def output_dir():
    default = os.path.join(os.path.dirname(__file__), RACES[FLAGS.race][0])
    return FLAGS.output_dir or default


def hub_environment(directory):
    """The environment in which `PRESET` loads offline from a Hugging Face
    cache in `directory` made of the local files (tests/hub_cache.py)."""
    from keras_bert.models.presets import preset_hub_id
    from tests import hub_cache

    source = common.minilm_dir()
    names = [n for n in os.listdir(source) if os.path.isfile(f"{source}/{n}")]
    files = {name: f"{source}/{name}" for name in names}
    hub_cache.add_to_hub_cache(
        directory, preset_hub_id(PRESET), files, "0" * 40
    )
    return dict(hub_cache.hub_environment(directory), PYTHONPATH=common.REPO)


def peer_record(examples, train_seconds, eval_start, correct):
    """A peer worker's record: its training and evaluation, its accuracy."""
    return {
        "num_train_examples": examples,
        "train_seconds": round(train_seconds, 1),
        "eval_seconds": round(time.time() - eval_start, 1),
        "metrics": {"accuracy": float(correct.mean())},
    }


def run_keras_hub(jit_compile="auto"):
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(FLAGS.seed)
    (texts, labels), (dev_texts, dev_labels) = (
        common.read_sst2(split, FLAGS.glue_dir) for split in ("train", "dev")
    )
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        common.minilm_dir(), sequence_length=128
    )
    classifier = keras_hub.models.BertTextClassifier.from_preset(
        common.minilm_dir(), num_classes=2, preprocessor=preprocessor
    )
    steps = math.ceil(len(labels) / 32)
    decay = keras.optimizers.schedules.PolynomialDecay(2e-5, steps, 0.0)
    classifier.compile(
        optimizer=keras.optimizers.AdamW(decay),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["sparse_categorical_accuracy"],
        jit_compile=jit_compile,
    )
    train = tf.data.Dataset.from_tensor_slices((texts, labels))
    start = time.time()
    classifier.fit(
        train.shuffle(len(labels), seed=FLAGS.seed).batch(32), verbose=2
    )
    train_seconds, start = time.time() - start, time.time()
    dev = tf.data.Dataset.from_tensor_slices(dev_texts).batch(64)
    predicted = np.argmax(classifier.predict(dev, verbose=0), -1)
    return peer_record(
        len(labels), train_seconds, start, predicted == dev_labels
    )


def run_hf_trainer(group_by_length=False):
    import numpy as np
    import torch
    import transformers

    transformers.set_seed(FLAGS.seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        common.minilm_dir(), num_labels=2
    )

    class Examples(torch.utils.data.Dataset):
        def __init__(self, split):
            texts, self.labels = common.read_sst2(split, FLAGS.glue_dir)
            self.encoded = tokenizer(texts, truncation=True, max_length=128)

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            item = {key: value[i] for key, value in self.encoded.items()}
            return dict(item, labels=self.labels[i])

    train, dev = Examples("train"), Examples("dev")
    with tempfile.TemporaryDirectory() as output:
        sampling = "group_by_length" if group_by_length else "random"
        arguments = transformers.TrainingArguments(
            output_dir=output, per_device_train_batch_size=32,
            per_device_eval_batch_size=64, learning_rate=2e-5,
            num_train_epochs=1, save_strategy="no", report_to=[],
            seed=FLAGS.seed, use_cpu=True, train_sampling_strategy=sampling,
            logging_steps=50,
        )  # fmt: skip
        trainer = transformers.Trainer(
            model=model, args=arguments, train_dataset=train,
            processing_class=tokenizer,
        )  # fmt: skip
        start = time.time()
        trainer.train()
        train_seconds, start = time.time() - start, time.time()
        predictions = trainer.predict(dev)
    # Length-grouped, the Trainer also predicts in shuffled length groups:
    # score the predictions against the labels it returns beside them.
    gold = np.asarray(predictions.label_ids)
    if sorted(gold.tolist()) != sorted(dev.labels):
        raise RuntimeError("The Trainer's label_ids are not the dev labels.")
    predicted = np.argmax(predictions.predictions, -1)
    return peer_record(len(train), train_seconds, start, predicted == gold)


def grouped_order(lengths, batch_size, generator):
    """One epoch's row order as the Trainer's `LengthGroupedSampler` draws
    it (`transformers.trainer_pt_utils.get_length_grouped_indices`)."""
    import numpy as np
    from transformers.trainer_pt_utils import get_length_grouped_indices

    indices = get_length_grouped_indices(
        list(lengths), batch_size, generator=generator
    )
    return np.asarray(indices, dtype=np.int64)


def padded_batch(encoded, rows, labels=None):
    """`rows` of the tokenizer's `encoded` lists as int64 tensors padded
    to the batch's longest row (what `DataCollatorWithPadding` does)."""
    import numpy as np
    import torch

    width = max(len(encoded["input_ids"][i]) for i in rows)
    batch = {}
    for name in ("input_ids", "token_type_ids", "attention_mask"):
        array = np.zeros((len(rows), width), np.int64)
        for j, i in enumerate(rows):
            array[j, : len(encoded[name][i])] = encoded[name][i]
        batch[name] = torch.from_numpy(array)
    if labels is not None:
        batch["labels"] = torch.tensor([labels[i] for i in rows])
    return batch


def run_torch_grouped(precision="float32"):
    """The plain PyTorch loop on length-grouped batches: the job's record
    (`precision` "mixed_bfloat16": the forward passes under autocast)."""
    import numpy as np
    import torch
    import transformers

    from benchmarks.contestants import torch_loop

    settings = TORCH_SETTINGS
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    (texts, labels), (dev_texts, dev_labels) = (
        common.read_sst2(split, FLAGS.glue_dir) for split in ("train", "dev")
    )
    encode = dict(truncation=True, max_length=settings["sequence_length"])
    train, dev = tokenizer(texts, **encode), tokenizer(dev_texts, **encode)
    model = torch_loop.from_pretrained(
        transformers.AutoModelForSequenceClassification, common.minilm_dir(),
        dropout=settings["dropout"], seed=FLAGS.seed, num_labels=2,
    )  # fmt: skip
    lengths = [len(ids) for ids in train["input_ids"]]
    generator = torch.Generator().manual_seed(FLAGS.seed)
    eval_start = []

    def evaluate(epoch):
        eval_start.append(time.time())
        dev_lengths = np.array([len(ids) for ids in dev["input_ids"]])

        def logits(rows):
            with torch_loop.autocast(precision):
                return model(**padded_batch(dev, rows)).logits.float().numpy()

        outputs = torch_loop.predict(
            model,
            logits,
            len(dev_lengths), settings["eval_batch_size"],
            order=np.argsort(-dev_lengths, kind="stable"),
        )  # fmt: skip
        predicted = np.zeros(len(dev_lengths), np.int64)
        for rows, logits in outputs:
            predicted[rows] = logits.argmax(-1)
        return {"correct": predicted == np.asarray(dev_labels)}

    def step_loss(rows):
        with torch_loop.autocast(precision):
            return model(**padded_batch(train, rows, labels)).loss

    run = torch_loop.fine_tune(
        model, settings, len(lengths),
        lambda epoch: grouped_order(lengths, settings["batch_size"], generator),
        step_loss,
        evaluate=evaluate, log_every=50,
    )  # fmt: skip
    (epoch,) = run["epochs"]
    record = peer_record(
        len(labels), run["train_seconds"], eval_start[0], epoch["correct"]
    )
    return dict(record, train_cpu_seconds=round(run["train_cpu_seconds"], 1))


def run_raw_text():
    """`fit`, `evaluate` and `predict` on raw strings: the job's record."""
    import keras

    import keras_bert
    from keras_bert.fine_tuning import glue
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import create_adamw

    task = glue.get_glue_task(FLAGS.task)
    train = glue.load_glue(task, "train", FLAGS.glue_dir)
    dev = glue.load_glue(task, task.eval_splits[0], FLAGS.glue_dir)

    def texts(examples):
        columns = tuple(examples[name] for name in task.text_features)
        return columns if len(columns) == 2 else columns[0]

    keras.utils.set_random_seed(FLAGS.seed)
    model = keras_bert.BertClassifier.from_checkpoint(
        PRESET, num_classes=task.num_classes, sequence_length=128
    )
    steps = math.ceil(len(train["label"]) / 32)
    model.compile(
        optimizer=create_adamw(WarmupLinearDecay(2e-5, steps, int(0.1 * steps)))
    )
    seconds = {"start": time.time()}

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seconds["begin"] = time.time()  # after tokenizing and batching

        def on_epoch_end(self, epoch, logs=None):
            seconds["end"] = time.time()

    timer = [EpochTimer()]
    model.fit(
        texts(train), train["label"], 32, seed=FLAGS.seed, callbacks=timer
    )
    start = time.time()
    evaluated = model.evaluate(
        texts(dev), dev["label"], 64, return_dict=True, verbose=0
    )
    outputs = model.predict(texts(dev), batch_size=64, verbose=0)
    metrics = glue.compute_glue_metrics(task, dev["label"], outputs)
    return {
        "num_train_examples": len(train["label"]),
        "train_seconds": round(seconds["end"] - seconds["begin"], 1),
        "fit_seconds": round(start - seconds["start"], 1),
        "prepare_seconds": round(seconds["begin"] - seconds["start"], 1),
        "eval_seconds": round(time.time() - start, 1),
        "metrics": {k: float(v) for k, v in metrics.items()},
        "evaluate": {k: float(v) for k, v in evaluated.items()},
    }


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


WORKERS = {
    "compile_auto": run_compile_auto,
    "raw_text": run_raw_text,
    "keras_hub": run_keras_hub,
    "keras_hub_xla": lambda: run_keras_hub(jit_compile=True),
    "hf_trainer": run_hf_trainer,
    "hf_trainer_grouped": lambda: run_hf_trainer(group_by_length=True),
    "torch_grouped": run_torch_grouped,
    "torch_grouped_bf16": lambda: run_torch_grouped("mixed_bfloat16"),
}
# Who each contestant is paired with in the ratios: the recipe at its
# precision.
PAIRED_WITH = {"torch_grouped_bf16": "recipe_bf16"}


def run_job(contestant, k, task="sst2", env=None):
    """One job in a fresh process; returns its record."""
    context = common.job_context()
    cpu_before = common.children_cpu_seconds()
    if contestant in RECIPES:
        recipe_flags = dict(
            {"group_by_length": True, "learning_rate": 2e-5},
            **RECIPES[contestant],
        )
        checkpoint = PRESET if env else common.minilm_dir()
        results, total = recipe.fine_tune(
            "glue", env, task=task, data_dir=FLAGS.glue_dir, init_checkpoint=checkpoint,
            sequence_length=128, batch_size=32, epochs=1, seed=k, **recipe_flags,
        )  # fmt: skip
        record = {
            "num_train_examples": results["num_train_examples"],
            "train_seconds": results["epochs"][0]["train_seconds"],
            "eval_seconds": results["epochs"][0]["eval_seconds"],
            "metrics": results["metrics"]["validation"],
            "trainable_parameters": results["trainable_parameters"],
        }
        if FLAGS.race == "lora":
            record.update(
                {f: recipe_flags[f] for f in ("lora_rank", "learning_rate")}
            )
    else:
        command = common.script_command(
            __file__, f"--worker={contestant}", f"--task={task}", f"--seed={k}",
            *common.flag_values("glue_dir"),
        )  # fmt: skip
        record, total, _ = common.run_worker(command, env=env)
    if "metrics" in record and FLAGS.race != "raw_text":
        record["dev_accuracy"] = record.pop("metrics")["accuracy"]
    speed = record["num_train_examples"] / record["train_seconds"]
    return dict(
        record, task=task, seed=k, total_seconds=round(total, 1),
        total_cpu_seconds=round(common.children_cpu_seconds() - cpu_before, 1),
        train_examples_per_second=round(speed, 2), **context,
    )  # fmt: skip


def tools_summary(records):
    import numpy as np

    keys = "train_examples_per_second train_seconds eval_seconds total_seconds"
    keys = keys.split()
    rows = [
        "| contestant | rounds | training examples/s | training (s) | evaluation "
        "(s) | total job (s) | dev accuracy, mean ± std | dev accuracy (each "
        "round's seed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ratios = [
        "\nPaired ratios to the recipe (per round, the same seed; >1: the "
        "recipe is faster; a bfloat16 peer is paired with recipe_bf16):\n",
        "| contestant | paired with | rounds | training examples/s (ours / "
        "peer) | total job time (peer / ours) | per round (training; total) |",
        "|---|---|---|---|---|---|",
    ]
    paired = []
    for name in RACES["tools"][1].split():
        reference = PAIRED_WITH.get(name, "recipe")
        paired += [
            (reference, *p)
            for p in common.paired_values(records, reference, [name])
        ]
    for reference, contestant, rounds, values in paired:
        accuracy = values(contestant, "dev_accuracy")
        spread = np.std(accuracy, ddof=1) if len(accuracy) > 1 else 0.0
        medians = [f"{np.median(values(contestant, k)):.1f}" for k in keys]
        rows.append(
            f"| {contestant} | {common.listed(rounds)} | {' | '.join(medians)} "
            f"| {np.mean(accuracy):.4f} ± {spread:.4f} "
            f"| {common.listed(accuracy, '{:.4f}')} |"
        )
        if contestant != reference:
            train = values(reference, keys[0]) / values(contestant, keys[0])
            total = values(contestant, keys[3]) / values(reference, keys[3])
            each = "; ".join(f"{a:.2f}, {b:.2f}" for a, b in zip(train, total))
            ratios.append(
                f"| {contestant} | {reference} | {common.listed(rounds)} "
                f"| {np.median(train):.2f} | {np.median(total):.2f} | {each} |"
            )
    commands, *context = common.context_note(records)
    first = records[("recipe", min(r for _, r in records))]
    ran = [name for _, name, *_ in paired]
    notes = {
        "keras_hub": "The goal's peers are keras_hub and hf_trainer (each "
        "tool's defaults); hf_trainer_grouped changes only the Trainer's "
        "batching.",
        "keras_hub_xla": "keras_hub_xla changes only keras-hub's "
        "`jit_compile` (True).",
        "torch_grouped": "torch_grouped is a plain PyTorch loop on the "
        "Trainer's length-grouped batches with the recipe's settings (issue "
        "38's peer: goal ≥1.3× in total job time).",
        "torch_grouped_bf16": "recipe_bf16 and torch_grouped_bf16 are the "
        "two with bfloat16 compute (Keras' mixed_bfloat16; torch.autocast), "
        "compared with each other.",
    }
    if "hf_trainer" in ran:
        ran.append("keras_hub")
    return [
        "The whole SST-2 fine-tuning job, TSV files to dev accuracy "
        f"({commands}; see the script's docstring for what each contestant "
        f"runs): MiniLM-L6-H384, {first['num_train_examples']} training "
        "examples, sequence 128, batch 32, lr 2e-5, 1 epoch; medians over the "
        "rounds each row names, each round alternating its contestants "
        "(round k: seed k for every contestant), each job a fresh process; "
        "each peer is paired with the recipe's job of the same round. "
        + " ".join(note for name, note in notes.items() if name in ran),
        *context,
        "",
        *rows,
        *ratios,
    ]


def lora_summary(records):
    import numpy as np

    rows = [
        "| configuration | LoRA rank | learning rate | trainable parameters | "
        "SST-2 dev accuracy, mean (each seed) | training examples/s, median "
        "(each seed) |",
        "|---|---|---|---|---|---|",
    ]
    for name in RACES["lora"][1].split():
        runs = [records[k] for k in sorted(records) if k[0] == name]
        if runs:
            first, seeds = runs[0], common.listed(r["seed"] for r in runs)
            accuracies = [r["dev_accuracy"] for r in runs]
            speeds = [r["train_examples_per_second"] for r in runs]
            rows.append(
                f"| {name} | {first['lora_rank'] or '-'} "
                f"| {first['learning_rate']:g} | {first['trainable_parameters']:,} "
                f"| {np.mean(accuracies):.4f} (seeds {seeds}: "
                f"{common.listed(accuracies, '{:.4f}')}) "
                f"| {np.median(speeds):.1f} ({common.listed(speeds, '{:.1f}')}) |"
            )
    _, *context = common.context_note(records)
    examples = next(iter(records.values()))["num_train_examples"]
    return [
        "LoRA against full fine-tuning, SST-2 through `recipes/glue.py` "
        "(`python benchmarks/finetune_job.py --race=lora`): all-MiniLM-L6-v2, "
        f"{examples} training examples, sequence 128, batch 32, 1 epoch, 10% "
        "warmup; each job a fresh process, the configurations alternating "
        "(round k: seed k). Only `--lora_rank` and `--learning_rate` differ. "
        "Examples/s: training examples over the epoch's training wall time.",
        *context,
        "",
        *rows,
    ]


def compile_auto_summary(records):
    rounds = common.paired_rounds(records, ["recipe", "compile_auto"])
    if not rounds:
        raise SystemExit(f"No complete round in {output_dir()}.")
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


def speed_by_load(speeds, loads, cores):
    """The raw-text speed ratios (`speeds`, per "<task> round <k>") of the
    rounds on a quiet machine and of those that shared it (by `loads`)."""
    groups = {}
    for name, ratio in speeds.items():
        kind = "on a quiet machine"
        if not loads[name]:
            kind = "with no load recorded"
        elif common.shared(loads[name], cores):
            kind = "on a machine shared with other jobs"
        groups.setdefault(kind, []).append((name, ratio, loads[name]))
    sentences = []
    for kind, rounds in sorted(groups.items()):
        names, ratios, spans = zip(*rounds)
        span = sum(spans, [])
        speed = dict.fromkeys(f"{r:.2f}" for r in (min(ratios), max(ratios)))
        sentences.append(
            kind
            + (f" (load average {min(span):g}-{max(span):g})" if span else "")
            + f", {common.listed(names)}: raw-text `fit` at "
            f"{'-'.join(speed)}x the recipe's examples/s"
        )
    trust = len(groups) > 1 and "on a quiet machine" in groups
    return "; ".join(sentences + ["trust the quiet rounds"] * trust)


def raw_text_summary(tasks):
    import numpy as np

    rows = [
        "| task | metric | recipe | raw_text `fit` | difference (points) | recipe "
        "examples/s | raw_text examples/s | speed ratio (raw_text / recipe) | rounds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    differences, speeds, loads, sources, machines = [], {}, {}, set(), set()
    contestants = ("recipe", "raw_text")
    for task in [t for t in tasks if os.path.isdir(f"{output_dir()}/{t}")]:
        records, values = common.round_values(
            f"{output_dir()}/{task}", contestants
        )
        rounds = sorted({r for _, r in records})
        machines |= {r["machine"] for r in records.values()}
        sources |= {r.get("load_average_source", "") for r in records.values()}
        rate = {c: values(c, "train_examples_per_second") for c in contestants}
        speed = rate["raw_text"] / rate["recipe"]
        for r, ratio in zip(rounds, speed):
            speeds[f"{task} round {r}"], loads[f"{task} round {r}"] = ratio, []
            for job in [records[(c, r)] for c in contestants]:
                # As the job started, or the range read by hand while it ran.
                loads[f"{task} round {r}"] += (
                    [job["load_average"]]
                    if "load_average" in job
                    else job.get("load_average_range", [])
                )
        for name in METRICS[task]:
            ours, theirs = (
                np.array([m[name] for m in values(c, "metrics")])
                for c in ("raw_text", "recipe")
            )
            differences.append(np.abs(ours - theirs).max())
            rows.append(
                f"| {task} | {name} | {np.mean(theirs):.4f} | {np.mean(ours):.4f} "
                f"| {100 * np.mean(ours - theirs):+.2f} | {np.median(rate['recipe']):.1f} "
                f"| {np.median(rate['raw_text']):.1f} | {np.median(speed):.3f} "
                f"({common.listed(speed, '{:.3f}')}) | {len(rounds)} |"
            )
    machines, source = sorted(machines), "; ".join(sorted(sources - {""}))
    same = (
        "Equal metrics to every digit in every round: with the same seed, `fit` "
        "trains on the recipe's very batches."
        if max(differences) == 0
        else f"Metrics differ by up to {100 * max(differences):.2f} points."
    )
    return [
        "`BertClassifier.fit`/`evaluate` on raw strings against `recipes/glue.py` "
        "with the same settings (`python benchmarks/finetune_job.py "
        "--race=raw_text`; see its docstring): all_minilm_l6_v2_en, sequence "
        "128, batch 32, lr 2e-5 with 10% warmup and linear decay, 1 epoch, seed "
        "k in round k, like-length batches cut to their longest row; each job a "
        "fresh process, alternating. Examples/s over the training epoch. "
        f"{same} The recipe runs under `OneDeviceStrategy` with the runner's "
        "callbacks (backup, per-epoch evaluation, progress), which this table "
        "does not ablate. The speed ratio by the machine's load"
        + (f" ({source})" if source else "")
        + f": {speed_by_load(speeds, loads, common.cores(machines[0]))}.",
        *machines,
        "",
        *rows,
    ]


def main(argv):
    del argv
    if FLAGS.worker:
        return common.print_result(WORKERS[FLAGS.worker]())
    contestants = FLAGS.contestants or RACES[FLAGS.race][1].split()
    if FLAGS.race == "raw_text":
        with tempfile.TemporaryDirectory() as cache:
            env = None if FLAGS.summarize else hub_environment(cache)
            for task in [] if FLAGS.summarize else FLAGS.tasks:
                common.run_rounds(
                    lambda c, k, task=task: run_job(c, k, task, env),
                    contestants, f"{output_dir()}/{task}", FLAGS.first_round,
                    FLAGS.rounds,
                )  # fmt: skip
        lines = raw_text_summary(FLAGS.tasks)
    else:
        with tempfile.TemporaryDirectory() as sample:
            if FLAGS.train_examples and not FLAGS.summarize:
                FLAGS.glue_dir = sst2_sample(
                    FLAGS.glue_dir, FLAGS.train_examples, sample
                )
            if not FLAGS.summarize:
                common.run_rounds(
                    run_job, contestants, output_dir(), FLAGS.first_round,
                    FLAGS.rounds,
                )  # fmt: skip
        records = common.by_round(common.read_records(output_dir()))
        summary = {"tools": tools_summary, "lora": lora_summary}
        lines = summary.get(FLAGS.race, compile_auto_summary)(records)
    common.publish(RACES[FLAGS.race][0], "\n".join(lines) + "\n")


if __name__ == "__main__":
    define_flags()
    app.run(main)
