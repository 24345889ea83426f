"""Writes `head_parallel_block.keras` and `.npz`: a functional model around
a `keras_bert>HeadParallelBlock` (the layer the streams were before they
became the block's `streams` implementation), its inputs and outputs, and
the outputs of the block it was made from. Run at commit 4220c6e, in
this folder:

    PYTHONPATH=../../.. python make_head_parallel_block.py head_parallel_block
"""

import sys

import keras
import numpy as np

from keras_bert.layers import HeadParallelBlock
from keras_bert.layers import TransformerEncoderBlock

block = TransformerEncoderBlock(num_heads=3, intermediate_dim=20)
block(np.zeros((1, 2, 12), "float32"))
rng = np.random.default_rng(1)
block.set_weights(
    [rng.normal(0, 0.3, w.shape).astype("float32") for w in block.get_weights()]
)
layer = HeadParallelBlock.from_block(block, 2)
inputs = keras.Input((None, 12))
mask = keras.Input((None,), dtype="int32")
model = keras.Model([inputs, mask], layer(inputs, padding_mask=mask))
x = np.random.default_rng(0).normal(size=(3, 7, 12)).astype("float32")
m = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5], "int32")
model.save(sys.argv[1] + ".keras")
np.savez(
    sys.argv[1] + ".npz",
    inputs=x,
    padding_mask=m,
    outputs=np.asarray(model([x, m])),
    block_outputs=np.asarray(block(x, padding_mask=m)),
)
