"""Throughput on fixed shapes: keras-bert's training and inference against
keras-hub and transformers (PyTorch), and the pre-training input pipeline.

The model is `contestants/synthetic.py`'s (its docstring counts the FLOPs),
on the same random ids for every contestant, each in its own process with
the same threads, the processes alternating (A B C A B C ...) so that all
see the same load; each section states its settings and its figures.

`--race=train` (section "train_throughput"): a contestant is
`<framework>_<task>_<precision>[_xla]`: framework `ours`, `hub`, `torch`
or `torch_compile` (`torch.compile`, compiled in the warm-up); task `cls`
or `pretrain` (20 masked positions; keras-hub's `BertMaskedLM` has no NSP
head); precision `fp32` or `bf16` (PyTorch: `torch.autocast`, as
transformers' Trainer runs bf16); `_xla` compiles the step with
`jit_compile=True` (keras-hub's "auto" leaves XLA off on a CPU).

`--race=inference` (section "inference"): the classifier, float32: `ours`
(`BertClassifier.predict_on_batch`), `ours_xla` (`jit_compile=True`),
`hub` (keras-hub's `BertTextClassifier.predict_on_batch`), `torch`
(`BertForSequenceClassification` under `torch.inference_mode()`),
`torch_compile`.

`--race=input_pipeline` (section "input_pipeline"): sequences/s drawn from
the TFRecord pipeline (`pretraining_dataset_from_tfrecords`) over the
instances `create_pretraining_data`'s code writes, and from the text
pipeline with dynamic masking (`pretraining_dataset_from_text`), against
the training step that consumes them (`ours_pretrain_fp32` and `_bf16`).

`--race=ablation` (section "ablation_<task>_<precision>", written when
every variant ran): `--task`'s model built once per variant in one
process, each variant undoing one optimisation (the backbone's
`optimizations`, see `keras_bert.layers.optimizations`): `package` as
shipped; `keras_adamw`: Keras' AdamW instead of `training.AdamW`;
`keras_layers`: xla_fused_ops, closed_form_layer_norm, half_bits_dropout
and closed_form_gelu off (Keras' LayerNorm, dropout and GELU layers);
`fused_qkv_5d`: split_qkv_first off (heads split by one 5-D transpose of
the fused q|k|v); `unfused`: xla_fused_ops off; `full_last_block`:
query_positions_only off (the last block at every position).

The GLUE recipe's step: MiniLM-L6-H384 (real weights) as a
`BertClassifier`, compiled as `run_fine_tuning` compiles it (BERT's AdamW,
warmup then linear decay).

`--race=recipe_steps` (section "recipe_steps"): what `recipes/glue.py
--task=sst2` runs at each step, as shipped and in variants, in one
process: each variant its own model with the same weights on the same
batches, timed in alternating windows under the same load.
  recipe           like-length batches (`--group_by_length`) each cut to its
                   longest row, Keras' train function, the last block on
                   [CLS] only (`BertBackbone.outputs_at`).
  ungrouped        plainly shuffled batches (`--nogroup_by_length`).
  full_last_block  the last block at every position (`query_positions_only`
                   off, see `keras_bert.layers.optimizations`).
  bucket_16, bucket_32, bucket_64  the batches padded to a multiple of 16,
                   32 or 64 (`keras_bert.data.trim_batch`), the step traced
                   per shape (`training.trace_per_shape`) so that the
                   XLA-fused element-wise kernels run.
  unfused_32       `bucket_32`'s batches with Keras' own train function.
  lora             (when named) the recipe with `--lora_rank=8`.

`--race=bf16_curve` (section "bf16_curve"): `--steps` steps on the same
SST-2 batches, each padded to 128, three times in fresh processes: float32
seed 0, float32 seed 1 (another head initialisation and dropout masks: the
noise to judge by) and mixed_bfloat16 seed 0; bf16 is within the noise
when its largest window gap to seed 0 is at most seed 1's.

`--race=accumulation_memory` (section "accumulation_memory"): updates of
64 random sequences, whole or as 4 micro-batches of 16 (the recipes'
`--batch_size=16 --gradient_accumulation_steps=4`), each in a fresh
process: its peak resident memory, and examples/s.

    python benchmarks/throughput.py --race=train [--rounds=3] [--steps=10]
        [--contestants=ours_cls_fp32,hub_cls_fp32,...]
    python benchmarks/throughput.py --race=inference [--rounds=3]
    python benchmarks/throughput.py --race=input_pipeline [--files=400]
    python benchmarks/throughput.py --race=ablation --rounds=12 \
        [--precision=float32] [--task=classify] [--contestants=package,...]
    python benchmarks/throughput.py --race=recipe_steps [--rounds=8] \
        [--window=10] [--contestants=recipe,lora]
    python benchmarks/throughput.py --race=bf16_curve [--steps=200]
    python benchmarks/throughput.py --race=accumulation_memory [--steps=24]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.throughput_races import ablation  # noqa: E402
from benchmarks.throughput_races import accumulation_memory  # noqa: E402
from benchmarks.throughput_races import bf16_curve  # noqa: E402
from benchmarks.throughput_races import fixed_shapes  # noqa: E402
from benchmarks.throughput_races import input_pipeline  # noqa: E402
from benchmarks.throughput_races import recipe_steps  # noqa: E402
from benchmarks.throughput_races.shared import FLAGS  # noqa: E402

# The defaults that differ by race (a flag given on the command line wins).
RACE_DEFAULTS = {
    "recipe_steps": {"rounds": 8, "warmup": 40},
    "bf16_curve": {"steps": 200},
    "accumulation_memory": {"steps": 24},
}

RACES = [
    "train", "inference", "input_pipeline", "ablation", "recipe_steps",
    "bf16_curve", "accumulation_memory",
]  # fmt: skip


def define_flags():
    """The script's flags (defined when it runs: tests import its helpers)."""
    flags.DEFINE_enum("race", "train", RACES, "What to time.")
    flags.DEFINE_integer("rounds", 3, "Alternating rounds of all contestants.")
    flags.DEFINE_list("contestants", None, "Subset to run; default: all.")
    flags.DEFINE_integer("steps", 10, "Timed steps per process.")
    flags.DEFINE_integer("warmup", 3, "Untimed steps or calls per process.")
    flags.DEFINE_integer("window", 10, "recipe_steps: steps per timed window.")
    flags.DEFINE_string("glue_dir", common.GLUE, "GLUE data directory.")
    flags.DEFINE_integer("sequence_length", 128, "accumulation_memory: tokens.")
    flags.DEFINE_float("seconds", 6.0, "inference: timed seconds per process.")
    flags.DEFINE_list("batch_sizes", ["1", "32"], "inference: batch sizes.")
    flags.DEFINE_integer("files", 400, "input_pipeline: python3.11-doc files.")
    flags.DEFINE_integer("batches", 300, "input_pipeline: timed batches.")
    flags.DEFINE_string("precision", "float32", "ablation: or mixed_bfloat16.")
    flags.DEFINE_enum("task", "classify", ["classify", "pretrain"], "ablation.")
    flags.DEFINE_string("worker", None, "Internal: run one job.")
    flags.DEFINE_integer("batch", 1, "Internal: the inference worker's batch.")


def main(argv):
    del argv
    for name, value in RACE_DEFAULTS.get(FLAGS.race, {}).items():
        if not FLAGS[name].present:
            FLAGS[name].value = value
    if FLAGS.worker:
        if FLAGS.race == "bf16_curve":
            precision, seed = FLAGS.worker.split(",")
            return bf16_curve.bf16_worker(precision, int(seed))
        if FLAGS.race == "accumulation_memory":
            return accumulation_memory.memory_worker(int(FLAGS.worker))
        return fixed_shapes.run_worker(FLAGS.worker)
    threads = os.cpu_count()
    section, markdown = {
        "train": lambda: fixed_shapes.train_race(threads),
        "inference": lambda: fixed_shapes.inference_race(threads),
        "input_pipeline": input_pipeline.pipeline_race,
        "ablation": ablation.ablation_race,
        "recipe_steps": recipe_steps.recipe_steps_race,
        "bf16_curve": bf16_curve.bf16_curve_race,
        "accumulation_memory": accumulation_memory.accumulation_memory_race,
    }[FLAGS.race]()
    common.publish(section, markdown)  # a partial race: printed only


if __name__ == "__main__":
    define_flags()
    app.run(main)
