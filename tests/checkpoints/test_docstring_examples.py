"""The examples in the checkpoint API's docstrings run, and print what their
comments say."""

import ast
import inspect
import re

import numpy as np
import pytest

import keras_bert
from keras_bert.checkpoints import checkpoint_config
from keras_bert.checkpoints import google_reader
from keras_bert.checkpoints import huggingface_reader
from keras_bert.checkpoints import keras_hub_files
from keras_bert.checkpoints import keras_hub_reader
from keras_bert.checkpoints import keras_hub_tokenizer
from keras_bert.checkpoints import keras_hub_weights
from keras_bert.checkpoints import load_checkpoint
from keras_bert.checkpoints import read_checkpoint
from keras_bert.checkpoints import save_huggingface
from keras_bert.checkpoints import weight_map

DOCUMENTED = [
    keras_bert.checkpoints.Checkpoint,
    read_checkpoint,
    load_checkpoint,
    save_huggingface,
    huggingface_reader.read_huggingface_checkpoint,
    checkpoint_config.backbone_config_from_checkpoint_config,
    checkpoint_config.huggingface_config_from_backbone,
    google_reader.google_to_huggingface_name,
    google_reader.huggingface_to_google_name,
    weight_map.weight_map,
    keras_bert.checkpoints.save_keras_hub_preset,
    keras_hub_reader.read_keras_hub_preset,
    keras_hub_files.is_keras_hub_preset,
    keras_hub_files.resolve_kaggle_handle,
    keras_hub_tokenizer.keras_hub_tokenizer_arguments,
    keras_hub_weights.keras_hub_table,
    keras_bert.BertBackbone.from_checkpoint,
    keras_bert.models.Task.from_checkpoint,
    keras_bert.checkpoints.read_checkpoint_config,
    keras_bert.checkpoints.load_preset,
    keras_hub_reader.read_keras_hub_config,
    keras_bert.BertBackbone.from_preset,
    keras_bert.models.Task.from_preset,
    keras_bert.models.presets.suggest_preset,
]


def _example(obj):
    match = re.search(r"```python\n(.*?)```", inspect.getdoc(obj), re.S)
    assert match, f"{obj.__qualname__} has no example"
    return match.group(1)


def _expected(lines, statement):
    """The literal in a `# value` comment on or right after `statement`."""
    same_line = lines[statement.end_lineno - 1].partition("  # ")[2]
    following = lines[statement.end_lineno : statement.end_lineno + 1]
    next_line = following[0].strip() if following else ""
    for text in (same_line, next_line.removeprefix("# ")):
        try:
            return True, ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
    return False, None


@pytest.mark.parametrize("obj", DOCUMENTED, ids=lambda o: o.__qualname__)
def test_example_runs(obj, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = _example(obj)
    lines = source.splitlines()
    module = inspect.getmodule(obj)
    namespace = {**vars(module), "keras_bert": keras_bert, "np": np}
    for statement in ast.parse(source).body:
        code = ast.Module([statement], type_ignores=[])
        if isinstance(statement, ast.Expr):
            value = eval(
                compile(ast.Expression(statement.value), "ex", "eval"),
                namespace,
            )
            has_expected, expected = _expected(lines, statement)
            if isinstance(expected, tuple):
                value = tuple(value)
            if has_expected:
                assert value == expected, ast.unparse(statement)
        else:
            exec(compile(code, "example", "exec"), namespace)
