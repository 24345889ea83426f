"""`keras.layers.Dense` whose weight files keep its LoRA weights."""

import keras
from keras import ops

from keras_bert.keras_workarounds import require_keras_internals
from keras_bert.layers.int8_matmul import column_sums
from keras_bert.layers.int8_matmul import int8_matmul


@keras.saving.register_keras_serializable(package="keras_bert")
class LoraDense(keras.layers.Dense):
    """`keras.layers.Dense`, saving its LoRA weights as they are.

    LoRA is Keras' own: `enable_lora(rank)` (unchanged) freezes the kernel
    and adds two trainable float32 matrices, `lora_kernel_a`
    `(input_dim, rank)` (random) and `lora_kernel_b` `(rank, units)`
    (zeros); `kernel` then reads `kernel + (lora_alpha / rank) *
    lora_kernel_a @ lora_kernel_b`, so every code path that reads `kernel`
    (the encoder block's fused and query-positions paths too) sees the
    update.

    What differs is saving. Keras 3.15's `Dense` writes the *merged*
    kernel and, on loading, sets both LoRA matrices to zero: the reloaded
    layer computes the same, but its LoRA can no longer learn (with both
    zero, neither gets a gradient), so a run resumed from a backup or a
    reloaded `.keras` file would train nothing. This layer writes the
    frozen kernel, the bias and the two LoRA matrices apart, and loads them
    back as they were. Without LoRA its weight files are `Dense`'s.
    Loading plain `Dense` weights into a layer with LoRA enabled sets the
    kernel and bias and restarts LoRA at zero (`lora_kernel_b = 0`).

    int8 is Keras' too: `quantize("int8")` (what `model.quantize("int8")`
    calls; Keras' own `Dense.quantize` refuses subclasses) stores the
    kernel as int8 with one scale per output column (`kernel_scale`),
    and the layer's dtype policy becomes `int8_from_<policy>`, so the
    layer saved alone in a `.keras` file reloads quantized (a whole
    `BertBackbone` does not: its config rebuilds float layers; export it
    instead). What differs is inference on TensorFlow: Keras multiplies
    int8 by int8 with `BatchMatMulV3`, 4 to 5.4x slower than float32 on
    a 2-core AMD EPYC; this layer uses TensorFlow's oneDNN int8 kernel
    instead (`layers.int8_matmul`: 1.8 to 3.0x faster than float32 at
    4096 rows there, but 0.7 to 1.0x at 128 rows; `python
    benchmarks/int8.py --matmul_only`), each input row quantized over its
    own largest magnitude. It keeps `kernel_column_sums` (saved with the
    kernel) for that kernel's input shift. Training, LoRA on a quantized
    layer and a `quantization_config` without an input quantizer (weights
    only) run Keras' own int8 call.

    Args:
        units: int. Output width.
        **kwargs: the other arguments of `keras.layers.Dense`.

    Example:
    ```python
    dense = keras_bert.layers.LoraDense(4)
    dense.build((None, 8))
    dense.enable_lora(2)
    [w.name for w in dense.trainable_weights]
    # ['bias', 'lora_kernel_a', 'lora_kernel_b'] (Keras freezes the kernel
    # only; `BertBackbone.enable_lora` freezes the biases too)
    ```

    References:
        - [Hu et al., 2021](https://arxiv.org/abs/2106.09685)
    """

    @property
    def base_kernel(self):
        """The kernel variable itself, frozen under LoRA (`kernel` adds the
        LoRA update to it)."""
        require_keras_internals(self, ["_kernel"])
        return self._kernel

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
                f"LoraDense {self.name!r} quantizes to 'int8' only; "
                f"received mode={mode!r}. Use mode='int8'."
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
        """Whether the int8 matmul runs on `layers.int8_matmul`."""
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

    def call_columns(self, inputs, start, stop):
        """`self(inputs)[..., start:stop]`, computing those columns only.

        The encoder block's query-positions path multiplies different rows
        by different column blocks of its fused q|k|v kernel; this works
        for a float and an int8 kernel alike.

        Args:
            inputs: tensor `(..., input_dim)`.
            start: int. First output column.
            stop: int. One past the last output column.

        Returns a tensor `(..., stop - start)`.

        Example:
        ```python
        dense = keras_bert.layers.LoraDense(6)
        x = np.random.rand(2, 4).astype("float32")
        dense(x)[:, 2:4]  # equals dense.call_columns(x, 2, 4)
        ```
        """
        if self._onednn_int8():
            x = ops.cast(
                self._int8_matmul(inputs, start, stop), self.compute_dtype
            )
        elif self.quantization_mode is None:
            kernel = ops.cast(self.kernel, self.compute_dtype)
            x = ops.matmul(inputs, kernel[:, start:stop])
        else:
            # Keras' own quantized call, then the columns.
            return self(inputs)[..., start:stop]
        if self.bias is not None:
            x = x + ops.cast(self.bias, self.compute_dtype)[start:stop]
        if self.activation is not None:
            x = self.activation(x)
        return x

    def _lora_variables(self):
        """The variables a LoRA weight file holds, in its order."""
        variables = [self.base_kernel]
        if self.bias is not None:
            variables.append(self.bias)
        if not self.lora_enabled:
            return variables
        return variables + [self.lora_kernel_a, self.lora_kernel_b]

    def merged_kernel(self):
        """The kernel with the LoRA update added, in the kernel's dtype.

        Unlike `kernel`, not cast to the compute dtype: under a mixed
        policy this is the float32 value a plain `Dense` would hold.
        """
        kernel = self.base_kernel
        if not self.lora_enabled:
            return ops.convert_to_tensor(kernel)
        update = ops.matmul(self.lora_kernel_a, self.lora_kernel_b)
        scale = self.lora_alpha / self.lora_rank
        return ops.cast(kernel, "float32") + ops.cast(scale * update, "float32")

    def save_own_variables(self, store):
        if not (self.built and self.lora_enabled) or self.quantization_mode:
            return super().save_own_variables(store)
        for index, variable in enumerate(self._lora_variables()):
            store[str(index)] = variable

    def load_own_variables(self, store):
        saved = len(store.keys())
        plain = 2 if self.bias is not None else 1
        if self.quantization_mode or (saved == plain and not self.lora_enabled):
            return super().load_own_variables(store)
        if not self.lora_enabled:
            raise ValueError(
                f"The weights of layer {self.name!r} hold LoRA weights (rank "
                f"{store[str(plain)].shape[-1]}), but LoRA is not enabled on "
                "this model. Call `backbone.enable_lora(rank)` with the "
                "saved rank before loading, or build the model from the "
                "saved `.keras` file (its config enables LoRA)."
            )
        variables = self._lora_variables()
        if saved == len(variables):
            for index, variable in enumerate(variables):
                variable.assign(store[str(index)])
        elif saved == plain:
            # Weights saved without LoRA: they become the frozen weights,
            # and LoRA starts again from no update.
            for index, variable in enumerate(variables[:plain]):
                variable.assign(store[str(index)])
            self.lora_kernel_b.assign(ops.zeros(self.lora_kernel_b.shape))
        else:
            raise ValueError(
                f"Layer {self.name!r} expected {plain} (without LoRA) or "
                f"{len(variables)} (with LoRA) saved weights, found {saved}."
            )
