"""Pre-training losses that mean the same on one device and on many."""

import keras
import tensorflow as tf
from keras import ops

# The label of a position that has none: [CLS], [SEP], padding and the
# sub-tokens after a word's first. As Hugging Face's -100.
IGNORED_LABEL = -100


@keras.saving.register_keras_serializable(package="keras_bert")
class GlobalBatchCrossEntropy(keras.losses.Loss):
    """Sparse cross-entropy from logits, averaged over the *global* batch.

    Labels equal to `ignore_class` are left out; the others' losses are
    summed and divided by their number. Under a `tf.distribute` strategy
    Keras would divide each replica's sum by that replica's own count and
    average the replicas. That differs from one device whenever replicas
    hold different numbers of counted labels: masked tokens per replica
    vary, and the last evaluation batch can leave replicas short or empty.
    Here the sum and the count are first added up over the replicas:

    - gradients are those of the global mean (each replica's part is its
      own sum over the global count), so training gives one device's
      weights for the same global batch;
    - the value each replica reports is the global mean over the number
      of replicas, so Keras' loss trackers (which weight replicas by
      their examples, or equally) give one device's numbers in
      `fit` and `evaluate`, even for uneven batches.

    On one replica it is the plain mean over counted labels.

    Args:
        ignore_class: int or `None`. A label that does not count (`0`,
            BERT's `[PAD]`, for unused masked-LM slots). Defaults to `None`.
        name: str. Defaults to `"global_batch_cross_entropy"`.

    Example:
    ```python
    loss = GlobalBatchCrossEntropy(ignore_class=0)
    labels = np.array([[3, 0]])  # the second slot is padding
    logits = np.zeros((1, 2, 5))
    float(loss(labels, logits))  # log(5) = 1.609...
    ```
    """

    def __init__(self, ignore_class=None, name="global_batch_cross_entropy"):
        # "sum" of the scalar `call` returns: Keras adds no averaging.
        super().__init__(name=name, reduction="sum", dtype="float32")
        self.ignore_class = ignore_class

    def call(self, y_true, y_pred):
        y_true = ops.convert_to_tensor(y_true)
        if self.ignore_class is None:
            counted = ops.ones_like(y_true, dtype="float32")
            labels = y_true
        else:
            counted = ops.cast(
                ops.not_equal(y_true, self.ignore_class), "float32"
            )
            labels = ops.where(ops.cast(counted, "bool"), y_true, 0)
        losses = keras.losses.sparse_categorical_crossentropy(
            labels, ops.cast(y_pred, "float32"), from_logits=True
        )
        local_sum = ops.sum(losses * counted)
        local_count = ops.sum(counted)
        context = tf.distribute.get_replica_context()
        replicas = context.num_replicas_in_sync if context else 1
        if replicas == 1:
            return ops.divide_no_nan(local_sum, local_count)
        global_sum, global_count = context.all_reduce(
            tf.distribute.ReduceOp.SUM,
            [tf.stop_gradient(local_sum), local_count],
        )
        part = ops.divide_no_nan(local_sum, global_count)
        report = ops.divide_no_nan(global_sum, global_count) / replicas
        # The value of `report`, the gradient of `part`.
        return part + tf.stop_gradient(report - part)

    def get_config(self):
        return {"ignore_class": self.ignore_class, "name": self.name}


def pretraining_losses():
    """`BertMaskedLM.compile`'s losses, averaged over the global batch.

    The same objective as `BertMaskedLM`'s default (masked-LM
    cross-entropy over real prediction slots, plus next-sentence
    cross-entropy), computed with `GlobalBatchCrossEntropy` so that any
    number of replicas trains and evaluates like one device.

    Example:
    ```python
    model.compile(optimizer=optimizer, loss=pretraining_losses())
    ```
    """
    return {
        "mlm_logits": GlobalBatchCrossEntropy(ignore_class=0, name="mlm_loss"),
        "nsp_logits": GlobalBatchCrossEntropy(name="nsp_loss"),
    }
