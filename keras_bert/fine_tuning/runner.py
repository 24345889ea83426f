"""The fine-tuning runner every task shares: `run_fine_tuning`."""

import dataclasses
import functools
import json
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert import files
from keras_bert.fine_tuning import run_files
from keras_bert.keras_workarounds import global_random_state_restored
from keras_bert.serving import export_saved_model
from keras_bert.serving.cpu import server_cpu
from keras_bert.serving.plan import check_options
from keras_bert.training.distribution import remove_write_directory
from keras_bert.training.distribution import support_distributed_fit
from keras_bert.training.distribution import write_directory
from keras_bert.training.epoch_evaluation import EpochEvaluation
from keras_bert.training.epoch_evaluation import load_weights_only
from keras_bert.training.gradient_accumulation import (
    check_gradient_accumulation_steps,
)
from keras_bert.training.optimizers import TRAINING_DEFAULTS
from keras_bert.training.optimizers import training_defaults
from keras_bert.training.pretraining import summary_frequency
from keras_bert.training.progress_logger import ProgressLogger
from keras_bert.training.static_shapes import trace_per_shape
from keras_bert.training.strategies import check_fit_support
from keras_bert.training.strategies import create_strategy
from keras_bert.training.strategies import is_chief
from keras_bert.training.warmup_linear_decay import WarmupLinearDecay
from keras_bert.validation import check_positive_int
from keras_bert.version import __version__

# The fields every results.json has; a task's extras may not replace them.
SHARED_RESULTS = (
    "task",
    "metrics",
    "best_epoch",
    "monitor",
    "epochs",
    "num_train_examples",
    "trainable_parameters",
    "resumed_from_epoch",
    "stopped_early",
    "stopped_at_epoch",
    "export_dir",
    "config",
    "wall_time_seconds",
    "versions",
)

# What a head without defaults of its own trains with.
_DEFAULTS = TRAINING_DEFAULTS["fine_tuning"]


@dataclasses.dataclass
class FineTuningResult:
    """What `run_fine_tuning` returns.

    Attributes:
        results: dict. What `results.json` holds.
        model: the fine-tuned model, with the best epoch's weights.
        preprocessor: the preprocessor `build_model` returned.
        is_chief: bool. Whether this process wrote into `model_dir` (the
            only one that does in a multi-worker run).
    """

    results: dict
    model: keras.Model
    preprocessor: object
    is_chief: bool


