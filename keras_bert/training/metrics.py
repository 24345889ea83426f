"""Metrics for BERT pre-training."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMAccuracy(keras.metrics.SparseCategoricalAccuracy):
    """Accuracy over real masked-LM predictions only.

    Prediction slots whose label is `padding_label` (`0`, BERT's `[PAD]`, as
    the original data pipeline writes unused slots) are left out, so the
    accuracy is over the masked tokens only, whatever the padding.

    Args:
        padding_label: int. The label of unused prediction slots. Defaults
            to `0`.
        name: str. Defaults to `"mlm_accuracy"`.
        dtype: the metric's dtype.

    Example:
    ```python
    metric = keras_bert.training.MaskedLMAccuracy()
    metric.update_state([[5, 0]], [[[0, 0, 0, 0, 0, 9], [9, 0, 0, 0, 0, 0]]])
    metric.result()  # 1.0: the padded slot does not count
    ```
    """

    def __init__(self, padding_label=0, name="mlm_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.padding_label = padding_label

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        weight = ops.cast(ops.not_equal(y_true, self.padding_label), "float32")
        if sample_weight is not None:
            weight = weight * ops.cast(sample_weight, "float32")
        return super().update_state(y_true, y_pred, sample_weight=weight)

    def get_config(self):
        return {**super().get_config(), "padding_label": self.padding_label}
