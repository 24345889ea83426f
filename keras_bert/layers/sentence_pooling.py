"""One vector per sentence from its token vectors: cls, mean or max."""

import keras
from keras import ops

# The poolings `SentencePooling` computes, as sentence-transformers'
# `Pooling` module names them (`pooling_mode_<name>...` in its config).
POOLING_MODES = ("cls", "mean", "max")


def check_pooling(pooling):
    """Raises unless `pooling` is one of `POOLING_MODES`."""
    if pooling not in POOLING_MODES:
        raise ValueError(
            "Received an invalid value for argument `pooling`, expected one "
            f"of {', '.join(repr(m) for m in POOLING_MODES)}. Received: "
            f"pooling={pooling!r}"
        )


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePooling(keras.layers.Layer):
    """Pools a sentence's token vectors into one vector, optionally unit.

    What sentence-transformers' `Pooling` (and `Normalize`) modules compute
    on a right-padded batch:

    - `"cls"`: the first token's vector (`[CLS]`);
    - `"mean"`: the mean over the real tokens (`padding_mask == 1`); a row
      without any real token divides by 1e-9, as sentence-transformers
      clamps the count, and gives zeros;
    - `"max"`: the element-wise maximum over the real tokens (padding
      counts as `-inf`).

    With `normalize=True` the result is divided by its L2 norm (at least
    1e-12, as `torch.nn.functional.normalize`), so a dot product of two
    outputs is their cosine. The result is float32 under any dtype policy:
    pooling and the norm run in float32.

    Args:
        pooling: str. `"cls"`, `"mean"` or `"max"`. Defaults to `"mean"`.
        normalize: bool. L2-normalise each vector. Defaults to `False`.
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        sequence_output: float tensor `(batch_size, sequence_length,
            hidden_dim)`, the token vectors.
        padding_mask: int or bool tensor `(batch_size, sequence_length)`,
            1 for a real token.

    Returns a float32 tensor `(batch_size, hidden_dim)`.

    Example:
    ```python
    tokens = np.array([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])
    mask = np.array([[1, 1, 0]])
    keras_bert.layers.SentencePooling("mean")(tokens, mask)  # [[2., 3.]]
    keras_bert.layers.SentencePooling("max")(tokens, mask)  # [[3., 4.]]
    keras_bert.layers.SentencePooling("cls", normalize=True)(tokens, mask)
    # [[0.447, 0.894]]
    ```
    """

    def __init__(self, pooling="mean", normalize=False, **kwargs):
        check_pooling(pooling)
        if not isinstance(normalize, bool):
            raise ValueError(
                "Received an invalid value for argument `normalize`, "
                f"expected True or False. Received: normalize={normalize!r}"
            )
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.pooling = pooling
        self.normalize = normalize
        self.supports_masking = False

    def call(self, sequence_output, padding_mask):
        tokens = ops.cast(sequence_output, "float32")
        mask = ops.cast(padding_mask, "float32")[:, :, None]  # (b, seq, 1)
        if self.pooling == "cls":
            pooled = tokens[:, 0, :]
        elif self.pooling == "mean":
            count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # (b, 1)
            pooled = ops.sum(tokens * mask, axis=1) / count
        else:
            pooled = ops.max(ops.where(mask > 0, tokens, float("-inf")), 1)
        if self.normalize:
            norm = ops.sqrt(ops.sum(ops.square(pooled), -1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return pooled

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"pooling": self.pooling, "normalize": self.normalize})
        return config