def _restores_dtype_policy(function):
    """Keras' dtype policy is global state: a run sets it for itself only."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        policy = keras.config.dtype_policy()
        try:
            return function(*args, **kwargs)
        finally:
            keras.config.set_dtype_policy(policy)

    return wrapper


@_restores_dtype_policy
@global_random_state_restored()
def run_fine_tuning(
    task,
    model_dir,
    epochs=_DEFAULTS.epochs,
    batch_size=_DEFAULTS.batch_size,
    learning_rate=None,
    warmup_fraction=_DEFAULTS.warmup_fraction,
    seed=0,
    strategy="one_device",
    tpu=None,
    mixed_precision=None,
    export_dir=None,
    export_precision="float32",
    export_check_cpu=True,
    export_server_cpu=None,
    config=None,
    adam_epsilon_hat=True,
    lora_rank=0,
    gradient_accumulation_steps=1,
    early_stopping_patience=None,
    overwrite=False,
):
    """Fine-tunes a task's model, keeps its best epoch, writes its results.

    Creates the `tf.distribute` strategy before any other TensorFlow work,
    reads the task's data, builds and compiles its model in the
    strategy's scope (AdamW with the model's
    `keras_bert.training.TRAINING_DEFAULTS`, linear warmup then linear
    decay, as BERT fine-tunes) and trains it, evaluating it after every
    epoch with `task.evaluate` on whole eval sets. The best epoch by
    `task.monitor` is kept and its weights restored at the end; then the
    task writes its own files (`task.write_outputs`) and, with
    `export_dir`, the model is exported with its preprocessor for serving.
    Keras' global dtype policy is set for the run and put back when it
    returns.

    Files in `model_dir`:

        results.json        the task, metrics per eval split (best epoch),
                            every epoch's metrics, config, wall time,
                            versions, and the task's extras
        best.weights.h5     the best epoch's weights (the model's only,
                            no optimizer state: the size of the model)
        eval_history.json   per-epoch metrics, updated as training goes
        logs/               TensorBoard: training loss (per epoch and
                            every few steps), learning rate and the eval
                            metrics per epoch
        backup/             the last finished epoch, with the optimizer
                            state (removed at the end)

    A run that stopped (crash, preemption) resumes from its last finished
    epoch when started again with the same `model_dir`: the weights,
    optimizer state and epoch come back from `backup/`, the metrics of
    the epochs before from `eval_history.json`, and the task's epoch-
    seeded data order makes the resumed run train on the batches an
    uninterrupted run trains on. In a multi-worker run every worker
    trains, evaluates and exports (these involve every worker), but only
    the chief writes into `model_dir` and `export_dir`; the others write
    to a temporary directory, seeded with the chief's backup so that a
    restarted job resumes everywhere from the same epoch, and removed at
    the end. `model_dir` must then be on storage all workers share. A
    `model_dir` whose run finished (`results.json`, no `backup/`) is
    refused with a `ValueError` naming its best epoch, unless
    `overwrite=True`, which removes its files and trains from scratch.

    Args:
        task: a `keras_bert.fine_tuning.FineTuningJob`.
        model_dir: str. The run's directory (any path `tf.io.gfile`
            accepts); resumes from it.
        epochs: int. Training epochs. Defaults to `3`.
        batch_size: int. Global training batch size, per micro-batch
            with `gradient_accumulation_steps`. Defaults to `32`.
        learning_rate: float or `None`. Peak learning rate; `None` takes
            the model's (`TRAINING_DEFAULTS[model.TASK_NAME]`, e.g. `2e-5`
            for a classifier, `5e-5` for question answering).
        warmup_fraction: float. Share of the update steps spent warming
            up. Defaults to `0.1`.
        seed: int. Seed of initialisation, dropout and data order. The
            process's global random state (Python's, NumPy's,
            TensorFlow's, Keras') is as it was when this returns.
        strategy: str or `tf.distribute.Strategy`. A name for
            `keras_bert.training.create_strategy`, or a strategy created
            before any other TensorFlow work. Defaults to `"one_device"`.
        tpu: str or `None`. With `strategy="tpu"`: the TPU to use.
        mixed_precision: str or `None`. A Keras dtype policy such as
            `"mixed_bfloat16"`; `None` or `"none"` trains in float32.
        export_dir: str or `None`. If set, the best model is exported
            with its preprocessor to `export_dir/<version>/`.
        export_precision: `"float32"` or `"bfloat16"`: the export's
            `precision` (`keras_bert.serving.export_saved_model`),
            checked, with the CPU, before training. Defaults to
            `"float32"`.
        export_check_cpu: bool. The export's `check_cpu`: `False` exports
            bfloat16 on a CPU without AVX512-BF16 or AMX, with a warning.
            Defaults to `True`.
        export_server_cpu: `None`, or the kind of CPU the export will
            serve on: the export's `server_cpu` (e.g. `"avx2"`), checked
            before training. Defaults to `None`: this CPU.
        config: dict or `None`. The run's configuration (e.g. a recipe's
            flags), logged and written to `results.json`. Defaults to
            this function's arguments.
        adam_epsilon_hat: bool. `False` adds AdamW's epsilon as PyTorch
            and Hugging Face do, after the bias correction (see
            `keras_bert.training.AdamW`); the default is Keras' "epsilon
            hat". Defaults to `True`.
        lora_rank: int. If > 0, LoRA of this rank is enabled on the
            model's backbone once the checkpoint is loaded, before
            compiling (`BertBackbone.enable_lora`): only the LoRA weights
            and the head train, and the export serves them merged. LoRA
            usually wants a higher `learning_rate` (`5e-4` to `1e-3`); this
            does not change it. Defaults to `0`: every weight trains.
        gradient_accumulation_steps: int. Each update sums the gradients
            of this many micro-batches of `batch_size`, run one after the
            other (see `keras_bert.models.Task.compile`): the run trains
            as with `batch_size * gradient_accumulation_steps` (same
            batches, updates and schedule; same weights to float rounding
            for a loss that is a mean over examples, as the classifier's
            and span head's) in the activation memory of `batch_size`.
            Steps, epochs, warmup and checkpoints count updates. Defaults
            to `1`.
        early_stopping_patience: int or `None`. Stop once `task.monitor`
            has not improved for this many epochs (a resumed run counts
            the epochs before the interruption too); the best epoch's
            weights are restored as always, and `results.json`'s
            `stopped_early` and `stopped_at_epoch` say so. The schedule
            still decays over `epochs`. Defaults to `None`: every epoch.
        overwrite: bool. Retrain a `model_dir` whose run finished (or
            was interrupted) from scratch, removing its files. Defaults
            to `False`: a finished run is refused, an interrupted one
            resumes.

    Returns:
        A `FineTuningResult`.

    Example:
    ```python
    task = keras_bert.fine_tuning.glue.GlueFineTuning("rte", model_fn, data_dir)
    result = run_fine_tuning(task, "runs/rte", epochs=3, batch_size=32)
    result.results["metrics"]  # {"validation": {"accuracy": ...}}
    ```
    """
    start = time.time()
    _check_arguments(task, epochs, batch_size, warmup_fraction)
    check_gradient_accumulation_steps(gradient_accumulation_steps)
    if export_dir:
        # Before training: an export refused after hours of it is lost.
        check_options(
            precision=export_precision,
            check_cpu=export_check_cpu,
            cpu=export_server_cpu and server_cpu(export_server_cpu),
        )
    # The strategy comes before any other TensorFlow work: a multi-worker
    # strategy must configure collective ops at program start.
    if isinstance(strategy, str):
        strategy = create_strategy(strategy, tpu=tpu)
    check_fit_support(strategy)
    if config is None:
        config = {
            "model_dir": model_dir,
            "epochs": epochs,
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "warmup_fraction": warmup_fraction,
            "seed": seed,
            "mixed_precision": mixed_precision,
            "export_dir": export_dir,
            "export_precision": export_precision,
            "adam_epsilon_hat": adam_epsilon_hat,
            "lora_rank": lora_rank,
            "gradient_accumulation_steps": gradient_accumulation_steps,
            "early_stopping_patience": early_stopping_patience,
            "overwrite": overwrite,
        }
    chief = is_chief(strategy)
    if chief or not overwrite:  # only the chief removes files
        run_files.check_finished_run(model_dir, overwrite)
    tf.io.gfile.makedirs(model_dir)
    # One line (results.json keeps it too): a log reads as one per event.
    logging.info("Resolved configuration: %s", json.dumps(config, default=str))
    # Seeds the process for this run only: `global_random_state_restored`
    # puts the caller's random state back when the run returns.
    keras.utils.set_random_seed(seed)
    if mixed_precision and mixed_precision != "none":
        keras.mixed_precision.set_global_policy(mixed_precision)

    # Data first: a missing file fails before any model is built.
    task.load_data()

    run_dir = write_directory(model_dir, strategy)
    if not chief:
        run_files.copy_resume_state(model_dir, run_dir)
    with strategy.scope():
        model, preprocessor = task.build_model()
        if lora_rank:
            # After the checkpoint's weights, before compiling: the
            # optimizer is built for the LoRA weights and the head only.
            model.backbone.enable_lora(lora_rank)
    trainable_parameters = sum(
        int(math.prod(w.shape)) for w in model.trainable_weights
    )
    logging.info("Trainable parameters: %d", trainable_parameters)
    # Counted after build_model: a task may count rows it makes with the
    # preprocessor (e.g. SQuAD's windows).
    num_train_examples = int(task.num_train_examples)
    # A batch of `batch_size * gradient_accumulation_steps` is one update,
    # run as micro-batches of `batch_size`.
    update_batch_size = batch_size * gradient_accumulation_steps
    steps_per_epoch = math.ceil(num_train_examples / update_batch_size)
    total_steps = steps_per_epoch * epochs
    defaults = training_defaults(getattr(model, "TASK_NAME", None))
    if learning_rate is None:
        learning_rate = defaults.learning_rate
        if config.get("learning_rate") is None:
            config["learning_rate"] = learning_rate
        logging.info("Learning rate (the model's default): %g", learning_rate)
    with strategy.scope():
        model.compile(
            optimizer=defaults.create_optimizer(
                WarmupLinearDecay(
                    learning_rate,
                    total_steps=total_steps,
                    warmup_steps=int(warmup_fraction * total_steps),
                ),
                epsilon_hat=adam_epsilon_hat,
            ),
            # Only a model that accumulates takes the argument (a task's
            # own keras.Model need not).
            **(
                {"gradient_accumulation_steps": gradient_accumulation_steps}
                if gradient_accumulation_steps > 1
                else {}
            ),
        )
    if task.static_batch_shapes:
        # One trace per batch shape (the last batch of an epoch is
        # smaller), so that the fused kernels run.
        trace_per_shape(model)
    # Keras 3 workarounds so that fit under a strategy equals one device.
    support_distributed_fit(model)

    paths = run_files.run_paths(run_dir)
    history = run_files.resumable_history(paths)
    evaluation = EpochEvaluation(
        task.evaluate,
        task.monitor,
        mode=task.monitor_mode,
        best_weights_path=paths["best_weights"],
        history_path=paths["history"],
        history=history,
        patience=early_stopping_patience,
        weights_model=task.weights_model(model),
    )
    # BackupAndRestore saves weights, optimizer state and epoch after the
    # evaluation has recorded that epoch, and restores them on a restart.
    backup = keras.callbacks.BackupAndRestore(paths["backup"])
    first_epoch = min(run_files.backed_up_epochs(paths["backup"]), epochs - 1)
    # After `evaluation`, which adds each epoch's eval metrics to the logs.
    tensorboard = keras.callbacks.TensorBoard(
        paths["logs"], update_freq=summary_frequency(steps_per_epoch)
    )
    # A resumed run whose last epoch had stopped it early trains no more.
    if evaluation.stopped_at_epoch is None:
        model.fit(
            task.train_dataset(update_batch_size, seed, first_epoch, epochs),
            steps_per_epoch=steps_per_epoch,
            epochs=epochs,
            callbacks=[
                evaluation,
                tensorboard,
                backup,
                # A line every 100 steps (or quarter of an epoch): an epoch
                # can take hours, and verbose=2 prints only at its end.
                ProgressLogger(
                    steps_per_epoch,
                    every_steps=min(100, max(1, steps_per_epoch // 4)),
                ),
            ],
            shuffle=False,  # the task's dataset orders each epoch itself
            verbose=2,
        )

    run_files.remove_backup(paths)
    best = evaluation.best
    load_weights_only(task.weights_model(model), paths["best_weights"])
    # Writing outputs and exporting can involve every worker (collective
    # ops), so all go on; the others' files land in their run_dir.
    outputs = task.write_outputs(model, run_dir)
    export = None
    if export_dir:
        export = str(
            export_saved_model(
                task.serving_model(model),
                preprocessor,
                export_dir if chief else os.path.join(run_dir, "export"),
                precision=export_precision,
                check_cpu=export_check_cpu,
                server_cpu=export_server_cpu,
                **task.export_options(),
            )
        )
        logging.info("Exported the model with its preprocessor to %s", export)

    results = {
        "task": task.name,
        "metrics": best["metrics"],
        "best_epoch": best["epoch"],
        "monitor": evaluation.monitor,
        "epochs": evaluation.epochs,
        "num_train_examples": num_train_examples,
        "trainable_parameters": trainable_parameters,
        "resumed_from_epoch": (history or {}).get("last_epoch"),
        "stopped_early": evaluation.stopped_at_epoch is not None,
        "stopped_at_epoch": evaluation.stopped_at_epoch,
    }
    for extras in (task.results_extras(), outputs):
        _add_extras(results, extras, task)
    results.update(
        {
            "export_dir": export,
            "config": config,
            "wall_time_seconds": round(time.time() - start, 1),
            "versions": {
                "keras_bert": __version__,
                "keras": keras.__version__,
                "tensorflow": tf.__version__,
            },
        }
    )
    results = _json_ready(results)
    results_path = os.path.join(run_dir, "results.json")
    files.write_json(results_path, results, allow_nan=False)
    logging.info("Wrote %s", results_path)
    remove_write_directory(run_dir, model_dir)
    return FineTuningResult(results, model, preprocessor, chief)


def _check_arguments(task, epochs, batch_size, warmup_fraction):
    check_positive_int("epochs", epochs)
    check_positive_int("batch_size", batch_size)
    if not 0 <= warmup_fraction <= 1:
        raise ValueError(
            "Received an invalid value for argument `warmup_fraction`, "
            f"expected a number in [0, 1]. Received: "
            f"warmup_fraction={warmup_fraction!r}"
        )
    if not task.name or not task.monitor:
        raise ValueError(
            f"{type(task).__name__} must set `name` and `monitor` (the "
            "'<split>/<metric>' that picks the best epoch). Received: "
            f"name={task.name!r}, monitor={task.monitor!r}"
        )


def _add_extras(results, extras, task):
    clashes = sorted(set(extras) & set(SHARED_RESULTS))
    if clashes:
        raise ValueError(
            f"{type(task).__name__} returned results fields {clashes}, which "
            "run_fine_tuning writes itself; give them other names."
        )
    results.update(extras)


def _json_ready(value):
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value
