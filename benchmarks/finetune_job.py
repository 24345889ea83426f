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

import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.finetune import compile_auto  # noqa: E402
from benchmarks.finetune import lora  # noqa: E402
from benchmarks.finetune import peers  # noqa: E402
from benchmarks.finetune import profile  # noqa: E402
from benchmarks.finetune import raw_text  # noqa: E402
from benchmarks.finetune import tools  # noqa: E402
from benchmarks.finetune.jobs import FLAGS  # noqa: E402
from benchmarks.finetune.jobs import METRICS  # noqa: E402
from benchmarks.finetune.jobs import RACES  # noqa: E402
from benchmarks.finetune.jobs import hub_environment  # noqa: E402
from benchmarks.finetune.jobs import output_dir  # noqa: E402
from benchmarks.finetune.jobs import run_job  # noqa: E402


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


WORKERS = {
    "profile_recipe": lambda: profile.run_profile_recipe(START),
    "profile_torch_grouped": lambda: profile.run_profile_torch(START),
    "compile_auto": compile_auto.run_compile_auto,
    "raw_text": raw_text.run_raw_text,
    "keras_hub": peers.run_keras_hub,
    "keras_hub_xla": lambda: peers.run_keras_hub(jit_compile=True),
    "hf_trainer": peers.run_hf_trainer,
    "hf_trainer_grouped": lambda: peers.run_hf_trainer(group_by_length=True),
    "torch_grouped": peers.run_torch_grouped,
    "torch_grouped_bf16": lambda: peers.run_torch_grouped("mixed_bfloat16"),
}


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
        lines = raw_text.raw_text_summary(FLAGS.tasks)
    else:
        with tempfile.TemporaryDirectory() as sample:
            if FLAGS.train_examples and not FLAGS.summarize:
                FLAGS.glue_dir = compile_auto.sst2_sample(
                    FLAGS.glue_dir, FLAGS.train_examples, sample
                )
            if not FLAGS.summarize:
                common.run_rounds(
                    profile.profile_job if FLAGS.race == "profile" else run_job,
                    contestants, output_dir(), FLAGS.first_round,
                    FLAGS.rounds,
                )  # fmt: skip
        records = common.by_round(common.read_records(output_dir()))
        summary = {
            "tools": tools.tools_summary,
            "lora": lora.lora_summary,
            "compile_auto": compile_auto.compile_auto_summary,
            "profile": lambda r: profile.profile_summary(r, FLAGS.top_ops),
        }
        lines = summary[FLAGS.race](records)
    common.publish(RACES[FLAGS.race][0], "\n".join(lines) + "\n")


if __name__ == "__main__":
    define_flags()
    app.run(main)
