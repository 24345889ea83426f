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
`--race=profile` (SST-2; benchmarks/finetune_profile/): where the job's
  time goes, the recipe against torch_grouped (`--precision=
  mixed_bfloat16`: recipe_bf16 against torch_grouped_bf16), timing:
    phases   imports, data and tokenizing, the model's loading, the
             training epoch, the dev evaluation.
    steps    every training step's wall time (ours: Keras' batch begin
             to end callbacks around `fit`'s step, which pulls its batch
             from the `tf.data` pipeline inside; PyTorch: the batch's
             padding, forward, backward, the optimizer), summed and by
             batch width (tokens per row).
    input    ours: the same epoch's `tf.data` batches pulled alone,
             without training; PyTorch: its padding inside the step.
    ops      a profile of `--trace_steps` steps from the middle of the
             epoch: TensorFlow's profiler (`framework_op_stats`: self
             time per op type), `torch.profiler` (self CPU time per aten
             op), the top `--top_ops` of each.
  The recipe's side is `recipes/glue.py`'s work built from the same
  library calls (`GlueFineTuning`, `load_task_model`, the runner's
  optimizer and schedule, `fit` on `train_dataset`) without its callbacks,
  so that the steps can be timed and traced.

    python benchmarks/finetune_job.py --race=tools --rounds=3
    python benchmarks/finetune_job.py --race=lora --summarize
    python benchmarks/finetune_job.py --race=profile --rounds=1 [--steps=N]

transformers' `Trainer` needs `accelerate` (the `dev` extra).
"""

import time

START = time.time()  # --race=profile's workers: their imports' phase

import math  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

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
    "profile": ("finetune_profile", "recipe torch_grouped"),
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
    flags.DEFINE_integer(
        "steps", 0, "--race=profile: train only the epoch's first N steps "
        "(0: all of it).",
    )  # fmt: skip
    flags.DEFINE_integer("trace_steps", 20, "--race=profile: steps traced.")
    flags.DEFINE_enum(
        "precision", "float32", ["float32", "mixed_bfloat16"],
        "--race=profile: both sides' compute precision.",
    )  # fmt: skip
    flags.DEFINE_integer("top_ops", 12, "--race=profile: op types shown.")
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


def torch_start(phases):
    """The PyTorch contestants' start: the model (the recipe's dropout,
    seeded) and SST-2 read and tokenized, each phase's seconds into
    `phases` ("model", "tokenize"). Returns `(model, train, labels, dev,
    dev_labels)`: the tokenizer's encodings and the labels."""
    import transformers

    from benchmarks.contestants import torch_loop

    settings = TORCH_SETTINGS
    clock = time.time()
    model = torch_loop.from_pretrained(
        transformers.AutoModelForSequenceClassification, common.minilm_dir(),
        dropout=settings["dropout"], seed=FLAGS.seed, num_labels=2,
    )  # fmt: skip
    tokenizer = transformers.AutoTokenizer.from_pretrained(common.minilm_dir())
    phases["model"] = time.time() - clock
    clock = time.time()
    (texts, labels), (dev_texts, dev_labels) = (
        common.read_sst2(split, FLAGS.glue_dir) for split in ("train", "dev")
    )
    encode = dict(truncation=True, max_length=settings["sequence_length"])
    train, dev = tokenizer(texts, **encode), tokenizer(dev_texts, **encode)
    phases["tokenize"] = time.time() - clock
    return model, train, labels, dev, dev_labels


def torch_predict(model, dev, precision):
    """The dev rows' predicted classes, in batches sorted by length."""
    import numpy as np

    from benchmarks.contestants import torch_loop

    dev_lengths = np.array([len(ids) for ids in dev["input_ids"]])

    def logits(rows):
        with torch_loop.autocast(precision):
            return model(**padded_batch(dev, rows)).logits.float().numpy()

    outputs = torch_loop.predict(
        model, logits, len(dev_lengths), TORCH_SETTINGS["eval_batch_size"],
        order=np.argsort(-dev_lengths, kind="stable"),
    )  # fmt: skip
    predicted = np.zeros(len(dev_lengths), np.int64)
    for rows, row_logits in outputs:
        predicted[rows] = row_logits.argmax(-1)
    return predicted


