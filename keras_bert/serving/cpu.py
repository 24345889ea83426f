"""What this process's CPU runs: the facts a serving plan is made from.

An export's options each need something of the CPU
(`keras_bert.serving.plan` holds which):

- oneDNN on in this TensorFlow process. TensorFlow's Linux x86 builds
  turn it on by default only on CPUs with AVX512-VNNI, AVX512-BF16,
  AVX-VNNI or AMX (`DefaultOneDnnPolicy`, tensorflow/core/util/port.cc);
  on an AVX2-only CPU it is off unless `TF_ENABLE_ONEDNN_OPTS=1` is set
  before TensorFlow is imported (the recipes do:
  `recipes/cpu_backend.py`). Without it the int8 kernels
  (`keras_bert.layers.int8_matmul`) return nothing, and bfloat16 matmuls
  run on Eigen's slow bfloat16 path.
- The oneDNN int8 matmul kernel, probed (`int8_matmul_supported`), and
  VNNI or AMX, without which its int8 products saturate.
- AVX512-BF16 or AMX, on which oneDNN multiplies bfloat16 in hardware
  (Intel Xeon from Cooper Lake, AMD EPYC from Zen 4); without them a
  bfloat16 export could serve slower than float32.
"""

import dataclasses
import functools

# The /proc/cpuinfo flags of the instructions oneDNN multiplies bfloat16
# on: AVX512-BF16 and AMX's bfloat16 tiles.
BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")
# The flags of the instructions oneDNN sums int8 products on exactly:
# VNNI (AVX-512 or AVX) and AMX's int8 tiles.
INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
CPUINFO = "/proc/cpuinfo"
# The flags a description names: those that decide TensorFlow's oneDNN
# default and the plans' kernels.
_DECIDING_FLAGS = (
    "avx2",
    "avx512f",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "amx_bf16",
    "amx_int8",
)


def _cpuinfo_field(field):
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
    return set((_cpuinfo_field("flags") or "").split())


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


@dataclasses.dataclass(frozen=True)
class Cpu:
    """This process's CPU, as a serving plan reads it.

    Attributes:
        model: str. `/proc/cpuinfo`'s model name (`"unknown"` off Linux).
        flags: frozenset of str. Its flags.
        onednn: bool. TensorFlow's oneDNN is on in this process.
        int8_kernel: bool. oneDNN's int8 matmul runs and answers here.

    Example:
    ```python
    cpu = this_cpu()
    cpu.description  # e.g. "AMD EPYC (avx2, avx512f, ...; oneDNN on)"
    ```
    """

    model: str
    flags: frozenset
    onednn: bool
    int8_kernel: bool

    @property
    def bfloat16(self):
        """Whether the CPU multiplies bfloat16 in hardware."""
        return bool(set(BFLOAT16_FLAGS) & self.flags)

    @property
    def description(self):
        """The model, the flags that decide the plans, and oneDNN."""
        shown = [flag for flag in _DECIDING_FLAGS if flag in self.flags]
        onednn = "on" if self.onednn else "off"
        return (
            f"{self.model} ({', '.join(shown) or 'no AVX2'}; oneDNN {onednn})"
        )


@functools.cache
def this_cpu():
    """The `Cpu` of this process (read once: TensorFlow decides oneDNN at
    import, and the CPU does not change)."""
    from keras_bert.layers.int8_matmul import int8_matmul_supported

    return Cpu(
        model=_cpuinfo_field("model name") or "unknown",
        flags=frozenset(cpu_flags()),
        onednn=onednn_enabled(),
        int8_kernel=int8_matmul_supported(),
    )
