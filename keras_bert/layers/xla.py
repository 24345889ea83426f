"""XLA-compiled functions for the package's fused training ops."""

import functools


@functools.cache
def compiled(function):
    """`function` as an XLA-compiled `tf.function` (without autograph).

    Created on first use, so that importing the package builds nothing, and
    shared by every caller; TensorFlow traces and compiles it once per input
    signature.

    Example:
    ```python
    double = keras_bert.layers.xla.compiled(lambda x: 2 * x)
    double(tf.ones([3]))  # [2., 2., 2.]
    ```
    """
    import tensorflow as tf

    return tf.function(function, jit_compile=True, autograph=False)
