"""Predictions for a file, shared by the recipes' `--predict_file`.

`recipes/classify.py`, `recipes/ner.py` and `recipes/multiple_choice.py`
predict a file of new examples with the model they just trained or,
without `--train_file`, with the best epoch of a finished `--model_dir`
(`load_finished_run`), and write one JSON line per example
(`write_jsonl`) to `--predictions_file` or, by default,
`<model_dir>/predictions_<name>.jsonl` (`predictions_path`). What each
line holds is the task's: `keras_bert.fine_tuning.classify.predictions`,
`keras_bert.fine_tuning.ner.predictions`,
`keras_bert.fine_tuning.multiple_choice.predictions`.
"""

import json
import os

from absl import logging

from keras_bert import files
from keras_bert.fine_tuning.run_files import BEST_WEIGHTS
from keras_bert.fine_tuning.run_files import RESULTS


def check_predict_file(path):
    """Raises a `ValueError` naming `path` unless it is an existing file."""
    if not path or not files.exists(path):
        raise ValueError(f"No such file: {path}. Pass an existing file.")


def finished_run(model_dir):
    """The `results.json` of a finished run in `model_dir`.

    Args:
        model_dir: str. A fine-tuning run's directory.

    Returns:
        The run's results, a dict (`config`, the task's labels, ...).

    Raises:
        ValueError: naming `model_dir` and the missing file, when the run
            has no `results.json` or no `best.weights.h5`.

    Example:
    ```python
    finished_run("runs/ner")["labels"]  # ["O", "B-LOC", ...]
    ```
    """
    path = os.path.join(model_dir, RESULTS)
    weights = os.path.join(model_dir, BEST_WEIGHTS)
    for required in (path, weights):
        if not files.exists(required):
            raise ValueError(
                f"No finished run in {model_dir}: {required} does not "
                "exist. Predict with the --model_dir of a finished "
                "training run, or pass --train_file to train one first."
            )
    return files.read_json(path)


def load_finished_run(model_dir, build_model, results=None):
    """The best model of a finished run, ready to predict.

    Args:
        model_dir: str. A finished run (its `results.json` and
            `best.weights.h5`).
        build_model: callable `(results) -> (model, preprocessor)`:
            builds the model the run trained, from its results (`config`
            and the task's extras, e.g. `labels`).
        results: dict or `None`. `finished_run(model_dir)`, if read
            already (a recipe reads it before anything is built).

    Returns:
        `(model, preprocessor, results)`, the model with the best epoch's
        weights (LoRA enabled first where the run trained with
        `lora_rank`).

    Example:
    ```python
    model, preprocessor, results = load_finished_run(
        "runs/swag", lambda results: build(results["config"])
    )
    ```
    """
    if results is None:
        results = finished_run(model_dir)
    model, preprocessor = build_model(results)
    lora_rank = results.get("config", {}).get("lora_rank")
    if lora_rank:
        model.backbone.enable_lora(lora_rank)
    model.load_weights(os.path.join(model_dir, BEST_WEIGHTS))
    logging.info(
        "Loaded the best epoch (%s) of %s", results.get("best_epoch"), model_dir
    )
    return model, preprocessor, results


# The eval splits whose predictions a run writes itself
# (`predictions_<split>.jsonl`): a predicted file of that name must not
# overwrite them.
RUN_SPLITS = ("validation",)


def predictions_path(model_dir, predict_file, predictions_file=None):
    """Where predictions of `predict_file` go: `predictions_file`, or
    `<model_dir>/predictions_<predict_file's name>.jsonl`
    (`predictions_<name>_file.jsonl` for a file named like an eval split
    whose predictions the run wrote: `validation.jsonl`).

    Example:
    ```python
    predictions_path("runs/ner", "data/new.txt")
    # "runs/ner/predictions_new.jsonl"
    ```
    """
    if predictions_file:
        return predictions_file
    name = os.path.splitext(os.path.basename(predict_file))[0]
    if name in RUN_SPLITS:
        name = f"{name}_file"
    return os.path.join(model_dir, f"predictions_{name}.jsonl")


def write_jsonl(path, rows):
    """Writes `rows` (dicts) to `path`, one JSON line each (UTF-8, not
    escaped), and returns how many.

    Example:
    ```python
    write_jsonl("runs/swag/predictions_new.jsonl", [{"choice": 1}])  # 1
    ```
    """
    lines = [json.dumps(row, ensure_ascii=False) + "\n" for row in rows]
    files.write_text(path, "".join(lines))
    logging.info("Wrote %d predictions to %s", len(lines), path)
    return len(lines)