def run_torch_grouped(precision="float32"):
    """The plain PyTorch loop on length-grouped batches: the job's record
    (`precision` "mixed_bfloat16": the forward passes under autocast)."""
    import numpy as np
    import torch

    from benchmarks.contestants import torch_loop

    settings = TORCH_SETTINGS
    model, train, labels, dev, dev_labels = torch_start({})
    lengths = [len(ids) for ids in train["input_ids"]]
    generator = torch.Generator().manual_seed(FLAGS.seed)
    eval_start = []

    def evaluate(epoch):
        eval_start.append(time.time())
        predicted = torch_predict(model, dev, precision)
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


def trace_window(steps, trace_steps):
    """`(first, stop)`: the `trace_steps` steps in the middle of an epoch of
    `steps` (none if the epoch is too short to leave steps around it)."""
    trace_steps = min(trace_steps, max(0, steps - 2))
    first = (steps - trace_steps) // 2
    return first, first + trace_steps


def op_table(rows, top):
    """`[(op type, seconds, share)]` of the `top` op types by self time, and
    the traced total, from `(op type, self seconds)` pairs (idle excluded)."""
    totals = {}
    for kind, seconds in rows:
        if kind != "IDLE":
            totals[kind] = totals.get(kind, 0.0) + seconds
    total = sum(totals.values())
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:top]
    return [(k, s, s / total if total else 0.0) for k, s in ranked], total


def tf_op_rows(logdir):
    """`(op type, self seconds)` of every op TensorFlow's profiler traced
    into `logdir` (its `framework_op_stats` tool)."""
    import glob
    import json

    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin

    paths = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
    data, ok = _pywrap_profiler_plugin.xspace_to_tools_data(
        paths, "framework_op_stats", {}
    )
    if not ok:
        raise RuntimeError(f"No op statistics from {paths}: {data[:300]}")
    table = json.loads(data)[0]
    ids = [column["id"] for column in table["cols"]]
    kind, self_time = ids.index("type"), ids.index("total_self_time")
    return [
        (row["c"][kind]["v"], row["c"][self_time]["v"] / 1e6)
        for row in table["rows"]
    ]


