"""benchmarks/finetune_job.py's race: its settings, records' directory
and the one-job runner."""

import os
import time

from absl import flags

from benchmarks import common
from benchmarks.contestants import recipe

BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The entry script: the workers run it (`--worker=...`).
SCRIPT = os.path.join(BENCHMARKS, "finetune_job.py")

# race -> its records' directory (and section), its contestants.
RACES = {
    "tools": (
        "finetune_job",
        "recipe keras_hub hf_trainer hf_trainer_grouped keras_hub_xla "
        "torch_grouped recipe_bf16 torch_grouped_bf16 recipe_eigen",
    ),
}
# The recipe flags of each contestant that runs the recipe (and its
# environment: RECIPE_ENV, as a user set it).
RECIPES = {
    "recipe": {},
    "recipe_bf16": {"mixed_precision": "mixed_bfloat16"},
    "recipe_eigen": {},
}
RECIPE_ENV = {"recipe_eigen": {"TF_ENABLE_ONEDNN_OPTS": "0"}}
# The recipe's SST-2 settings for the PyTorch loop: `recipes/glue.py`'s
# flags in `run_job` and `keras_bert.training.TRAINING_DEFAULTS[
# "classifier"]` (a test checks they agree; not imported, so that the
# PyTorch job does not pay for importing TensorFlow).
TORCH_SETTINGS = dict(
    batch_size=32, epochs=1, learning_rate=2e-5, warmup_fraction=0.1,
    weight_decay=0.01, adam_beta_1=0.9, adam_beta_2=0.999, adam_epsilon=1e-6,
    clipnorm=1.0, sequence_length=128, dropout=0.1, eval_batch_size=64,
)  # fmt: skip
FLAGS = flags.FLAGS


def output_dir():
    default = os.path.join(BENCHMARKS, RACES[FLAGS.race][0])
    return FLAGS.output_dir or default


def peer_record(examples, train_seconds, eval_start, correct):
    """A peer worker's record: its training and evaluation, its accuracy."""
    return {
        "num_train_examples": examples,
        "train_seconds": round(train_seconds, 1),
        "eval_seconds": round(time.time() - eval_start, 1),
        "metrics": {"accuracy": float(correct.mean())},
    }


def run_job(contestant, k, task="sst2", env=None):
    """One job in a fresh process; returns its record."""
    context = common.job_context()
    cpu_before = common.children_cpu_seconds()
    if contestant in RECIPES:
        recipe_flags = dict(
            {"group_by_length": True, "learning_rate": 2e-5},
            **RECIPES[contestant],
        )
        checkpoint = common.minilm_dir()
        if contestant in RECIPE_ENV:
            env = dict(env or os.environ, **RECIPE_ENV[contestant])
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
    else:
        command = common.script_command(
            SCRIPT, f"--worker={contestant}", f"--task={task}", f"--seed={k}",
            *common.flag_values("glue_dir"),
        )  # fmt: skip
        record, total, _ = common.run_worker(command, env=env)
    if "metrics" in record:
        record["dev_accuracy"] = record.pop("metrics")["accuracy"]
    speed = record["num_train_examples"] / record["train_seconds"]
    return dict(
        record, task=task, seed=k, total_seconds=round(total, 1),
        total_cpu_seconds=round(common.children_cpu_seconds() - cpu_before, 1),
        train_examples_per_second=round(speed, 2), **context,
    )  # fmt: skip
