"""benchmarks/throughput.py --race=ablation: each variant undoes one
optimisation."""

import os

from absl import app

from benchmarks import common
from benchmarks.contestants import synthetic
from benchmarks.throughput_races.shared import FLAGS
from benchmarks.throughput_races.shared import alternating_windows

# Each ablation variant: the optimisations it switches off.
SWITCHED_OFF = {
    "package": (),
    "keras_adamw": (),
    "keras_layers": tuple(
        "xla_fused_ops closed_form_layer_norm half_bits_dropout "
        "closed_form_gelu".split()
    ),
    "fused_qkv_5d": ("split_qkv_first",),
    "unfused": ("xla_fused_ops",),
    "full_last_block": ("query_positions_only",),
}


def ablation_race():
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_bert.layers.optimizations import ALL

    tf.config.threading.set_intra_op_parallelism_threads(os.cpu_count())
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.config.set_dtype_policy(FLAGS.precision)
    variants = FLAGS.contestants or list(SWITCHED_OFF)
    if set(variants) - set(SWITCHED_OFF) or variants[0] != "package":
        raise app.UsageError(
            f"--contestants: 'package', then some of {list(SWITCHED_OFF)}."
        )
    steps = {}
    for variant in variants:
        model, dataset = synthetic.keras_training(
            "ours",
            FLAGS.task,
            optimizations=[n for n in ALL if n not in SWITCHED_OFF[variant]],
            keras_adamw=variant == "keras_adamw",
        )
        model.fit(dataset, steps_per_epoch=3, verbose=0)  # traces, warms up
        steps[variant] = (model.train_function, iter(dataset))
    seconds = alternating_windows(steps, FLAGS.rounds, window=1)
    package = np.array(seconds["package"])
    tokens = synthetic.BATCH * synthetic.SEQUENCE
    rows = [
        [v, f"{1000 * np.median(s):.0f}", f"{tokens / np.median(s):.0f}"]
        + [f"{np.median(np.array(s) / package):.3f}"]
        for v, s in seconds.items()
    ]
    header = ["variant", "step ms (median)", "tokens/s", "× package"]
    pretrain = FLAGS.task == "pretrain"
    section = f"ablation_{'pretrain_' * pretrain}{FLAGS.precision}"
    model = "The classifier"
    if pretrain:
        model = "The pre-training model (MLM + NSP, 20 predictions)"
    c = synthetic.CONFIG
    return (
        section * (not FLAGS.contestants),
        f"""## Ablation: what each optimisation is worth, {FLAGS.task}, {FLAGS.precision}

Machine: {common.machine_description()}.
Command: `python benchmarks/throughput.py --race=ablation --rounds={FLAGS.rounds} --precision={FLAGS.precision}{" --task=pretrain" * pretrain}`.
{model} of `--race=train` (L{c["num_layers"]}/H{c["hidden_dim"]}, batch {synthetic.BATCH}, sequence {synthetic.SEQUENCE},
AdamW), built once per variant in one process; each variant undoes one
optimisation (see the script's docstring); {FLAGS.rounds} rounds of one training
step per variant, alternating. "× package" is the median of the paired
step-time ratios variant / package (>1: the optimisation pays).

{chr(10).join(common.table(header, rows))}
""",
    )