def run_profile_recipe():
    """--race=profile: the recipe's work, timed: the record."""
    import tempfile

    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.fine_tuning import load_task_model
    from keras_bert.fine_tuning.glue import GlueFineTuning
    from keras_bert.training import WarmupLinearDecay
    from keras_bert.training import training_defaults

    phases = {"imports": time.time() - START}

    def build_model(task):
        model, tokenizer = load_task_model(
            keras_bert.BertClassifier, init_checkpoint=common.minilm_dir(),
            sequence_length=128, num_classes=task.num_classes,
        )  # fmt: skip
        return model, keras_bert.BertPreprocessor(tokenizer, 128)

    clock = time.time()
    if FLAGS.precision != "float32":
        # As the recipe's --mixed_precision does (this worker's own process).
        keras.mixed_precision.set_global_policy(FLAGS.precision)
    keras.utils.set_random_seed(FLAGS.seed)
    task = GlueFineTuning(
        "sst2", build_model, data_dir=FLAGS.glue_dir, eval_batch_size=64,
        group_by_length=True,
    )  # fmt: skip
    task.load_data()
    model, _ = task.build_model()
    phases["model"] = time.time() - clock
    clock = time.time()
    examples = int(task.num_train_examples)
    task._packed()  # the tokenizer's pass over every split
    phases["tokenize"] = time.time() - clock
    epoch_steps = math.ceil(examples / 32)
    steps = min(FLAGS.steps or epoch_steps, epoch_steps)
    defaults = training_defaults(model.TASK_NAME)
    model.compile(
        optimizer=defaults.create_optimizer(
            WarmupLinearDecay(2e-5, epoch_steps, int(0.1 * epoch_steps))
        )
    )
    # The pipeline alone: the epoch's batches, nothing training.
    widths, input_seconds = [], []
    batches = iter(task.train_dataset(32, FLAGS.seed, 0, 1))
    for _ in range(steps):
        clock = time.perf_counter()
        inputs, _ = next(batches)
        input_seconds.append(time.perf_counter() - clock)
        widths.append(int(inputs["token_ids"].shape[1]))
    first, stop = trace_window(steps, FLAGS.trace_steps)
    logdir = tempfile.mkdtemp()
    marks = {"begin": [], "end": [], "cpu_begin": [], "cpu_end": []}
    profiler_seconds = []  # starting and stopping it, outside the steps

    class StepTimer(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == first:
                clock = time.perf_counter()
                tf.profiler.experimental.start(logdir)
                profiler_seconds.append(time.perf_counter() - clock)
            marks["begin"].append(time.perf_counter())
            marks["cpu_begin"].append(time.process_time())

        def on_train_batch_end(self, batch, logs=None):
            marks["end"].append(time.perf_counter())
            marks["cpu_end"].append(time.process_time())
            if batch == stop - 1:
                clock = time.perf_counter()
                tf.profiler.experimental.stop()
                profiler_seconds.append(time.perf_counter() - clock)

    clock = time.time()
    model.fit(
        task.train_dataset(32, FLAGS.seed, 0, 1), steps_per_epoch=steps,
        epochs=1, callbacks=[StepTimer()], shuffle=False, verbose=0,
    )  # fmt: skip
    # The profiler's start and stop are not the job's.
    phases["train"] = time.time() - clock - sum(profiler_seconds)
    clock = time.time()
    metrics = task.evaluate(model)
    phases["evaluate"] = time.time() - clock
    step_seconds = [b - a for a, b in zip(marks["begin"], marks["end"])]
    step_cpu = [b - a for a, b in zip(marks["cpu_begin"], marks["cpu_end"])]
    rows, traced = op_table(tf_op_rows(logdir), 10_000)
    return {
        "phases": phases,
        "widths": widths,
        "step_seconds": step_seconds,
        "step_cpu_seconds": step_cpu,
        "input_seconds": input_seconds,
        "trace_window": [first, stop],
        "traced_op_seconds": traced,
        "profiler_seconds": sum(profiler_seconds),
        "ops": rows,
        "dev_accuracy": float(metrics["validation"]["accuracy"]),
        "num_train_examples": examples,
        "precision": FLAGS.precision,
    }


def run_profile_torch():
    """--race=profile: torch_grouped's loop, timed part by part: the
    record."""
    import numpy as np
    import torch
    import transformers

    from benchmarks.contestants import torch_loop

    phases = {"imports": time.time() - START}
    settings = TORCH_SETTINGS
    model, train, labels, dev, dev_labels = torch_start(phases)
    lengths = [len(ids) for ids in train["input_ids"]]
    order = grouped_order(
        lengths, 32, torch.Generator().manual_seed(FLAGS.seed)
    )
    epoch_steps = math.ceil(len(lengths) / 32)
    steps = min(FLAGS.steps or epoch_steps, epoch_steps)
    optimizer = torch_loop.adamw(
        model, settings["learning_rate"], settings["weight_decay"],
        (settings["adam_beta_1"], settings["adam_beta_2"]),
        settings["adam_epsilon"],
    )  # fmt: skip
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, int(settings["warmup_fraction"] * epoch_steps), epoch_steps
    )
    first, stop = trace_window(steps, FLAGS.trace_steps)
    parts = {k: [] for k in ("input", "forward", "backward", "optimizer")}
    widths, step_cpu, profiler = [], [], None
    model.train()
    profiler_seconds = 0.0  # starting and stopping it, outside the steps
    clock = time.time()
    for k in range(steps):
        if k == first:
            profiler_clock = time.perf_counter()
            profiler = torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU]
            )
            profiler.__enter__()
            profiler_seconds += time.perf_counter() - profiler_clock
        marks, cpu = [time.perf_counter()], time.process_time()
        batch = padded_batch(train, order[32 * k : 32 * (k + 1)], labels)
        widths.append(int(batch["input_ids"].shape[1]))
        marks.append(time.perf_counter())
        with torch_loop.autocast(FLAGS.precision):
            loss = model(**batch).loss
        marks.append(time.perf_counter())
        torch_loop.step(
            model, optimizer, loss, settings["clipnorm"], scheduler,
            after_backward=lambda: marks.append(time.perf_counter()),
        )  # fmt: skip
        marks.append(time.perf_counter())
        step_cpu.append(time.process_time() - cpu)
        for name, a, b in zip(parts, marks, marks[1:]):
            parts[name].append(b - a)
        if k == stop - 1:
            profiler_clock = time.perf_counter()
            profiler.__exit__(None, None, None)
            profiler_seconds += time.perf_counter() - profiler_clock
    phases["train"] = time.time() - clock - profiler_seconds
    clock = time.time()
    predicted = torch_predict(model, dev, FLAGS.precision)
    phases["evaluate"] = time.time() - clock
    averages = profiler.key_averages() if profiler else []
    rows, traced = op_table(
        [(e.key, e.self_cpu_time_total / 1e6) for e in averages], 10_000
    )
    return {
        "phases": phases,
        "widths": widths,
        "step_seconds": [sum(p) for p in zip(*parts.values())],
        "step_parts": parts,
        "step_cpu_seconds": step_cpu,
        "trace_window": [first, stop],
        "traced_op_seconds": traced,
        "profiler_seconds": profiler_seconds,
        "ops": rows,
        "dev_accuracy": float(np.mean(predicted == np.asarray(dev_labels))),
        "num_train_examples": len(lengths),
        "precision": FLAGS.precision,
    }


