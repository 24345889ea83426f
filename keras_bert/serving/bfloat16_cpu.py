"""Whether this CPU multiplies bfloat16 in hardware: what an export with
`precision="bfloat16"` checks before it writes anything.

TensorFlow's oneDNN kernels run a bfloat16 matmul on the AVX512-BF16
instructions (Intel Xeon from Cooper Lake, AMD EPYC from Zen 4) or on AMX
(Intel Xeon from Sapphire Rapids). On a CPU without either, the same graph
still runs, but its bfloat16 matmuls do not run on such instructions: the
export could serve slower than float32, without saying so. So the export
refuses, naming the flags it found and the fix, unless told the server's
CPU is another one.
"""

from absl import logging

# The /proc/cpuinfo flags of the instructions oneDNN multiplies bfloat16
# on: AVX512-BF16 and AMX's bfloat16 tiles.
BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")
CPUINFO = "/proc/cpuinfo"


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
    try:
        # A kernel file of this machine, which tf.io.gfile reads as empty
        # (its size is 0).
        with open(CPUINFO, errors="replace") as file:  # gfile-exempt: procfs
            for line in file:
                name, _, value = line.partition(":")
                if name.strip() == "flags":
                    return set(value.split())
    except OSError:
        pass
    return set()


def bfloat16_cpu_problem():
    """Why this CPU does not multiply bfloat16 in hardware, or `None` where
    it has one of `BFLOAT16_FLAGS`.

    Returns:
        `None`, or a sentence naming the flags needed and what
        `/proc/cpuinfo` lists (e.g. for a benchmark that skips a bfloat16
        export here and says why).

    Example:
    ```python
    problem = bfloat16_cpu_problem()
    print(problem or "this CPU has AVX512-BF16 or AMX")
    ```
    """
    flags = cpu_flags()
    if set(BFLOAT16_FLAGS) & flags:
        return None
    related = sorted(
        flag for flag in flags if flag.startswith(("avx512", "amx"))
    )
    if related:
        found = f"{CPUINFO} lists {', '.join(related)}"
    elif flags:
        found = f"{CPUINFO} lists no avx512 or amx flag"
    else:
        found = f"{CPUINFO} could not be read"
    return (
        f"precision='bfloat16' needs a CPU with {' or '.join(BFLOAT16_FLAGS)} "
        "(AVX512-BF16 or AMX) to run bfloat16 matmuls in hardware, and for "
        f"this one {found}: here a bfloat16 export could serve slower than "
        "float32."
    )


def check_bfloat16_cpu(check_cpu=True):
    """Raises a `ValueError` unless this CPU has one of `BFLOAT16_FLAGS`
    (with `check_cpu=False`, logs a warning instead).

    Args:
        check_cpu: bool. `False` when the export is served on another CPU
            than the one exporting: then only a warning is logged.
            Defaults to `True`.
    """
    message = bfloat16_cpu_problem()
    if message is None:
        return
    if not check_cpu:
        logging.warning(
            "%s Exporting anyway (check_cpu=False): serve it on a CPU with "
            "those flags.",
            message,
        )
        return
    raise ValueError(
        f"{message} Export with precision='float32' (the default) for "
        "this CPU; or, to serve the export on another CPU that has them, "
        "pass check_cpu=False."
    )
