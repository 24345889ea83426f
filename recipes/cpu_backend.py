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
"""

import os
import platform

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


MESSAGE = (
    prefer_onednn(os.environ, cpu_flags(), platform.machine())
    if platform.system() == "Linux"
    else None
)


def run(main):
    """`absl.app.run(main)`, logging first what this module chose."""

    def logged(argv):
        if MESSAGE:
            logging.info(MESSAGE)
        return main(argv)

    app.run(logged)