WORKERS = {
    "profile_recipe": run_profile_recipe,
    "profile_torch_grouped": run_profile_torch,
    "compile_auto": run_compile_auto,
    "raw_text": run_raw_text,
    "keras_hub": run_keras_hub,
    "keras_hub_xla": lambda: run_keras_hub(jit_compile=True),
    "hf_trainer": run_hf_trainer,
    "hf_trainer_grouped": lambda: run_hf_trainer(group_by_length=True),
    "torch_grouped": run_torch_grouped,
    "torch_grouped_bf16": lambda: run_torch_grouped("mixed_bfloat16"),
}
# Batch widths (tokens per row) grouped for --race=profile's step table.
WIDTH_BINS = ((1, 16), (17, 24), (25, 32), (33, 48), (49, 128))
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


def profile_job(contestant, k):
    """--race=profile: one contestant's profile in a fresh process."""
    context = common.job_context()
    cpu_before = common.children_cpu_seconds()
    command = common.script_command(
        __file__, f"--worker=profile_{contestant}", f"--seed={k}",
        *common.flag_values("glue_dir", "steps", "trace_steps", "precision"),
    )  # fmt: skip
    record, seconds, _ = common.run_worker(command)
    return dict(
        record, total_seconds=round(seconds, 1),
        total_cpu_seconds=round(common.children_cpu_seconds() - cpu_before, 1),
        load_average_end=round(os.getloadavg()[0], 1), **context,
    )  # fmt: skip


def tools_summary(records):
    import numpy as np

    keys = "train_examples_per_second train_seconds eval_seconds total_seconds"
    keys = keys.split()
    rows, ratios = [], []
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
            [contestant, common.listed(rounds), *medians]
            + [f"{np.mean(accuracy):.4f} ± {spread:.4f}"]
            + [common.listed(accuracy, "{:.4f}")]
        )
        if contestant != reference:
            train = values(reference, keys[0]) / values(contestant, keys[0])
            total = values(contestant, keys[3]) / values(reference, keys[3])
            each = "; ".join(f"{a:.2f}, {b:.2f}" for a, b in zip(train, total))
            ratios.append(
                [contestant, reference, common.listed(rounds)]
                + [f"{np.median(train):.2f}", f"{np.median(total):.2f}", each]
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
        *common.table(
            ["contestant", "rounds", "training examples/s", "training (s)"]
            + ["evaluation (s)", "total job (s)", "dev accuracy, mean ± std"]
            + ["dev accuracy (each round's seed)"],
            rows,
        ),
        "\nPaired ratios to the recipe (per round, the same seed; >1: the "
        "recipe is faster; a bfloat16 peer is paired with recipe_bf16):\n",
        *common.table(
            ["contestant", "paired with", "rounds"]
            + ["training examples/s (ours / peer)"]
            + ["total job time (peer / ours)", "per round (training; total)"],
            ratios,
        ),
    ]


