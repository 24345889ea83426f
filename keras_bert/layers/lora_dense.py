"""`keras.layers.Dense` whose weight files keep its LoRA weights."""

import keras
from keras import ops

from keras_bert.keras_workarounds import require_keras_internals
from keras_bert.layers.int8_dense import Int8Dense


@keras.saving.register_keras_serializable(package="keras_bert")
class LoraDense(Int8Dense):
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

    int8 inference runs on TensorFlow's oneDNN int8 kernel
    (`keras_bert.layers.Int8Dense`, which this layer is).

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

    def _lora_variables(self):
        """The variables a LoRA weight file holds, in its order."""
        variables = [self.base_kernel]
        if self.bias is not None:
            variables.append(self.bias)
        if not self.lora_enabled:
            return variables
        return variables + [self.lora_kernel_a, self.lora_kernel_b]

    def merged_kernel(self, read=ops.convert_to_tensor):
        """The kernel with the LoRA update added, in the kernel's dtype.

        Unlike `kernel`, not cast to the compute dtype: under a mixed
        policy this is the float32 value a plain `Dense` would hold.

        Args:
            read: function, variable → tensor. How the variables are read
                (`stream_layout` reads them so that a traced function does
                not record it). Defaults to `ops.convert_to_tensor`.
        """
        kernel = read(self.base_kernel)
        if not self.lora_enabled:
            return kernel
        update = ops.matmul(read(self.lora_kernel_a), read(self.lora_kernel_b))
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
