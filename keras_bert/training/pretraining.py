"""Running `BertMaskedLM` pre-training: checkpoints, resume, export."""

import json
import os
import time

import keras
import tensorflow as tf
from absl import logging

CHECKPOINT_DIR = "checkpoints"
TENSORBOARD_DIR = "tensorboard"


def checkpointed_step(model_dir, steps_per_checkpoint):
    """The step of the latest checkpoint in `model_dir`, or 0 if none.

    Args:
        model_dir: str. The run's directory.
        steps_per_checkpoint: int. The run's checkpoint interval.
    """
    path = os.path.join(model_dir, CHECKPOINT_DIR, "training_metadata.json")
    if not tf.io.gfile.exists(path):
        return 0
    with tf.io.gfile.GFile(path) as f:
        return int(json.load(f)["epoch"]) * steps_per_checkpoint


def pretrain(
    model,
    dataset,
    model_dir,
    num_train_steps,
    steps_per_checkpoint=1000,
    validation_data=None,
    validation_steps=None,
    callbacks=(),
    verbose="auto",
):
    """Trains `model` for `num_train_steps`, resuming from `model_dir`.

    One Keras "epoch" is one checkpoint interval of `steps_per_checkpoint`
    steps; `keras.callbacks.BackupAndRestore` saves the weights *and* the
    optimizer's variables (its step counter, hence the learning-rate
    schedule, and its moments) at the end of each. Calling `pretrain`
    again with the same `model_dir` after a crash restores the latest
    checkpoint and trains only the remaining steps, so at most one interval
    is lost. The checkpoint is kept at the end: a finished run re-run does
    nothing. TensorBoard logs (losses, MLM and NSP accuracy, learning
    rate) go to `model_dir/tensorboard`.

    Args:
        model: a compiled `keras_bert.BertMaskedLM` (built under the
            strategy's scope if one is used).
        dataset: `tf.data.Dataset` of `(features, labels)`, repeating.
        model_dir: str. Where checkpoints and logs go.
        num_train_steps: int. Total steps of the run, a multiple of
            `steps_per_checkpoint`.
        steps_per_checkpoint: int. Defaults to `1000`.
        validation_data, validation_steps: optional, passed to `fit` (run
            at every checkpoint).
        callbacks: extra Keras callbacks.
        verbose: `fit`'s verbosity. Defaults to `"auto"` (progress bar).

    Returns:
        A dict: `resumed_from_step`, `final_step`, `steps_this_run`,
        `seconds`, `steps_per_second` and `history` (per-interval metrics
        of this run).

    Example:
    ```python
    model = keras_bert.BertMaskedLM(backbone)
    pretrain(model, dataset, "runs/tiny", num_train_steps=100,
             steps_per_checkpoint=20)
    ```
    """
    for name, value in (
        ("num_train_steps", num_train_steps),
        ("steps_per_checkpoint", steps_per_checkpoint),
    ):
        if not isinstance(value, int) or value < 1:
            raise ValueError(
                f"Received an invalid value for argument `{name}`, expected "
                f"a positive integer. Received: {name}={value!r}"
            )
    if num_train_steps % steps_per_checkpoint:
        rounded = -(-num_train_steps // steps_per_checkpoint)
        raise ValueError(
            f"num_train_steps={num_train_steps} is not a multiple of "
            f"steps_per_checkpoint={steps_per_checkpoint}; checkpoints fall "
            "on interval ends. Use e.g. num_train_steps="
            f"{rounded * steps_per_checkpoint}."
        )
    tf.io.gfile.makedirs(model_dir)
    resumed_from_step = checkpointed_step(model_dir, steps_per_checkpoint)
    if resumed_from_step:
        logging.info(
            "Resuming from the checkpoint at step %d in %s.",
            resumed_from_step,
            model_dir,
        )
    all_callbacks = [
        keras.callbacks.BackupAndRestore(
            os.path.join(model_dir, CHECKPOINT_DIR),
            save_freq="epoch",
            delete_checkpoint=False,
        ),
        keras.callbacks.TensorBoard(
            os.path.join(model_dir, TENSORBOARD_DIR),
            update_freq=max(1, min(100, steps_per_checkpoint)),
        ),
        *callbacks,
    ]
    start = time.perf_counter()
    history = model.fit(
        dataset,
        epochs=num_train_steps // steps_per_checkpoint,
        steps_per_epoch=steps_per_checkpoint,
        validation_data=validation_data,
        validation_steps=validation_steps,
        callbacks=all_callbacks,
        verbose=verbose,
    )
    seconds = time.perf_counter() - start
    final_step = int(model.optimizer.iterations.numpy())
    steps_this_run = final_step - resumed_from_step
    logging.info(
        "Trained steps %d to %d in %.1f s.",
        resumed_from_step,
        final_step,
        seconds,
    )
    return {
        "resumed_from_step": resumed_from_step,
        "final_step": final_step,
        "steps_this_run": steps_this_run,
        "seconds": seconds,
        "steps_per_second": steps_this_run / seconds if seconds else 0.0,
        "history": {
            k: [float(x) for x in v] for k, v in history.history.items()
        },
    }


def save_pretrained(model, tokenizer, directory):
    """Saves a pre-trained model and its vocabulary for `from_checkpoint`.

    Writes the Hugging Face layout (`config.json`, `model.safetensors`,
    `vocab.txt`) with `keras_bert.checkpoints.save_huggingface`: a
    `BertMaskedLM` becomes a `BertForPreTraining` directory, which
    `BertBackbone.from_checkpoint` (backbone only),
    `BertMaskedLM.from_checkpoint` (with the heads) and `transformers`
    all read. If that exporter is not importable, writes the backbone's
    Keras config and weights (`config.json`, `model.weights.h5`) and
    `vocab.txt`, and logs a warning.

    Args:
        model: `keras_bert.BertMaskedLM` or `keras_bert.BertBackbone`.
        tokenizer: `keras_bert.BertTokenizer`.
        directory: str. Created if needed.

    Returns:
        The sorted list of file names in `directory`.

    Example:
    ```python
    save_pretrained(model, tokenizer, "runs/tiny/export")
    backbone = keras_bert.BertBackbone.from_checkpoint("runs/tiny/export")
    ```
    """
    tf.io.gfile.makedirs(directory)
    try:
        from keras_bert.checkpoints import save_huggingface
    except ImportError:
        save_huggingface = None
    if save_huggingface is not None:
        save_huggingface(model, tokenizer, directory)
    else:
        logging.warning(
            "keras_bert.checkpoints.save_huggingface is not available; "
            "saving Keras weights (model.weights.h5 + config.json) instead."
        )
        backbone = getattr(model, "backbone", model)
        backbone.save_weights(os.path.join(directory, "model.weights.h5"))
        with tf.io.gfile.GFile(
            os.path.join(directory, "config.json"), "w"
        ) as f:
            json.dump(backbone.get_config(), f, indent=2)
        with tf.io.gfile.GFile(os.path.join(directory, "vocab.txt"), "w") as f:
            f.write("".join(f"{token}\n" for token in tokenizer.vocabulary))
    return sorted(tf.io.gfile.listdir(directory))
