"""What each of the package's speed optimisations is worth, in one process.

Builds the training race's model (`contestants/synthetic.py`: L4/H512,
batch 16, sequence 128; the classifier, or with `--task=pretrain` the
`BertMaskedLM` with 20 predictions) once per variant in one process, each
with one optimisation switched off (the backbone's `optimizations`, see
`keras_bert.layers.optimizations`) or, for `keras_adamw`, Keras' AdamW,
and times their training steps in alternation (A B C A B C ...), so that
every variant sees the same load. Reported: the median step time and the
paired ratio "variant step time / package step time" (>1: the
optimisation pays).

  package          keras-bert as shipped (nothing switched off).
  keras_adamw      `keras.optimizers.AdamW` instead of `training.AdamW`.
  keras_layers     xla_fused_ops, closed_form_layer_norm, half_bits_dropout,
                   closed_form_gelu: the backbone's LayerNorm, dropout and
                   GELU as Keras' layers and TensorFlow's gradients.
  fused_qkv_5d     split_qkv_first: heads split by one 5-D transpose of the
                   fused q|k|v tensor instead of splitting q, k and v first.
  unfused          xla_fused_ops: the step's element-wise chains as separate
                   TensorFlow ops instead of `layers.fused_ops`' XLA ones.
  full_last_block  query_positions_only: the last block at every position,
                   then gathered, instead of only where the heads read.

    python benchmarks/ablation.py [--rounds=10] [--precision=float32]
        [--task=classify] [--variants=package,unfused,...]

Writes the "ablation_<task>_<precision>" section of benchmarks/RESULTS.md
(when every variant ran).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.contestants import synthetic  # noqa: E402

# Each variant: the optimisations it switches off.
SWITCHED_OFF = {
    "package": (),
    "keras_adamw": (),
    "keras_layers": (
        "xla_fused_ops",
        "closed_form_layer_norm",
        "half_bits_dropout",
        "closed_form_gelu",
    ),
    "fused_qkv_5d": ("split_qkv_first",),
    "unfused": ("xla_fused_ops",),
    "full_last_block": ("query_positions_only",),
}

flags.DEFINE_integer("rounds", 10, "Alternating rounds of timed steps.")
flags.DEFINE_string("precision", "float32", "float32 or mixed_bfloat16.")
flags.DEFINE_list("variants", None, "Variants to time; default: all.")
flags.DEFINE_enum("task", "classify", ["classify", "pretrain"], "Model.")
FLAGS = flags.FLAGS


def train_step(variant):
    """The variant's compiled training step, traced and warmed up."""
    from keras_bert.layers.optimizations import ALL

    model, dataset = synthetic.keras_training(
        "ours",
        FLAGS.task,
        optimizations=[n for n in ALL if n not in SWITCHED_OFF[variant]],
        keras_adamw=variant == "keras_adamw",
    )
    model.fit(dataset, steps_per_epoch=3, verbose=0)
    iterator, train_function = iter(dataset), model.train_function
    return lambda: {k: float(v) for k, v in train_function(iterator).items()}


def main(argv):
    del argv
    import keras
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(os.cpu_count())
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.config.set_dtype_policy(FLAGS.precision)
    variants = FLAGS.variants or list(SWITCHED_OFF)
    if set(variants) - set(SWITCHED_OFF) or variants[0] != "package":
        raise app.UsageError(
            f"--variants must start with 'package' and name variants of "
            f"{list(SWITCHED_OFF)}. Received: --variants={','.join(variants)}"
        )
    steps = {variant: train_step(variant) for variant in variants}
    seconds = {variant: [] for variant in variants}
    for _ in range(FLAGS.rounds):
        for variant, step in steps.items():
            start = time.perf_counter()
            step()
            seconds[variant].append(time.perf_counter() - start)
    package = np.array(seconds["package"])
    tokens = synthetic.BATCH * synthetic.SEQUENCE
    rows = []
    for variant in variants:
        values = np.array(seconds[variant])
        rows.append(
            f"| {variant} | {1000 * np.median(values):.0f} "
            f"| {tokens / np.median(values):.0f} "
            f"| {np.median(values / package):.3f} |"
        )
        print(rows[-1], flush=True)
    if FLAGS.variants:
        return  # a partial table: printed, not written to RESULTS.md
    model = {
        "classify": "The classifier",
        "pretrain": "The pre-training model (MLM + NSP, 20 predictions)",
    }[FLAGS.task]
    pretrain = FLAGS.task == "pretrain"
    c = synthetic.CONFIG
    markdown = f"""## Ablation: what each optimisation is worth, {FLAGS.task}, {FLAGS.precision}

Machine: {common.machine_description()}.
Command: `python benchmarks/ablation.py --rounds={FLAGS.rounds} --precision={FLAGS.precision}{" --task=pretrain" if pretrain else ""}`.
{model} of `train_throughput.py` (L{c["num_layers"]}/H{c["hidden_dim"]}, batch {synthetic.BATCH}, sequence {synthetic.SEQUENCE},
AdamW), built once per variant in one process; each variant undoes one
optimisation (see the script's docstring); {FLAGS.rounds} rounds of one training
step per variant, alternating. "× package" is the median of the paired
step-time ratios variant / package (>1: the optimisation pays).

| variant | step ms (median) | tokens/s | × package |
|---|---|---|---|
{chr(10).join(rows)}
"""
    section = f"ablation_{'pretrain_' if pretrain else ''}{FLAGS.precision}"
    common.update_results(section, markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
