"""benchmarks/serving_ops.py's modes, one module each: the race of the
exports (`ops`: ops, outputs, time), `threads`, `accuracy`; the
exports and their settings in `exports`. The flags are the script's."""
