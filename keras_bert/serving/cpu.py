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

An export written on one machine for servers of another kind is planned
for theirs: `server_cpu(kind)` is the `Cpu` of a kind of `SERVER_CPUS`,
with oneDNN as TensorFlow sets it there by default (or as the server
sets `TF_ENABLE_ONEDNN_OPTS`).
"""

import dataclasses
import functools

from keras_bert.training.cpu_backend import ONEDNN_DEFAULT_FLAGS
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
# The kinds of server CPU an export can be planned for (`server_cpu`):
# kind → the deciding flags they have. Examples of each: "avx2": AMD EPYC
# Zen 2 and 3, Intel Xeon before Skylake-SP; "avx512": Intel Xeon
# Skylake-SP; "avx512_vnni": Intel Xeon Cascade Lake and Ice Lake;
# "avx512_bf16": Intel Xeon Cooper Lake, AMD EPYC Zen 4 and 5; "amx":
# Intel Xeon from Sapphire Rapids.
SERVER_CPUS = {
    "avx2": ("avx2",),
    "avx512": ("avx2", "avx512f"),
    "avx512_vnni": ("avx2", "avx512f", "avx512_vnni"),
    "avx512_bf16": ("avx2", "avx512f", "avx512_vnni", "avx512_bf16"),
    "amx": (
        "avx2",
        "avx512f",
        "avx512_vnni",
        "avx512_bf16",
        "amx_bf16",
        "amx_int8",
    ),
}


@dataclasses.dataclass(frozen=True)
class Cpu:
    """This process's CPU, as a serving plan reads it.

    Attributes:
        model: str. `/proc/cpuinfo`'s model name (`"unknown"` off Linux).
        flags: frozenset of str. Its flags.
        onednn: bool. TensorFlow's oneDNN is on in this process.
        int8_kernel: bool. oneDNN's int8 matmul runs and answers here.
        server: bool. A server's CPU (`server_cpu`), not this process's.

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
    server: bool = False

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

    @property
    def subject(self):
        """How messages name it: "this CPU" or "the server's CPU"."""
        return "the server's CPU" if self.server else "this CPU"


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


def server_cpu(kind, onednn=None):
    """The `Cpu` of a server of kind `kind`, for an export written here
    and served there (`export_saved_model(..., server_cpu=)`).

    Args:
        kind: str. A key of `SERVER_CPUS`: `"avx2"`, `"avx512"`,
            `"avx512_vnni"`, `"avx512_bf16"` or `"amx"`, optionally
            followed by `"+onednn"` or `"-onednn"` (as `onednn=True` or
            `False`); or a `Cpu`, returned as it is.
        onednn: bool or `None`. Whether TensorFlow's oneDNN is on in the
            server: `None` as TensorFlow turns it on by default on that
            kind (on with VNNI, AVX512-BF16 or AMX); `True` or `False` as
            the server's `TF_ENABLE_ONEDNN_OPTS=1` or `0` sets it.

    Returns:
        A `Cpu` whose `server` is `True`; its oneDNN int8 kernel runs
        where oneDNN is on (TensorFlow's Linux x86 builds have it).

    Example:
    ```python
    server_cpu("avx2").description  # "avx2 server (avx2; oneDNN off)"
    server_cpu("avx2+onednn").onednn  # True
    ```
    """
    if isinstance(kind, Cpu):
        return kind
    given = kind
    if isinstance(kind, str) and kind[-7:] in ("+onednn", "-onednn"):
        kind, onednn = kind[:-7], kind[-7] == "+"
    if not isinstance(kind, str) or kind not in SERVER_CPUS:
        raise ValueError(
            "Received an invalid value for argument `server_cpu`, expected "
            f"one of {list(SERVER_CPUS)}, optionally with '+onednn' or "
            "'-onednn' after it (or None: this CPU). Received: "
            f"server_cpu={given!r}. Name the server's kind by its flags "
            "(`grep -o -E 'avx512[a-z_0-9]*|amx[a-z_0-9]*|avx2' "
            "/proc/cpuinfo | sort -u` on the server)."
        )
    flags = frozenset(SERVER_CPUS[kind])
    if onednn is None:
        onednn = bool(flags & set(ONEDNN_DEFAULT_FLAGS))
    if not isinstance(onednn, bool):
        raise ValueError(
            "Received an invalid value for argument `onednn`, expected None "
            f"(TensorFlow's default on a {kind} CPU), True or False. "
            f"Received: onednn={onednn!r}"
        )
    return Cpu(
        model=f"{kind} server",
        flags=flags,
        onednn=onednn,
        int8_kernel=onednn,
        server=True,
    )
