"""Not a recipe: what every training and export recipe imports first, so
that it runs on TensorFlow's fastest CPU backend.

TensorFlow's Linux x86 wheels turn their oneDNN kernels on by default only
on CPUs with AVX512-VNNI, AVX512-BF16, AVX-VNNI or AMX
(`DefaultOneDnnPolicy` in tensorflow/core/util/port.cc); on the others
(AVX2-only servers, e.g. AMD EPYC before Zen 4) they run on Eigen's
kernels, where a fine-tuning job ran slower (issue 50's measurement).
A recipe is our own entry point, so on such a CPU it turns oneDNN on
(`TF_ENABLE_ONEDNN_OPTS=1`, read by TensorFlow once, at import: hence
this module comes before `import keras_bert`) and says so in one log line,
unless the user set `TF_ENABLE_ONEDNN_OPTS` themselves. The library never
does this: `import keras_bert` leaves a user's process as TensorFlow set
it (README, "Install", gives the setting).

    import cpu_backend  # first: before TensorFlow is imported
    import keras_bert
    ...
    if __name__ == "__main__":
        cpu_backend.run(main)

It also keeps TensorFlow's C++ start-up lines (oneDNN, CUDA stubs, CPU
instructions) out of a recipe's output, unless the user set
`TF_CPP_MIN_LOG_LEVEL`: they are printed before TensorFlow reads that
variable, so TensorFlow is imported here with its stderr held, and any
other line is passed on. On a machine without a GPU driver the level
defaults to 3, which also drops `failed call to cuInit` (TensorFlow's
probe of a GPU that cannot be there); with a driver TensorFlow's own
level stays, so its GPU lines show. `TF_CPP_MIN_LOG_LEVEL=0` shows all.
"""

import logging as python_logging
import os
import platform
import re
import sys
import tempfile

from absl import app
from absl import logging

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
# The /proc/cpuinfo flags of the CPU features on which TensorFlow turns
# oneDNN on by itself.
ONEDNN_DEFAULT_FLAGS = (
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)


def cpu_flags(cpuinfo="/proc/cpuinfo"):
    try:
        # A kernel file, which tf.io.gfile reads as empty (its size is 0).
        with open(cpuinfo, errors="replace") as file:  # gfile-exempt: procfs
            for line in file:
                if line.split(":")[0].strip() == "flags":
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def prefer_onednn(environ, flags, machine):
    """Sets `TF_ENABLE_ONEDNN_OPTS=1` in `environ` on an x86-64 Linux CPU
    whose `flags` lack every one of `ONEDNN_DEFAULT_FLAGS`, unless
    `environ` already sets it; returns the sentence to log, or `None`
    where nothing was changed."""
    if VARIABLE in environ or machine not in ("x86_64", "AMD64"):
        return None
    if not flags or set(ONEDNN_DEFAULT_FLAGS) & flags:
        return None  # TensorFlow's default is oneDNN already (or unknown)
    environ[VARIABLE] = "1"
    return (
        "This CPU has none of "
        f"{', '.join(ONEDNN_DEFAULT_FLAGS)}, so TensorFlow would leave its "
        f"oneDNN kernels off: this recipe sets {VARIABLE}=1 (faster "
        f"training and serving here). Set {VARIABLE}=0 to keep "
        "TensorFlow's default."
    )


LOG_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
# Device files of an NVIDIA (or WSL, ROCm) GPU driver.
GPU_DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg")
GPU_DRIVER_FILES += ("/dev/kfd",)
# TensorFlow's start-up lines that tell a recipe's user nothing.
START_UP_NOISE = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|port\.cc:\d+\] oneDNN custom operations are on"
    r"|cudart_stub\.cc:\d+\] Could not find cuda drivers"
    r"|cpu_feature_guard\.cc:\d+\] This TensorFlow binary is optimized"
    r"|^To enable the following instructions: .* compiler flags\.$"
)


def quiet_tensorflow(environ, gpu_driver):
    """Sets `TF_CPP_MIN_LOG_LEVEL=3` in `environ` where there is no
    `gpu_driver` and the variable is unset; returns the sentence to log,
    or `None` where nothing was changed."""
    if LOG_VARIABLE in environ or gpu_driver:
        return None
    environ[LOG_VARIABLE] = "3"
    return (
        "No GPU driver here: this recipe turns TensorFlow's C++ log off "
        f"(its failed GPU probe included); set {LOG_VARIABLE}=0 to see it."
    )


def import_tensorflow_quietly(noise=START_UP_NOISE):
    """Imports TensorFlow with its stderr held; writes back the lines that
    `noise` does not match (all of them if the import fails)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as held:
        os.dup2(held.fileno(), 2)
        failed = True
        try:
            import tensorflow  # noqa: F401

            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            lines = held.read().decode(errors="replace").splitlines(True)
            sys.stderr.writelines(
                line for line in lines if failed or not noise.search(line)
            )


MESSAGE = (
    prefer_onednn(os.environ, cpu_flags(), platform.machine())
    if platform.system() == "Linux"
    else None
)
# Unless the user set TF_CPP_MIN_LOG_LEVEL, TensorFlow's log is the recipe's.
QUIET = LOG_VARIABLE not in os.environ
LOG_MESSAGE = None
if QUIET:
    has_gpu_driver = any(
        os.path.exists(path)  # gfile-exempt: device files, before TensorFlow
        for path in GPU_DRIVER_FILES
    )
    LOG_MESSAGE = quiet_tensorflow(os.environ, has_gpu_driver)
    import_tensorflow_quietly()


class TensorFlowInfoFilter(python_logging.Filter):
    """Drops the INFO records logged from TensorFlow's own files (saving
    a SavedModel: its assets, fingerprint, sharding callback, ...)."""

    def __init__(self, directory):
        super().__init__()
        self.directory = os.path.join(directory, "")

    def filter(self, record):
        return record.levelno > python_logging.INFO or not (
            record.pathname.startswith(self.directory)
        )


def quiet_tensorflow_python_log():
    """TensorFlow's Python INFO lines off: through its own logger and
    through absl's handler (where most of its modules log)."""
    import tensorflow

    python_logging.getLogger("tensorflow").setLevel("WARNING")
    directory = os.path.dirname(os.path.abspath(tensorflow.__file__))
    logging.get_absl_handler().addFilter(TensorFlowInfoFilter(directory))


def run(main):
    """`absl.app.run(main)`, logging first what this module chose."""

    def logged(argv):
        if QUIET:
            quiet_tensorflow_python_log()
        for message in (MESSAGE, LOG_MESSAGE):
            if message:
                logging.info(message)
        return main(argv)

    app.run(logged)
