"""keras_bert refuses to run on a non-TensorFlow Keras backend."""

import os
import subprocess
import sys


def test_import_under_another_backend_explains_the_fix():
    env = dict(os.environ, KERAS_BACKEND="numpy")
    result = subprocess.run(
        [sys.executable, "-c", "import keras_bert"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "ImportError" in result.stderr
    assert "'numpy' backend" in result.stderr
    assert "KERAS_BACKEND=tensorflow" in result.stderr


def test_backend_already_imported_as_other_is_refused():
    code = (
        "import os; os.environ['KERAS_BACKEND'] = 'numpy'\n"
        "import sys, types\n"
        "fake = types.SimpleNamespace(backend=types.SimpleNamespace("
        "backend=lambda: 'torch'))\n"
        "sys.modules['keras'] = fake\n"
        "import keras_bert\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "'torch' backend" in result.stderr
