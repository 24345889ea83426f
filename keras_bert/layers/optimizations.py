"""The named speed optimisations of the backbone's layers: one switch.

`TransformerEncoderBlock`, `BertEmbedding` and `BertBackbone` take
`optimizations`, a tuple of the names below; each name turns on one way
of computing the same function faster. Without any of them the block runs
its straight-line `reference` implementation and the layers are Keras'
own; every name switched off gives the same outputs and gradients as the
default, to float rounding (tests/layers/test_fused_ops.py). The names
are read in one place, `keras_bert.layers.block_implementations` (which
implementation runs a call, which LayerNorm and dropout layers a layer
builds). The default, `ALL`, is every one of them, and what configs saved
without the argument load with.

What each is worth on a training step is measured by switching it off:
the `ablation_*` and `recipe_steps` sections of `benchmarks/RESULTS.md`.

Example:
```python
block = keras_bert.layers.TransformerEncoderBlock(
    num_heads=2, intermediate_dim=16, optimizations=()  # the reference
)
```
"""

OPTIMIZATIONS = {
    "xla_fused_ops": (
        "In training with static shapes, the element-wise chains between "
        "the block's matmuls run as XLA-fused ops (`layers.fused_ops`). "
        "Ablation row `unfused`."
    ),
    "split_qkv_first": (
        "The fused q|k|v projection is split into q, k and v before one 4-D "
        "transpose each, instead of one 5-D transpose (slow in TensorFlow's "
        "CPU kernels). Ablation row `fused_qkv_5d`."
    ),
    "query_positions_only": (
        "With `query_positions`, the block's queries, attention output, "
        "feed-forward layer and LayerNorms run on those positions only "
        "(`BertBackbone.outputs_at`'s last block) instead of every "
        "position, then gathered. Ablation row `full_last_block`."
    ),
    "remapper_serving_graph": (
        "In a SavedModel export, the blocks run the `serving_graph` "
        "implementation, written in the forms TensorFlow's CPU remapper "
        "fuses into oneDNN kernels (`layers.remapper_forms`), its weights "
        "constants of the graph. Measured by `benchmarks/serving_ops.py` "
        "(ops) and `benchmarks/serving_ops.py --threads` (time)."
    ),
    "closed_form_layer_norm": (
        "`ClosedFormLayerNorm` instead of `keras.layers.LayerNormalization`."
        " Ablation row `keras_layers` (with the two below)."
    ),
    "half_bits_dropout": (
        "`HalfBitsDropout` instead of `keras.layers.Dropout`."
    ),
    "closed_form_gelu": (
        "Exact GELU with a hand-written derivative in training "
        "(`activations._exact_gelu`) instead of TensorFlow's "
        "differentiation of `gelu`."
    ),
}

# What the package runs by default.
ALL = tuple(OPTIMIZATIONS)


def validate_optimizations(optimizations):
    """`optimizations` as a tuple of known names; `None` means `ALL`.

    Raises a `ValueError` naming any unknown name and the known ones.
    """
    if optimizations is None:
        return ALL
    if isinstance(optimizations, str):
        optimizations = (optimizations,)
    optimizations = tuple(optimizations)
    unknown = [name for name in optimizations if name not in OPTIMIZATIONS]
    if unknown:
        raise ValueError(
            "Received an invalid value for argument `optimizations`, "
            f"expected names among {list(OPTIMIZATIONS)}. Unknown: "
            f"{unknown}. Received: optimizations={optimizations!r}"
        )
    return optimizations
