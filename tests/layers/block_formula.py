"""The encoder block's formula in float64 numpy, for the layer tests."""

import math

import numpy as np

_erf = np.vectorize(math.erf)


def _layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x, approximate):
    if approximate:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        return 0.5 * x * (1 + np.tanh(inner))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def numpy_block(x, mask, w, num_heads, approximate, return_probs=False):
    """BERT's post-LN block, written out step by step in float64 (and its
    attention probabilities, with `return_probs`); `w` as
    `block_weights` names them."""
    batch, seq, hidden = x.shape
    head = hidden // num_heads
    qkv = x @ w["qkv_kernel"] + w["qkv_bias"]
    q, k, v = np.split(qkv, 3, axis=-1)

    def split(t):  # (batch, heads, seq, head)
        return t.reshape(batch, seq, num_heads, head).transpose(0, 2, 1, 3)

    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head)
    scores = np.where(mask[:, None, None, :] == 1, scores, -1e9)
    scores = scores - scores.max(-1, keepdims=True)
    probs = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    attention = context @ w["attn_out_kernel"] + w["attn_out_bias"]
    a = _layer_norm(x + attention, w["ln1_gamma"], w["ln1_beta"])
    h = _gelu(a @ w["inter_kernel"] + w["inter_bias"], approximate)
    out = h @ w["out_kernel"] + w["out_bias"]
    y = _layer_norm(a + out, w["ln2_gamma"], w["ln2_beta"])
    return (y, probs) if return_probs else y


def block_weights(block):
    """`block`'s weights by the names `numpy_block` reads."""
    layers = {
        "qkv": block.qkv_dense,
        "attn_out": block.attention_output_dense,
        "inter": block.intermediate_dense,
        "out": block.output_dense,
    }
    weights = {}
    for name, dense in layers.items():
        weights[f"{name}_kernel"], weights[f"{name}_bias"] = dense.get_weights()
    for name, layer_norm in (
        ("ln1", block.attention_layer_norm),
        ("ln2", block.output_layer_norm),
    ):
        weights[f"{name}_gamma"], weights[f"{name}_beta"] = (
            layer_norm.get_weights()
        )
    return weights