def lora_summary(records):
    import numpy as np

    rows = []
    for name in RACES["lora"][1].split():
        runs = [records[k] for k in sorted(records) if k[0] == name]
        if runs:
            first, seeds = runs[0], common.listed(r["seed"] for r in runs)
            accuracies = [r["dev_accuracy"] for r in runs]
            speeds = [r["train_examples_per_second"] for r in runs]
            rows.append(
                [name, first["lora_rank"] or "-", f"{first['learning_rate']:g}"]
                + [f"{first['trainable_parameters']:,}"]
                + [
                    f"{np.mean(accuracies):.4f} (seeds {seeds}: "
                    f"{common.listed(accuracies, '{:.4f}')})",
                    f"{np.median(speeds):.1f} "
                    f"({common.listed(speeds, '{:.1f}')})",
                ]
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
        *common.table(
            ["configuration", "LoRA rank", "learning rate"]
            + ["trainable parameters", "SST-2 dev accuracy, mean (each seed)"]
            + ["training examples/s, median (each seed)"],
            rows,
        ),
    ]


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


def untraced(record):
    """`(widths, step seconds)` of a record's steps outside the traced
    window (the profiler slows the steps it traces)."""
    first, stop = record["trace_window"]
    keep = [
        k for k in range(len(record["step_seconds"])) if not first <= k < stop
    ]
    return (
        [record["widths"][k] for k in keep],
        [record["step_seconds"][k] for k in keep],
    )


def width_rows(records, names):
    """Per width bin: steps and median step ms of each contestant, and
    the ratio of PyTorch's to ours."""
    rows = []
    for low, high in WIDTH_BINS:
        cells, medians = [], {}
        for name in names:
            widths, seconds = untraced(records[name])
            chosen = [s for w, s in zip(widths, seconds) if low <= w <= high]
            if chosen:
                medians[name] = statistics.median(chosen) * 1000
                cells += [len(chosen), f"{medians[name]:.0f}"]
            else:
                cells += [0, "—"]
        ratio = "—"
        if len(medians) == 2 and all(medians.values()):
            ratio = f"{medians[names[1]] / medians[names[0]]:.2f}"
        rows.append([f"{low}-{high}", *cells, ratio])
    return rows


def profiler_note(records):
    """What the train phases leave out: the profilers' start and stop
    (records before this was measured: nothing left out)."""
    if not all("profiler_seconds" in r for r in records.values()):
        return ""
    seconds = ", ".join(
        f"{name} {r['profiler_seconds']:.1f} s" for name, r in records.items()
    )
    return (
        "The train phase leaves out starting and stopping the profilers "
        f"around the traced steps ({seconds}). "
    )


def precision_note(record):
    """How a record's two sides computed (records before the flag: float32)."""
    if record.get("precision", "float32") == "float32":
        return "float32"
    return (
        f"{record['precision']} (ours: Keras' policy; PyTorch: forward "
        "passes under torch.autocast to bfloat16)"
    )


