"""Pre-training losses that mean the same on one device and on many."""

import contextlib
import threading

import keras
import tensorflow as tf
from keras import ops

# The label of a position that has none: `[CLS]`, `[SEP]`, padding and the
# sub-tokens after a word's first (token classification). As Hugging Face's
# `-100`; `GlobalBatchCrossEntropy(ignore_class=IGNORED_LABEL)` leaves it out.
IGNORED_LABEL = -100

# Per thread (MirroredStrategy traces each replica's step in its own):
# `stack`, the micro-batches the accumulating step is computing the loss
# of; `batch_labels`, the whole batch's labels of the loss being computed.
_accumulation = threading.local()


@contextlib.contextmanager
def micro_batch_of(batch_labels, micro_batch_labels):
    """While a micro-batch's loss is computed: the batch it belongs to.

    Gradient accumulation (`keras_bert.training.gradient_accumulation`)
    weights each micro-batch's loss by its share of the batch's examples,
    which gives the batch's mean over examples. Inside this context a
    `GlobalBatchCrossEntropy` that receives a leaf of `micro_batch_labels`
    returns what makes that weighting give the whole batch's mean over
    counted labels instead: its micro-batch's sum over the count of the
    whole batch (the matching leaf of `batch_labels`, on all replicas),
    divided by the micro-batch's share of the examples.

    Args:
        batch_labels: the labels (`y`) of the whole batch, any structure.
        micro_batch_labels: the micro-batch's slices of them, the same
            structure.
    """
    pairs = list(
        zip(
            keras.tree.flatten(micro_batch_labels),
            keras.tree.flatten(batch_labels),
        )
    )
    stack = _accumulation.__dict__.setdefault("stack", [])
    stack.append(pairs)
    try:
        yield
    finally:
        stack.pop()


def _batch_labels_of(y_true):
    """The whole batch's labels that `y_true` is a micro-batch of, `None`
    outside gradient accumulation; raises for labels it does not know."""
    stack = getattr(_accumulation, "stack", None)
    if not stack:
        return None
    for micro_batch, batch in stack[-1]:
        if micro_batch is y_true:
            return batch
    raise ValueError(
        "`GlobalBatchCrossEntropy` under gradient accumulation received "
        "labels that are not one of the micro-batch's `y` (the model's "
        "`compute_loss` changed them?): it cannot find the whole batch's "
        "count of labels, and the gradients would be those of per "
        "micro-batch means. Pass `y` unchanged to the loss, or compile "
        "with `gradient_accumulation_steps=1`."
    )


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

    Under gradient accumulation (`compile(gradient_accumulation_steps=K)`)
    each micro-batch's part is its sum over the count of the *whole*
    batch's labels (see `micro_batch_of`), so the accumulated gradient and
    the loss `fit` reports are the whole batch's.

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

    def __call__(self, y_true, y_pred, sample_weight=None):
        # Found before `Loss.__call__` converts the labels to new tensors.
        _accumulation.batch_labels = _batch_labels_of(y_true)
        try:
            return super().__call__(y_true, y_pred, sample_weight)
        finally:
            _accumulation.batch_labels = None

    def counted(self, y_true):
        """1.0 where a label counts, 0.0 where it is `ignore_class`."""
        y_true = ops.convert_to_tensor(y_true)
        if self.ignore_class is None:
            return ops.ones_like(y_true, dtype="float32")
        return ops.cast(ops.not_equal(y_true, self.ignore_class), "float32")

    def call(self, y_true, y_pred):
        y_true = ops.convert_to_tensor(y_true)
        counted = self.counted(y_true)
        labels = y_true
        if self.ignore_class is not None:
            labels = ops.where(ops.cast(counted, "bool"), y_true, 0)
        losses = keras.losses.sparse_categorical_crossentropy(
            labels, ops.cast(y_pred, "float32"), from_logits=True
        )
        local_sum = ops.sum(losses * counted)
        batch_labels = getattr(_accumulation, "batch_labels", None)
        if batch_labels is None:
            local_count, share = ops.sum(counted), None
        else:
            # A micro-batch: the whole batch's count; the accumulating step
            # weights the result by the micro-batch's share of examples.
            batch_labels = ops.convert_to_tensor(batch_labels)
            local_count = ops.sum(self.counted(batch_labels))
            share = ops.divide_no_nan(
                ops.cast(ops.shape(y_true)[0], "float32"),
                ops.cast(ops.shape(batch_labels)[0], "float32"),
            )
        context = tf.distribute.get_replica_context()
        replicas = context.num_replicas_in_sync if context else 1
        if replicas == 1:
            if share is not None:
                local_count = local_count * share
            return ops.divide_no_nan(local_sum, local_count)
        global_sum, global_count = context.all_reduce(
            tf.distribute.ReduceOp.SUM,
            [tf.stop_gradient(local_sum), local_count],
        )
        if share is not None:
            global_count = global_count * share
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
