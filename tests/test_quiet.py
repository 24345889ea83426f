"""Importing keras_bert prints nothing of its own."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_adds_nothing_to_tensorflows_start_up_lines():
    """TensorFlow prints its start-up lines (twice in 2.21: the profiler
    plugin's shared library logs them again); importing keras_bert and its
    subpackages after it prints no line more, no warning of ours."""
    code = (
        "import sys, tensorflow\n"
        "sys.stderr.write('TENSORFLOW IMPORTED\\n'); sys.stderr.flush()\n"
        "import keras_bert, keras_bert.checkpoints, keras_bert.fine_tuning\n"
        "import keras_bert.serving\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        timeout=300,
        check=True,
    )
    after = process.stderr.split("TENSORFLOW IMPORTED\n", 1)[1]
    assert (process.stdout, after) == ("", "")
