"""Plots loss, MLM accuracy and NSP accuracy from a pre-training run's
TensorBoard logs (train and held-out) into a small PNG.

Usage: python plot_curves.py MODEL_DIR OUTPUT_PNG STEPS_PER_CHECKPOINT
    [BASELINES_JSON] [RUN_START_STEPS]

RUN_START_STEPS (comma-separated, one per run of the recipe, e.g. `0,750`):
the step each run's event file starts at, for logs whose epochs restart at
0 when a run resumes.
"""

import collections
import glob
import os
import sys

import matplotlib
import tensorflow as tf

matplotlib.use("Agg")
from matplotlib import pyplot as plt  # noqa: E402


def read_scalars(directory, run_start_epochs=None):
    """{tag: [(epoch, value)]} from every event file under `directory`, in
    the order they were written (one per run of the recipe), each file's
    epochs shifted by its `run_start_epochs` entry."""
    scalars = collections.defaultdict(dict)
    paths = sorted(glob.glob(os.path.join(directory, "events.out.*")))
    for index, path in enumerate(paths):
        points = []
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                number = (
                    tf.make_ndarray(value.tensor)
                    if value.HasField("tensor")
                    else value.simple_value
                )
                points.append((value.tag, event.step, float(number)))
        offset = run_start_epochs[index] if run_start_epochs else 0
        for tag, step, number in points:
            scalars[tag][step + offset] = number
    return {tag: sorted(points.items()) for tag, points in scalars.items()}


def main(
    model_dir, output, steps_per_checkpoint, baselines=None, run_starts=None
):
    interval = int(steps_per_checkpoint)
    run_start_epochs = None
    if run_starts:
        run_start_epochs = [int(s) // interval for s in run_starts.split(",")]
    trivial = {}
    if baselines and baselines != "-":
        import json

        with open(baselines) as f:
            values = json.load(f)
        trivial = {
            "mlm_logits_mlm_accuracy": values[
                "mlm_accuracy_most_frequent_token"
            ],
            "nsp_logits_nsp_accuracy": values["nsp_accuracy_majority"],
        }
    train = read_scalars(
        os.path.join(model_dir, "tensorboard", "train"), run_start_epochs
    )
    held_out = read_scalars(
        os.path.join(model_dir, "tensorboard", "validation"), run_start_epochs
    )
    panels = [
        ("loss", "loss (MLM + NSP)"),
        ("mlm_logits_mlm_accuracy", "MLM accuracy"),
        ("nsp_logits_nsp_accuracy", "NSP accuracy"),
    ]
    figure, axes = plt.subplots(1, 3, figsize=(10, 2.8), dpi=80)
    for axis, (name, title) in zip(axes, panels):
        for scalars, label, style in (
            (train, "train", "-"),
            (held_out, "held-out", "o-"),
        ):
            points = scalars.get(f"epoch_{name}")
            if points:
                epochs, values = zip(*points)
                steps = [(epoch + 1) * interval for epoch in epochs]
                axis.plot(steps, values, style, label=label, markersize=3)
        if name in trivial:
            axis.axhline(
                trivial[name], color="gray", linestyle="--", label="trivial"
            )
        axis.set_title(title, fontsize=9)
        axis.set_xlabel("training step", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(output)
    print("tags:", sorted(train), sorted(held_out))


if __name__ == "__main__":
    main(*sys.argv[1:])
