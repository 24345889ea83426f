import gc
import importlib
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

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


def pytest_sessionstart(session):
    """Keeps the libraries' own objects out of every later collection.

    The module teardown below runs a full garbage collection, whose cost
    grows with every object the process holds: with TensorFlow, PyTorch and
    transformers imported that is millions of import-time objects that can
    never be garbage, and each teardown took about 2 s (a fifth of the
    suite). `gc.freeze` moves them to a generation the collector skips;
    everything the tests create is still collected.
    """
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
    """Each test starts with the absl logger's level as it found it.

    A recipe run in-process parses absl's flags, which sets the `absl`
    logger to the `--verbosity` level (WARNING by default) for the rest of
    the process; a later test that expects INFO messages in `caplog` would
    then see none, depending on the order the tests ran in.
    """
    import logging

    logger = logging.getLogger("absl")
    level = logger.level
    yield
    logger.setLevel(level)


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
