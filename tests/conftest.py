import gc
import importlib
import os
import sys

import pytest

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Under pytest-xdist (`-n`, see setup.cfg) each worker is one of as many
# processes as there are cores: each runs TensorFlow's and PyTorch's ops on
# one thread, so the workers share the cores instead of oversubscribing
# them with thread pools as wide as the machine (which cost CPU time in
# spinning and switching; README, "Tests"). Set before TensorFlow or
# PyTorch is imported, which read them once; the processes the tests start
# inherit them. Only the tests' processes: the library never sets threads
# for its users.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _variable in (
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
        "OMP_NUM_THREADS",
    ):
        os.environ.setdefault(_variable, "1")

# The recipes import their sibling `cpu_backend` (recipes/cpu_backend.py)
# as a script run from recipes/ finds it: tests that load a recipe's module
# find it the same way.
sys.path.append(
    os.path.join(os.path.dirname(os.path.dirname(__file__)), "recipes")
)

# In strict mode (CI) a test that would skip for missing material (a
# corpus, the weight packages, a reference library, ../shared data) fails:
# a broken install must not go green.
STRICT = os.environ.get("KERAS_BERT_STRICT_TESTS") == "1"

# Libraries whose import-time objects live as long as the process.
_LONG_LIVED_MODULES = (
    "tensorflow",
    "keras",
    "keras_bert",
    "torch",
    "transformers",
)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """`-s` and `--pdb` run the tests in this process, not in xdist workers.

    setup.cfg runs the tests in pytest-xdist workers (`-n 2`), whose
    output pytest does not show and whose debugger cannot be reached. A
    test's printed figures (`python -m pytest -s tests/...`, as the docs
    quote them) and `--pdb` need the tests in this process.
    """
    if not config.pluginmanager.has_plugin("xdist"):
        return
    if config.getoption("capture") == "no" or config.getoption("usepdb"):
        config.option.numprocesses = 0
        config.option.dist = "no"
        config.option.tx = []


def pytest_sessionstart(session):
    """Keeps the libraries' own objects out of every later collection.

    The module teardown below runs a full garbage collection, whose cost
    grows with every object the process holds: with TensorFlow, PyTorch and
    transformers imported that is millions of import-time objects that can
    never be garbage, and each teardown took about 2 s (a fifth of the
    suite). `gc.freeze` moves them to a generation the collector skips;
    everything the tests create is still collected.

    Under pytest-xdist the controlling process runs no test: it imports
    nothing.
    """
    if session.config.pluginmanager.has_plugin("dsession"):
        return
    for name in _LONG_LIVED_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # a reference that is not installed
            pass
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="module")
def _release_keras_state():
    """Frees each test module's models and graphs before the next module.

    The whole suite runs in one process; without this, Keras' global state
    keeps every module's models alive and the process grows by gigabytes.
    (`clear_session` also runs the garbage collector.)
    """
    yield
    import keras

    keras.backend.clear_session(free_memory=True)


@pytest.fixture(autouse=True)
def _restore_absl_log_level():
    """Each test starts and ends with the absl logger at absl's own level.

    A recipe run in-process parses absl's flags, and `tf.saved_model.save`
    sets absl's verbosity: either leaves the `absl` logger at WARNING for
    the rest of the process. A later test that expects INFO messages in
    `caplog` would then see none, depending on which tests ran before it
    in the same process (a module-scoped fixture that exports runs before
    any function-scoped fixture could note the level), so the level is
    reset to absl's own (NOTSET: the root logger's) rather than restored.
    """
    import logging

    from absl import logging as absl_logging

    logger = absl_logging.get_absl_logger()
    logger.setLevel(logging.NOTSET)
    yield
    logger.setLevel(logging.NOTSET)


def _fail_if_strict(report):
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr
        if isinstance(reason, tuple):  # (file, line, "Skipped: why")
            reason = reason[2]
        report.outcome = "failed"
        report.longrepr = (
            f"{reason}\n(KERAS_BERT_STRICT_TESTS=1: a skip is a failure; "
            "install what the test needs, see .ci/run.)"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_if_strict(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_if_strict(outcome.get_result())
