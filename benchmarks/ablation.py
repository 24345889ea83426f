"""What each of the package's speed optimisations is worth, in one process.

Builds the benchmark classifier (L4/H512/A8/I2048, batch 16, sequence 128;
with `--task=pretrain` the `BertMaskedLM` with 20 predictions per
sequence) several times in one process, each time with one optimisation
switched off (the backbone's `optimizations` argument, see
`keras_bert.layers.optimizations`) or, for `keras_adamw`, Keras' optimizer,
and times their training steps in alternation (A B C A B C ...), so every
variant sees the same machine load. Reported: median step time and the
paired ratio "variant step time / package step time" (>1: the
optimisation pays).

Variants (the optimisations each switches off):
  package        keras-bert as shipped (none).
  keras_adamw    `keras.optimizers.AdamW` instead of `training.AdamW`.
  keras_layers   xla_fused_ops, closed_form_layer_norm, half_bits_dropout,
                 closed_form_gelu: the backbone's LayerNorm, dropout and
                 GELU as Keras' layers and TensorFlow's differentiation
                 (Keras' defaults for all the backbone's element-wise work;
                 the heads keep the package's).
  fused_qkv_5d   split_qkv_first: the attention heads split by one 5-D
                 transpose of the fused q|k|v tensor (the package's first
                 version) instead of splitting q, k and v first.
  unfused        xla_fused_ops: the training step's element-wise chains as
                 separate TensorFlow ops instead of `layers.fused_ops`'
                 XLA-fused ones.
  full_last_block  query_positions_only: `BertBackbone.outputs_at`'s last
                 block computed at every position, then gathered, instead
                 of only where the heads read ([CLS], and the masked
                 positions).
Removed (issue 19) after measuring 0.96-1.01x on the pre-training model and
within noise on the GLUE recipe's own step (`benchmarks/recipe_steps.py`):
dropout bits from XLA's ThreeFry instead of Philox, the fused GELU's Phi in
erf form, the explicitly transposed kernel in float32 dense backward
passes, and AdamW reading a sparse gradient row by row. Then, each below
3% on every job measured (commit 16284c5's RESULTS.md): AdamW's weight
decay fused into its Adam pass (`decay_apart` 1.014-1.027) and the
masked-LM loss as two XLA passes (`keras_xent` 1.015-1.022).

    python benchmarks/ablation.py [--rounds=10] [--precision=float32]
        [--task=classify] [--variants=package,unfused,...]

Writes the "ablation_<task>_<precision>" section of benchmarks/RESULTS.md
(when all the task's variants ran).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402

flags.DEFINE_integer("rounds", 10, "Alternating rounds of timed steps.")
flags.DEFINE_string("precision", "float32", "float32 or mixed_bfloat16.")
flags.DEFINE_list("variants", None, "Variants to time; default: all.")
flags.DEFINE_enum("task", "classify", ["classify", "pretrain"], "Model.")
FLAGS = flags.FLAGS

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
VARIANTS = tuple(SWITCHED_OFF)


def _train_function(variant):
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.layers.optimizations import ALL

    data = common.synthetic_batch()
    features = {
        k: data[k] for k in ("token_ids", "segment_ids", "padding_mask")
    }
    keras.utils.set_random_seed(0)
    backbone = keras_bert.BertBackbone(
        **common.CONFIG,
        optimizations=[n for n in ALL if n not in SWITCHED_OFF[variant]],
    )
    optimizer_class = (
        keras.optimizers.AdamW
        if variant == "keras_adamw"
        else keras_bert.training.AdamW
    )
    optimizer = optimizer_class(1e-5, weight_decay=0.01)
    if FLAGS.task == "classify":
        model = keras_bert.BertClassifier(backbone, num_classes=2)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(optimizer=optimizer, loss=loss)
        labels = data["labels"]
    else:
        model = keras_bert.BertMaskedLM(backbone)
        model.compile(optimizer=optimizer)
        features["masked_positions"] = data["masked_positions"]
        labels = {
            "mlm_logits": data["masked_ids"],
            "nsp_logits": data["labels"],
        }
    dataset = tf.data.Dataset.from_tensors((features, labels))
    dataset = dataset.repeat()
    model.fit(dataset, steps_per_epoch=3, verbose=0)  # traces, warms up
    iterator = iter(dataset)
    train_function = model.train_function

    def step():
        logs = train_function(iterator)
        return {k: float(v) for k, v in logs.items()}

    return step


def main(argv):
    del argv
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import numpy as np
    import tensorflow as tf

    threads = os.cpu_count()
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.config.set_dtype_policy(FLAGS.precision)
    task_variants = list(VARIANTS)
    variants = FLAGS.variants or task_variants
    unknown = sorted(set(variants) - set(task_variants))
    if unknown or variants[0] != "package":
        raise app.UsageError(
            f"--variants must start with 'package' and name variants of "
            f"{task_variants} (--task={FLAGS.task}). "
            f"Received: --variants={','.join(variants)}"
        )
    steps = {variant: _train_function(variant) for variant in variants}
    seconds = {variant: [] for variant in variants}
    for _ in range(FLAGS.rounds):
        for variant, step in steps.items():
            start = time.perf_counter()
            step()
            seconds[variant].append(time.perf_counter() - start)
    package = np.array(seconds["package"])
    rows = []
    for variant in variants:
        values = np.array(seconds[variant])
        ratio = float(np.median(values / package))
        rows.append(
            f"| {variant} | {1000 * np.median(values):.0f} "
            f"| {16 * 128 / np.median(values):.0f} | {ratio:.3f} |"
        )
        print(rows[-1], flush=True)
    if FLAGS.variants:
        return  # a partial table: printed, not written to RESULTS.md
    model = {
        "classify": "The classifier",
        "pretrain": "The pre-training model (MLM + NSP, 20 predictions)",
    }[FLAGS.task]
    task_flag = " --task=pretrain" if FLAGS.task == "pretrain" else ""
    markdown = f"""## Ablation: what each optimisation is worth, {FLAGS.task}, {FLAGS.precision} (issue 9)

Machine: {common.machine_description()}.
Command: `python benchmarks/ablation.py --rounds={FLAGS.rounds} --precision={FLAGS.precision}{task_flag}`.
{model} of `train_throughput.py` (L{common.CONFIG["num_layers"]}/H{common.CONFIG["hidden_dim"]}, batch 16, sequence 128,
AdamW), built once per variant in one process; each variant undoes one
optimisation (see the script's docstring); {FLAGS.rounds} rounds of one training
step per variant, alternating. "× package" is the median of the paired
step-time ratios variant / package (>1: the optimisation pays).

| variant | step ms (median) | tokens/s | × package |
|---|---|---|---|
{chr(10).join(rows)}
"""
    section = f"ablation_{FLAGS.precision}"  # the classifier's
    if FLAGS.task == "pretrain":
        section = f"ablation_pretrain_{FLAGS.precision}"
    common.update_results(section, markdown)
    print(markdown)


if __name__ == "__main__":
    app.run(main)
