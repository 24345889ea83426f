"""What this process's CPU runs: the facts a serving plan is made from
(its flags and TensorFlow's backend read by
`keras_bert.training.cpu_backend`).

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

from keras_bert.training.cpu_backend import cpu_flags
from keras_bert.training.cpu_backend import cpuinfo_field
from keras_bert.training.cpu_backend import onednn_enabled

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
        model=cpuinfo_field("model name") or "unknown",
        flags=frozenset(cpu_flags()),
        onednn=onednn_enabled(),
        int8_kernel=int8_matmul_supported(),
    )
