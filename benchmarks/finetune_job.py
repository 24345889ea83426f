"""The whole GLUE fine-tuning job, TSV files to dev scores: the recipe against
other ways to run it.

Every contestant fine-tunes all-MiniLM-L6-v2 on `../shared/glue`, sequence
length 128, batch 32, 1 epoch; each job a fresh process, the contestants
alternating, the order rotated each round, round k with seed k; the
records, and the section of RESULTS.md:

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
  recipe_eigen   the recipe with `TF_ENABLE_ONEDNN_OPTS=0`: Eigen's kernels,
                 where an AVX2-only CPU's recipe would run oneDNN.
Retired races (`--race=lora`, `raw_text`, `compile_auto`, `profile`):
their records and RESULTS.md sections stay, each naming the commit whose
`benchmarks/finetune_job.py` produced it (193fb03).

    python benchmarks/finetune_job.py --race=tools --rounds=3
    python benchmarks/finetune_job.py --summarize

transformers' `Trainer` needs `accelerate` (the `dev` extra).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.finetune import peers  # noqa: E402
from benchmarks.finetune import tools  # noqa: E402
from benchmarks.finetune.jobs import FLAGS  # noqa: E402
from benchmarks.finetune.jobs import RACES  # noqa: E402
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
    flags.DEFINE_bool(
        "summarize", False, "Only write the table from the records."
    )
    flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
    flags.DEFINE_string("output_dir", None, "Records; default: the race's.")
    flags.DEFINE_string("worker", None, "Internal: run one job.")
    flags.DEFINE_string("task", "sst2", "Internal: the worker's task.")
    flags.DEFINE_integer("seed", 0, "Internal: the worker's seed.")


WORKERS = {
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
    if not FLAGS.summarize:
        common.run_rounds(
            run_job, contestants, output_dir(), FLAGS.first_round, FLAGS.rounds
        )
    records = common.by_round(common.read_records(output_dir()))
    lines = tools.tools_summary(records)
    common.publish(RACES[FLAGS.race][0], "\n".join(lines) + "\n")


if __name__ == "__main__":
    define_flags()
    app.run(main)