def profile_summary(records, top_ops=12):
    """The RESULTS.md section from the records (`{(contestant, round):
    record}`): the last round both contestants ran, `top_ops` op types
    of each."""
    names = RACES["profile"][1].split()
    rounds = common.paired_rounds(records, names)
    if not rounds:
        raise SystemExit("No round with both contestants: run them.")
    k = rounds[-1]
    by_name = {name: records[(name, k)] for name in names}
    ours, peer = (by_name[name] for name in names)
    phase_names = ["imports", "model", "tokenize", "train", "evaluate"]
    phase_rows = []
    totals = {
        "total job": "total_seconds",
        "total job CPU": "total_cpu_seconds",
    }
    for phase in phase_names + list(totals):
        if phase in totals and not all(
            totals[phase] in r for r in (ours, peer)
        ):
            continue
        values = [
            r[totals[phase]] if phase in totals else r["phases"][phase]
            for r in (ours, peer)
        ]
        ratio = f"{values[1] / values[0]:.2f}"
        phase_rows.append([phase, *(f"{v:.1f}" for v in values), ratio])
    steps = {name: untraced(r)[1] for name, r in by_name.items()}

    def cpu_of(record):
        first, stop = record["trace_window"]
        return [
            s
            for k, s in enumerate(record.get("step_cpu_seconds", []))
            if not first <= k < stop
        ]

    step_rows = [
        ["steps", *(len(s) for s in steps.values())],
        ["sum of step times (s)", *(f"{sum(s):.1f}" for s in steps.values())],
        ["sum of step CPU times (s; all threads)"]
        + [
            f"{sum(cpu_of(r)):.1f}" if cpu_of(r) else "—"
            for r in by_name.values()
        ],
        ["median step (ms)"]
        + [f"{statistics.median(s) * 1000:.0f}" for s in steps.values()],
        ["first step (ms; tracing and compiling)"]
        + [f"{r['step_seconds'][0] * 1000:.0f}" for r in (ours, peer)],
        ["input pipeline alone, the same batches (s)"]
        + [f"{sum(ours['input_seconds']):.1f}"]
        + [
            f"{sum(peer['step_parts']['input']):.1f} (padding, inside the steps)"
        ],
    ] + [
        [f"PyTorch {part}, all steps (s)", ""]
        + [f"{sum(peer['step_parts'][part]):.1f}"]
        for part in ("forward", "backward", "optimizer")
    ]
    op_tables = []
    for name, record in by_name.items():
        first, stop = record["trace_window"]
        op_tables += [
            "",
            f"{name}: op types by self time over steps {first}-{stop - 1} "
            f"(traced {record['traced_op_seconds']:.2f} s of op time):",
            "",
            *common.table(
                ["op type", "self s", "share"],
                [
                    [kind, f"{seconds:.2f}", f"{share:.1%}"]
                    for kind, seconds, share in record["ops"][:top_ops]
                ],
            ),
        ]
    loads = [
        f"{name} {r['load_average']}→{r['load_average_end']}"
        for name, r in by_name.items()
    ]
    commands, *context = common.context_note(records)
    return [
        "## Where the SST-2 fine-tuning job's time goes: recipe vs a "
        "length-grouped PyTorch loop",
        "",
        f"{commands} (what each side runs: the script's docstring). Round "
        f"{k} (seed {k}): {len(ours['step_seconds'])} steps of 1 epoch "
        f"of {ours['num_train_examples']} SST-2 "
        "training examples, MiniLM-L6-H384, batch 32, sequence 128, lr "
        f"2e-5, {precision_note(ours)}; dev accuracy recipe {ours['dev_accuracy']:.4f}, "
        f"torch_grouped {peer['dev_accuracy']:.4f}. {profiler_note(by_name)}"
        "Load average (1 min) "
        f"at each job's start and end: {common.listed(loads)}.",
        *context,
        "",
        *common.table(
            ["phase (s)", *names, "torch_grouped / recipe"], phase_rows
        ),
        "",
        *common.table(["steps outside the traced window", *names], step_rows),
        "",
        *common.table(
            ["batch width (tokens)", "recipe steps", "recipe median ms"]
            + ["torch_grouped steps", "torch_grouped median ms"]
            + ["torch_grouped / recipe"],
            width_rows(by_name, names),
        ),
        *op_tables,
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

    rows = []
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
                [task, name, f"{np.mean(theirs):.4f}", f"{np.mean(ours):.4f}"]
                + [f"{100 * np.mean(ours - theirs):+.2f}"]
                + [f"{np.median(rate[c]):.1f}" for c in contestants]
                + [
                    f"{np.median(speed):.3f} "
                    f"({common.listed(speed, '{:.3f}')})",
                    len(rounds),
                ]
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
        *common.table(
            [
                "task",
                "metric",
                "recipe",
                "raw_text `fit`",
                "difference (points)",
            ]
            + ["recipe examples/s", "raw_text examples/s"]
            + ["speed ratio (raw_text / recipe)", "rounds"],
            rows,
        ),
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
                    profile_job if FLAGS.race == "profile" else run_job,
                    contestants, output_dir(), FLAGS.first_round,
                    FLAGS.rounds,
                )  # fmt: skip
        records = common.by_round(common.read_records(output_dir()))
        summary = {
            "tools": tools_summary,
            "lora": lora_summary,
            "compile_auto": compile_auto_summary,
            "profile": lambda r: profile_summary(r, FLAGS.top_ops),
        }
        lines = summary[FLAGS.race](records)
    common.publish(RACES[FLAGS.race][0], "\n".join(lines) + "\n")


if __name__ == "__main__":
    define_flags()
    app.run(main)
