"""`keras.layers.Dense` whose int8 inference runs on oneDNN's int8 matmul."""

import keras
from keras import ops

from keras_bert.layers.int8_matmul import column_sums
from keras_bert.layers.int8_matmul import int8_matmul
from keras_bert.layers.int8_matmul import int8_matmul_supported


@keras.saving.register_keras_serializable(package="keras_bert")
class Int8Dense(keras.layers.Dense):
    """`keras.layers.Dense` with a fast int8 inference on TensorFlow.

    int8 is Keras' own: `quantize("int8")` (what `model.quantize("int8")` calls;
    Keras' own `Dense.quantize` refuses subclasses) stores the kernel as int8
    with one scale per output column (`kernel_scale`), and the layer's dtype
    policy becomes `int8_from_<policy>`, so the layer saved alone in a `.keras`
    file reloads quantized. What differs is inference on TensorFlow: Keras
    multiplies int8 by int8 with `BatchMatMulV3`, slower than float32 (section
    `int8_matmul_eigen` of `benchmarks/RESULTS.md`); this layer uses
    TensorFlow's oneDNN int8 kernel instead (`keras_bert.layers.int8_matmul`),
    each input row quantized over its own largest magnitude. It keeps
    `kernel_column_sums` (saved with the kernel) for that kernel's input shift.
    Training, LoRA on a quantized layer and a `quantization_config` without an
    input quantizer (weights only) run Keras' own int8 call. Without `quantize`
    it is `Dense`.

    `keras_bert.layers.LoraDense`, the encoder block's dense layer, is one.

    Args:
        units: int. Output width.
        **kwargs: the other arguments of `keras.layers.Dense`.

    Example:
    ```python
    dense = keras_bert.layers.Int8Dense(4)
    dense.build((None, 8))
    dense.quantize("int8")
    y = dense(np.random.rand(2, 8).astype("float32"))  # (2, 4), int8 matmul
    ```
    """

    def quantize(self, mode=None, type_check=True, config=None):
        """Keras' `Dense.quantize`, for `"int8"` only.

        Args:
            mode: str. `"int8"`; any other mode raises
                `NotImplementedError` (which `model.quantize` turns into a
                warning and skips the layer).
            type_check: bool. Unused: Keras' check refuses subclasses.
            config: `keras.quantizers.QuantizationConfig` or `None`.
        """
        if mode != "int8":
            raise NotImplementedError(
                f"{type(self).__name__} {self.name!r} quantizes to 'int8' "
                f"only; received mode={mode!r}. Use mode='int8'."
            )
        super().quantize(mode, type_check=False, config=config)
        self.kernel_column_sums.assign(column_sums(self._kernel))

    def _int8_build(self, kernel_shape, config=None):
        super()._int8_build(kernel_shape, config)
        self.kernel_column_sums = self.add_weight(
            name="kernel_column_sums",
            shape=(self.units,),
            initializer="zeros",
            trainable=False,
        )

    @property
    def variable_serialization_spec(self):
        spec = dict(super().variable_serialization_spec)
        spec["int8"] = spec["int8"] + ["kernel_column_sums"]
        return spec

    def _onednn_int8(self, training=None):
        """Whether the int8 kernel's inference runs on oneDNN."""
        return (
            self.quantization_mode == "int8"
            and not training
            and not self.lora_enabled
            # Keras quantizes the inputs too unless a config said not to
            # (weight-only): this path quantizes them its own way.
            and isinstance(
                getattr(self, "inputs_quantizer", None),
                keras.quantizers.AbsMaxQuantizer,
            )
            and keras.backend.backend() == "tensorflow"
            # Without oneDNN the kernel gives no output: Keras' own call.
            and int8_matmul_supported()
        )

    def _int8_call(self, inputs, training=None):
        if not self._onednn_int8(training):
            return super()._int8_call(inputs, training=training)
        x = ops.cast(
            self._int8_matmul(inputs, 0, self.units), self.compute_dtype
        )
        if self.bias is not None:
            x = ops.add(x, self.bias)
        if self.activation is not None:
            x = self.activation(x)
        return x

    def _int8_matmul(self, inputs, start, stop):
        return int8_matmul(
            ops.cast(inputs, "float32"),
            self._kernel[:, start:stop],
            self.kernel_scale[start:stop],
            self.kernel_column_sums[start:stop],
        )

    def int8_columns(self, inputs, start, stop):
        """`self(inputs)[..., start:stop]` of a quantized layer at
        inference, computing those columns only where the oneDNN kernel
        runs (the encoder block's query rows read the query columns of its
        fused q|k|v kernel, `block_pieces.dense_columns`).

        Args:
            inputs: tensor `(..., input_dim)`.
            start: int. First output column.
            stop: int. One past the last output column.

        Returns a tensor `(..., stop - start)`.
        """
        if not self._onednn_int8():
            # Keras' own quantized call, then the columns.
            return self(inputs)[..., start:stop]
        x = ops.cast(self._int8_matmul(inputs, start, stop), self.compute_dtype)
        if self.bias is not None:
            x = x + ops.cast(self.bias, self.compute_dtype)[start:stop]
        if self.activation is not None:
            x = self.activation(x)
        return x
