"""The real windows of a batch of documents, as rows of one batch."""

import keras
from keras import ops

from keras_bert.text.bert_preprocessor import BACKBONE_INPUTS


@keras.saving.register_keras_serializable(package="keras_bert")
class WindowRows(keras.layers.Layer):
    """Flattens documents' windows into the rows a backbone reads.

    A batch of documents read in windows (`keras_bert.text.
    document_windows.DocumentWindows`) is `(batch_size, windows,
    sequence_length)`, each document padded with windows of padding only
    up to the batch's most. This layer keeps the real windows (those whose
    `[CLS]` is not padding) as rows `(num_real_windows, sequence_length)`,
    so the backbone runs on no padding window, and says which document
    each row belongs to, for `WindowAggregation`. Its output size depends
    on the data, so it does not compile with XLA.

    Args:
        **kwargs: other keyword arguments passed to `keras.layers.Layer`.

    Call arguments:
        inputs: dict of int tensors `token_ids`, `segment_ids`,
            `padding_mask` `(batch_size, windows, sequence_length)`.

    Returns:
        `(rows, document)`: the dict of the same three, int32
        `(num_real_windows, sequence_length)`, in document order, and
        int32 `(num_real_windows,)`, each row's document.

    Example:
    ```python
    inputs = {
        "token_ids": np.array([[[2, 5, 3], [0, 0, 0]], [[2, 6, 3], [2, 7, 3]]]),
        "segment_ids": np.zeros((2, 2, 3), "int32"),
        "padding_mask": np.array([[[1, 1, 1], [0, 0, 0]],
                                  [[1, 1, 1], [1, 1, 1]]]),
    }
    rows, document = keras_bert.layers.WindowRows()(inputs)
    rows["token_ids"]  # [[2, 5, 3], [2, 6, 3], [2, 7, 3]]
    document  # [0, 1, 1]
    ```
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        self.supports_jit = False

    def call(self, inputs):
        mask = inputs["padding_mask"]
        windows = ops.shape(mask)[1]
        length = ops.shape(mask)[2]
        real = ops.reshape(ops.not_equal(mask[:, :, 0], 0), (-1,))
        index = ops.cast(ops.nonzero(real)[0], "int32")
        rows = {
            name: ops.take(
                ops.reshape(ops.cast(inputs[name], "int32"), (-1, length)),
                index,
                axis=0,
            )
            for name in BACKBONE_INPUTS
        }
        return rows, index // ops.cast(windows, "int32")

    def compute_output_spec(self, inputs):
        length = inputs["padding_mask"].shape[2]
        rows = {
            name: keras.KerasTensor((None, length), "int32")
            for name in BACKBONE_INPUTS
        }
        return rows, keras.KerasTensor((None,), "int32")
