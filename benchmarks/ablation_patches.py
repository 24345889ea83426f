"""The patches that undo one of the package's speed optimisations each.

Shared by `benchmarks/ablation.py` (the benchmark classifier, fixed shapes)
and `benchmarks/recipe_steps.py` (the GLUE recipe's own steps); each
variant is described in `ablation.py`'s docstring.
"""

import contextlib
import math


def _attention_5d(
    self,
    x,
    padding_mask,
    training,
    batch_size,
    seq_len,
    query_length,
    fuse=False,
):
    """The package's first attention: one 5-D transpose of q|k|v. (A last
    block computed at some positions only, `BertBackbone.outputs_at`, has
    its queries apart and keeps the package's attention.)"""
    from keras import ops

    qkv = ops.reshape(
        self.qkv_dense(x),
        (batch_size, seq_len, 3, self.num_heads, self.head_dim),
    )
    qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))
    query, key, value = qkv[0], qkv[1], qkv[2]
    query = query * ops.cast(1.0 / math.sqrt(self.head_dim), query.dtype)
    scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
    mask = None
    if padding_mask is not None:
        mask = ops.cast(padding_mask, "bool")[:, None, None, :]
    if fuse:  # as the package does
        from keras_bert.layers import fused_ops

        probs = fused_ops.attention_probabilities(
            scores,
            mask,
            self.attention_dropout,
            self.attention_probs_dropout.seed_generator.next(),
            -1e9,
            self.compute_dtype,
        )
    else:
        scores = ops.cast(scores, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, -1e9)
        probs = self.attention_probs_dropout(
            ops.softmax(scores, axis=-1), training=training
        )
    context = ops.matmul(ops.cast(probs, self.compute_dtype), value)
    # The context, before the output projection (the block applies it).
    return ops.reshape(
        ops.transpose(context, (0, 2, 1, 3)),
        (batch_size * seq_len, self.hidden_dim),
    )


def _full_outputs_at(self, inputs, positions=None):
    """`BertBackbone.outputs_at` as the whole backbone, then gathered: the
    last block computed at every position."""
    from keras import ops

    outputs = self(inputs)
    result = {"pooled_output": outputs["pooled_output"]}
    if positions is not None:
        result["sequence_output"] = ops.take_along_axis(
            outputs["sequence_output"],
            ops.cast(positions, "int32")[:, :, None],
            axis=1,
        )
    return result


def patches(variant):
    """(object, attribute, replacement) triples that undo one optimisation."""
    import keras

    from keras_bert.layers import activations
    from keras_bert.layers import dropout
    from keras_bert.layers import layer_norm
    from keras_bert.layers import transformer_encoder_block

    if variant == "keras_layers":

        def keras_layer_norm(self, inputs, training=None):
            return keras.layers.LayerNormalization.call(self, inputs)

        def keras_dropout(self, inputs, training=False):
            return keras.layers.Dropout.call(self, inputs, training=training)

        from keras_bert.layers import fused_ops

        return [
            (fused_ops, "can_fuse", lambda *tensors: False),
            (layer_norm.LayerNorm, "call", keras_layer_norm),
            (dropout.Dropout, "call", keras_dropout),
            (
                activations,
                "_exact_gelu",
                lambda x: keras.ops.gelu(x, approximate=False),
            ),
        ]
    if variant == "unfused":
        from keras_bert.layers import fused_ops

        return [(fused_ops, "can_fuse", lambda *tensors: False)]
    if variant == "full_last_block":
        from keras_bert.models import bert_backbone

        return [(bert_backbone.BertBackbone, "outputs_at", _full_outputs_at)]
    if variant == "fused_qkv_5d":
        block = transformer_encoder_block.TransformerEncoderBlock
        package_attention = block._self_attention

        def attention(self, x, queries, *args):
            if queries is not None:  # a last block at some positions only
                return package_attention(self, x, queries, *args)
            return _attention_5d(self, x, *args)

        return [(block, "_self_attention", attention)]
    return []


@contextlib.contextmanager
def applied(variant):
    """The variant's patches in place inside the block, undone after it."""
    triples = patches(variant)
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in triples]
    for obj, name, replacement in triples:
        setattr(obj, name, replacement)
    try:
        yield
    finally:
        for obj, name, original in saved:
            setattr(obj, name, original)
