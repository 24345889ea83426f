"""A bad data file stops `recipes/classify.py` and
`recipes/multiple_choice.py` with one `error: ...` line, before any
strategy or model: no traceback, no model directory, no configuration
logged (the runner logs it before it builds the model). So does a missing
`--predict_file`, or a `--model_dir` without a finished run to predict
with (`recipes/ner.py` too)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def run(recipe, tmp_path, *flags):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "recipes", recipe),
         "--preset=bert_tiny", f"--vocabulary={tmp_path / 'vocab.txt'}",
         f"--model_dir={tmp_path / 'run'}", *flags],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip


@pytest.mark.parametrize(
    "recipe, files, flags, message",
    [
        ("classify.py", {"train.tsv": b"sentence\tlabel\na\t1\nb\t0\n"}, (),
         "train.tsv: no text column; columns found: ['sentence', 'label']. "
         "Set --text_column"),
        # Each run imports TensorFlow (~10 s): these two as slow tests.
        pytest.param(
            "classify.py", {"train.csv": b"text,label\na,1\nb,0\n",
                            "dev.csv": b"text,label\ncaf\xe9,1\n"},
            ("--eval_file=dev.csv",),
            r"dev.csv, line 2 (byte 14): b'\xe9,1\n' is not UTF-8",
            marks=pytest.mark.slow),
        pytest.param(
            "multiple_choice.py", {"train.csv": b"sent1,label\na,0\n"}, (),
            "train.csv: columns ['sent1', 'label']; SWAG's layout",
            marks=pytest.mark.slow),
    ],
)  # fmt: skip
def test_a_bad_file_is_one_line_before_any_model(
    tmp_path, recipe, files, flags, message
):
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    paths = {name: tmp_path / name for name in files}
    process = run(
        recipe, tmp_path, f"--train_file={paths[next(iter(files))]}",
        *(flag.replace("=", f"={tmp_path}/") for flag in flags),
    )  # fmt: skip
    assert process.returncode == 1, process.stderr[-2000:]
    last = process.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {tmp_path}/{message}"), last
    assert "Traceback" not in process.stderr
    assert "Resolved configuration" not in process.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_reading_the_data_first_starts_no_tensorflow_runtime():
    # A multi-worker strategy must configure collectives before the
    # runtime starts, and the recipes read their files before it.
    code = (
        "from tensorflow.python.eager import context\n"
        "from keras_bert.fine_tuning.classify import ClassificationFineTuning\n"
        "import tempfile, os\n"
        "path = os.path.join(tempfile.mkdtemp(), 'train.csv')\n"
        "open(path, 'w').write('text,label\\n' + 'a,x\\nb,y\\n' * 10)\n"
        "job = ClassificationFineTuning(path, None, None)\n"
        "job.load_data()\n"
        "print(len(job.train), context.context()._initialized)\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True,
        timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert process.stdout.split() == ["18", "False"], process.stderr[-2000:]


@pytest.mark.parametrize(
    "recipe, files, message",
    [
        ("ner.py", {}, "No such file: {tmp}/new.txt. Pass an existing file."),
        # Each run imports TensorFlow (~10 s): these two as slow tests.
        pytest.param(
            "multiple_choice.py",
            {"new.txt": '{"context": "a", "choices": ["b", "c"]}\n'},
            "No finished run in {tmp}/run: {tmp}/run/results.json does "
            "not exist. Predict with the --model_dir of a finished training "
            "run, or pass --train_file",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "classify.py", {"new.txt": "a text\n"},
            "No finished run in {tmp}/run: ", marks=pytest.mark.slow,
        ),
    ],
)  # fmt: skip
def test_a_missing_predict_file_or_run_is_one_line_before_any_model(
    tmp_path, recipe, files, message
):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    process = run(recipe, tmp_path, f"--predict_file={tmp_path}/new.txt")
    assert process.returncode == 1, process.stderr[-2000:]
    last = process.stderr.strip().splitlines()[-1]
    assert last.startswith("error: " + message.format(tmp=tmp_path)), last
    assert "Traceback" not in process.stderr
    assert not (tmp_path / "run").exists()
