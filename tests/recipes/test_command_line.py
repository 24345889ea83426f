"""A recipe's command line shows itself: `--help` lists the shared flags
as the recipe's own, and TensorFlow's start-up noise stays out of its
output unless the user sets TF_CPP_MIN_LOG_LEVEL."""

import logging
import os
import subprocess
import sys

import cpu_backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
RECIPES = os.path.join(ROOT, "recipes")
NOISE = [
    "WARNING: All log messages before absl::InitializeLog() is called are "
    "written to STDERR",
    "I0000 00:00:1796599335.008928   10210 port.cc:153] oneDNN custom "
    "operations are on. You may see slightly different numerical results",
    "I0000 00:00:1796599335.009482   10210 cudart_stub.cc:31] Could not "
    "find cuda drivers on your machine, GPU will not be used.",
]


def test_help_lists_the_shared_flags_without_tensorflows_lines():
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop(cpu_backend.LOG_VARIABLE, None)  # the user asked for nothing
    process = subprocess.run(
        [sys.executable, os.path.join(RECIPES, "classify.py"), "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )  # absl's --help exits with 1
    for flag in ("init_checkpoint", "model_dir", "epochs", "export_dir"):
        assert f"  --{flag}:" in process.stdout
    assert "--logtostderr" not in process.stdout  # not --helpfull's list
    assert not [
        line
        for line in process.stderr.splitlines()
        if cpu_backend.START_UP_NOISE.search(line) or "cuInit" in line
    ], process.stderr


def test_every_recipe_of_shared_flags_adopts_them():
    for name in sorted(os.listdir(RECIPES)):
        with open(os.path.join(RECIPES, name)) as file:
            source = file.read()
        if "recipe_flags.define_" in source:
            assert "flags.adopt_module_key_flags(recipe_flags)" in source, name


def test_the_start_up_noise_is_matched_and_nothing_else():
    for line in NOISE:
        assert cpu_backend.START_UP_NOISE.search(line), line
    for line in (
        "E0000 00:00:1796599396.613748   12275 util.cc:131] an error",
        "Traceback (most recent call last):",
        "I1206 23:23:09.406654 140239945522048 glue.py:96] Wrote the DEMO",
    ):
        assert not cpu_backend.START_UP_NOISE.search(line), line


def test_the_log_level_is_set_only_without_a_gpu_driver_and_a_choice():
    environ = {}
    message = cpu_backend.quiet_tensorflow(environ, gpu_driver=False)
    assert environ == {"TF_CPP_MIN_LOG_LEVEL": "3"}
    assert "TF_CPP_MIN_LOG_LEVEL=0 to see it" in message
    for environ, driver in (({}, True), ({"TF_CPP_MIN_LOG_LEVEL": "0"}, False)):
        before = dict(environ)
        assert cpu_backend.quiet_tensorflow(environ, driver) is None
        assert environ == before


def test_tensorflows_python_info_lines_are_dropped_and_no_others():
    keep = cpu_backend.TensorFlowInfoFilter("/site-packages/tensorflow")

    def record(path, level):
        return logging.LogRecord("absl", level, path, 1, "m", (), None)

    inside = "/site-packages/tensorflow/python/saved_model/x.py"
    assert not keep.filter(record(inside, logging.INFO))
    assert keep.filter(record(inside, logging.WARNING))
    assert keep.filter(record("/site-packages/tensorflow_text/y.py", 20))
    assert keep.filter(record("/work/recipes/glue.py", logging.INFO))
