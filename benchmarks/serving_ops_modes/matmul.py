"""benchmarks/serving_ops.py --matmul: the int8 matmul choices against
float32."""

import os
import time

from benchmarks import common


def profile_matmul():
    """--matmul: the int8 matmul choices against float32, a table."""
    import numpy as np
    import tensorflow as tf
    from keras import ops

    from keras_bert.layers.int8_matmul import column_sums
    from keras_bert.layers.int8_matmul import int8_matmul
    from keras_bert.layers.int8_matmul import int8_matmul_supported
    from keras_bert.serving.cpu import this_cpu

    # Without oneDNN the oneDNN int8 kernel answers nothing: its column is
    # "-", and Keras' own int8 is the int8 that runs (the serving plan
    # weighs it against float32 there).
    onednn_int8 = int8_matmul_supported()
    print(f"{common.machine_description()}; load {os.getloadavg()[0]:.1f}")
    print(f"CPU as the serving plan reads it: {this_cpu().description}")
    print(
        "| (rows, in) @ (in, out) | float32 ms | Keras int8 | oneDNN int8 "
        "| dequantized | float32 time / oneDNN int8 time "
        "| float32 time / Keras int8 time |\n"
        "|---|---:|---:|---:|---:|---:|---:|"
    )
    rng = np.random.default_rng(0)
    for input_dim, units in ((384, 1152), (384, 1536), (1536, 384)):
        weights = rng.normal(0, 0.05, (input_dim, units)).astype("float32")
        scale = (127.0 / np.abs(weights).max(axis=0)).astype("float32")
        kernel = tf.constant(np.round(weights * scale).astype("int8"))
        scale, sums = tf.constant(scale), column_sums(kernel)
        weights = tf.constant(weights)

        def keras_int8(x):
            # What Keras' Dense._int8_call computes at inference.
            x_max = tf.reduce_max(tf.abs(x), axis=-1, keepdims=True)
            x_scale = 127.0 / tf.maximum(x_max, 1e-7)
            product = ops.matmul(
                tf.cast(tf.round(x * x_scale), tf.int8), kernel
            )
            return tf.cast(product, tf.float32) / (x_scale * scale)

        functions = [
            tf.function(lambda x: tf.matmul(x, weights)),
            tf.function(keras_int8),
            tf.function(lambda x: int8_matmul(x, kernel, scale, sums))
            if onednn_int8
            else None,
            tf.function(
                lambda x: tf.matmul(x, tf.cast(kernel, tf.float32) / scale)
            ),
        ]
        for rows in (128, 4096):
            x = tf.constant(rng.normal(size=(rows, input_dim)), tf.float32)
            times = [[] for _ in functions]
            for function in functions:  # traces
                if function is not None:
                    function(x)
            for _ in range(15):
                for function, spent in zip(functions, times):
                    if function is None:
                        continue
                    start = time.perf_counter()
                    function(x).numpy()
                    spent.append(time.perf_counter() - start)
            ms = [1000 * np.median(t) if t else None for t in times]
            cells = ["-" if m is None else f"{m:.2f}" for m in ms]
            onednn = "-" if ms[2] is None else f"{ms[0] / ms[2]:.2f}"
            print(
                f"| ({rows}, {input_dim}) @ ({input_dim}, {units}) | "
                + " | ".join(cells)
                + f" | {onednn} | {ms[0] / ms[1]:.2f} |",
                flush=True,
            )
