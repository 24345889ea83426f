"""Which CPU backend TensorFlow runs here, and a one-line hint where
another would train faster.

TensorFlow's Linux x86 wheels run their oneDNN kernels by default only on
CPUs with one of `ONEDNN_DEFAULT_FLAGS` (`DefaultOneDnnPolicy`,
tensorflow/core/util/port.cc); on the others (AVX2-only servers) they run
Eigen's, where the SST-2 fine-tuning job ran slower than with
`TF_ENABLE_ONEDNN_OPTS=1` (issue 50's measurement on an AVX2-only AMD
EPYC; no record of it is in benchmarks/ yet). TensorFlow reads
that variable once, at import, so a library cannot switch it for its
user, and keras_bert never changes it: `Task.fit` logs `onednn_hint()`
once per process instead, and the recipes (our own entry points) set it
themselves before TensorFlow starts (`recipes/cpu_backend.py`).
"""

import functools
import platform

from absl import logging

CPUINFO = "/proc/cpuinfo"
# The /proc/cpuinfo flags of the CPU features on which TensorFlow turns
# oneDNN on by itself (recipes/cpu_backend.py holds the same list: it runs
# before keras_bert may be imported; a test checks they agree).
ONEDNN_DEFAULT_FLAGS = (
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)


def cpuinfo_field(field):
    """The value of `field` for the first processor in /proc/cpuinfo, or
    `None` (no such file, e.g. off Linux)."""
    try:
        # A kernel file of this machine, which tf.io.gfile reads as empty
        # (its size is 0).
        with open(CPUINFO, errors="replace") as file:  # gfile-exempt: procfs
            for line in file:
                name, _, value = line.partition(":")
                if name.strip() == field:
                    return value.strip()
    except OSError:
        pass
    return None


def cpu_flags():
    """The CPU flags `/proc/cpuinfo` lists for the first processor (its
    `flags` line; an empty set where there is no such file, e.g. off
    Linux).

    Returns:
        A `set` of str, e.g. `{"avx512f", "avx512_bf16", ...}`.

    Example:
    ```python
    "avx2" in cpu_flags()  # True on most x86-64 servers
    ```
    """
    return set((cpuinfo_field("flags") or "").split())


def onednn_enabled():
    """Whether TensorFlow runs its oneDNN kernels in this process (what
    `TF_ENABLE_ONEDNN_OPTS` and the CPU decided when TensorFlow was
    imported)."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:  # a TensorFlow without the function: its default
        import os

        return os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") != "0"
    return bool(_pywrap_util_port.IsMklEnabled())


def onednn_hint(enabled=None, flags=None, machine=None):
    """The sentence that says how to train faster on this CPU, or `None`:
    where TensorFlow left oneDNN off on an x86-64 Linux CPU without any of
    `ONEDNN_DEFAULT_FLAGS` (not where the user turned it off on a CPU
    TensorFlow would run it on: that was a choice)."""
    enabled = onednn_enabled() if enabled is None else enabled
    flags = cpu_flags() if flags is None else flags
    machine = machine or platform.machine()
    if enabled or machine not in ("x86_64", "AMD64") or not flags:
        return None
    if set(ONEDNN_DEFAULT_FLAGS) & flags:
        return None
    return (
        "TensorFlow runs its Eigen kernels on this CPU (it turns oneDNN on "
        "by itself only with AVX512-VNNI, AVX512-BF16, AVX-VNNI or AMX); "
        "BERT trains and serves faster with TF_ENABLE_ONEDNN_OPTS=1 set "
        "before TensorFlow is imported (README, \"Your CPU's fastest "
        'backend").'
    )


@functools.cache
def log_onednn_hint():
    """Logs `onednn_hint()` once per process, where there is one."""
    hint = onednn_hint()
    if hint:
        logging.info(hint)
    return hint
