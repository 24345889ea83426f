"""LayerNorm with a hand-written gradient."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class ClosedFormLayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` with a hand-written gradient.

    In training, on the TensorFlow backend, normalising over the last axis
    with a scale and an offset (BERT's only use), the forward pass is
    `(x - mean) * rsqrt(var + eps) * gamma + beta` (Keras computes the same
    as `x * inv + (beta - mean * inv)`, so outputs agree to float rounding),
    and keeps `x_hat` for the backward pass, which is the closed form

    ```
    dx = rsqrt(var + eps) * (g - mean(g) - x_hat * mean(g * x_hat)),
    g = dy * gamma,  dgamma = sum(dy * x_hat),  dbeta = sum(dy)
    ```

    instead of TensorFlow's differentiation of every forward op (means,
    variance, broadcasts), which reads and writes the activations many more
    times (with the closed-form GELU, the `keras_layers` rows of
    `benchmarks/RESULTS.md`' ablation sections; the package's layers use it
    under the optimisation name `"closed_form_layer_norm"`, see
    `keras_bert.layers.optimizations`). Outside training (a falsy
    `training`, as at inference), other settings and other backends, it is
    Keras' own layer: at inference nothing needs the gradient, and
    TensorFlow's CPU graph rewrites recognise Keras' graph. Like Keras, it
    computes in at least float32.

    Args: those of `keras.layers.LayerNormalization`.

    Call arguments:
        inputs: a tensor of any shape; normalised over `axis`.
        training: bool. Selects the hand-written gradient (see above).

    Returns a tensor of the input's shape.

    Example:
    ```python
    layer = keras_bert.layers.ClosedFormLayerNorm(epsilon=1e-12)
    y = layer(np.random.rand(2, 3, 8).astype("float32"))  # (2, 3, 8)
    ```
    """

    def call(self, inputs, training=None):
        if not training:
            # Nothing to differentiate (in all likelihood): Keras' own graph,
            # which TensorFlow's CPU graph rewrites recognise.
            return super().call(inputs)
        axis = self.axis if isinstance(self.axis, list) else [self.axis]
        last_axis = axis == [-1] or axis == [len(inputs.shape) - 1]
        if (
            keras.backend.backend() != "tensorflow"
            or not (last_axis and self.center and self.scale)
            or self.rms_scaling
        ):
            return super().call(inputs)
        import tensorflow as tf

        outputs = _layer_norm(
            inputs,
            tf.convert_to_tensor(self.gamma.value),
            tf.convert_to_tensor(self.beta.value),
            self.epsilon,
        )
        return ops.cast(outputs, self.compute_dtype)


def _layer_norm(x, gamma, beta, epsilon):
    """LayerNorm over the last axis with the closed-form gradient.
    TensorFlow only."""
    import tensorflow as tf

    input_dtype = x.dtype
    dtype = keras.backend.result_type(input_dtype, "float32")

    @tf.custom_gradient
    def layer_norm(x, gamma, beta):
        x = tf.cast(x, dtype)
        gamma = tf.cast(gamma, dtype)
        beta = tf.cast(beta, dtype)
        x_hat, inverse_std = normalize(x, epsilon)
        outputs = x_hat * gamma + beta

        def grad(upstream):
            dx, d_gamma, d_beta = normalize_gradient(
                tf.cast(upstream, dtype), x_hat, inverse_std, gamma
            )
            return tf.cast(dx, input_dtype), d_gamma, d_beta

        return tf.cast(outputs, input_dtype), grad

    return layer_norm(x, gamma, beta)


def normalize(x, epsilon):
    """`(x_hat, rsqrt(var + epsilon))` of `x` over its last axis
    (TensorFlow, in `x`'s dtype)."""
    import tensorflow as tf

    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)
    inverse_std = tf.math.rsqrt(variance + epsilon)
    return centered * inverse_std, inverse_std


def normalize_gradient(upstream, x_hat, inverse_std, gamma):
    """The closed-form LayerNorm gradient: `(dx, d_gamma, d_beta)` of
    `x_hat * gamma + beta`, from `normalize`'s outputs (TensorFlow)."""
    import tensorflow as tf

    batch_axes = list(range(len(x_hat.shape) - 1))
    d_gamma = tf.reduce_sum(upstream * x_hat, axis=batch_axes)
    d_beta = tf.reduce_sum(upstream, axis=batch_axes)
    g = upstream * gamma
    dx = inverse_std * (
        g
        - tf.reduce_mean(g, axis=-1, keepdims=True)
        - x_hat * tf.reduce_mean(g * x_hat, axis=-1, keepdims=True)
    )
    return dx, d_gamma, d_beta
